"""The scatter of element blocks into the iteration matrix (flexmb/engine/block_scatter.py):
a free node's block of B_e is [[I, 0], [0, R]] exactly, and scatter_block's shortcut for it gives
the dense products' sums bit for bit."""

import numpy as np

import flexmb as fm
from flexmb.engine.assembly import Assembler
from flexmb.engine.block_scatter import _free_node_block, element_columns, scatter_block


def dense_scatter(E, Be, first, m, ne, pos, data):
    """The plain loops of B_eᵀ E B_e (every product, q ascending), in Python: the oracle."""
    H = np.zeros((6 * m, ne))
    for sd in range(m):
        r0 = 6 * sd
        for j in range(first[sd], first[sd + 1]):
            for i in range(6 * m):
                s = 0.0
                for q in range(6):
                    s += E[i, r0 + q] * Be[r0 + q, j]
                H[i, j] = s
    for sd in range(m):
        r0 = 6 * sd
        for r in range(first[sd], first[sd + 1]):
            for c in range(ne):
                p = pos[r * ne + c]
                if p >= 0:
                    s = 0.0
                    for q in range(6):
                        s += Be[r0 + q, r] * H[r0 + q, c]
                    data[p] += s


def free_columns(rng, ne_a):
    """B_e of an element whose node 0 has ``ne_a`` general columns and node 1 is a free node."""
    Be = np.zeros((12, ne_a + 6))
    Be[:6, :ne_a] = rng.normal(size=(6, ne_a))
    R = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    Be[6:9, ne_a:ne_a + 3] = np.eye(3)
    Be[9:12, ne_a + 3:] = R
    return Be, np.array([0, ne_a, ne_a + 6])


def test_free_node_shortcut_equals_the_dense_products_bit_for_bit():
    rng = np.random.default_rng(3)
    for ne_a in (1, 3, 6):
        Be, first = free_columns(rng, ne_a)
        ne = first[-1]
        E = rng.normal(size=(12, 12))
        E[2, 5] = -0.0  # a negative zero: the sums start at +0 in both
        pos = rng.permutation(ne * ne).astype(np.int64)
        pos[::7] = -1  # entries outside S are left out
        assert _free_node_block(Be, 6, first[1], 6)
        assert _free_node_block(Be, 0, 0, ne_a) == (ne_a == 6 and np.array_equal(Be[:6, :6], np.eye(6)))
        got, want = np.full(ne * ne, 0.5), np.full(ne * ne, 0.5)
        H = np.empty((12, ne))
        scatter_block(E, Be, H, first, 2, ne, pos, 0, got, np.empty(0), 0)
        dense_scatter(E, Be, first, 2, ne, pos, want)
        assert np.array_equal(got, want)
        assert np.array_equal(np.signbit(got), np.signbit(want))


def test_a_block_with_coupling_takes_the_general_products():
    """One translation-rotation entry off zero (round-off of another formula) is no free node's
    block: the general loops run and still equal the dense products."""
    rng = np.random.default_rng(4)
    Be, first = free_columns(rng, 6)
    Be[8, 10] = 2.8e-17
    assert not _free_node_block(Be, 6, first[1], 6)
    E = rng.normal(size=(12, 12))
    pos = np.arange(144, dtype=np.int64)
    got, want = np.zeros(144), np.zeros(144)
    scatter_block(E, Be, np.empty((12, 12)), first, 2, 12, pos, 0, got, np.empty(0), 0)
    dense_scatter(E, Be, first, 2, 12, pos, want)
    assert np.array_equal(got, want)
    Bf = Be.copy()
    Bf[8, 10] = 0.0
    moved = np.zeros(144)
    scatter_block(E, Bf, np.empty((12, 12)), first, 2, 12, pos, 0, moved, np.empty(0), 0)
    assert not np.array_equal(moved, got)  # the coupling entry does enter S


def test_free_nodes_of_a_moving_link_have_exact_identity_blocks():
    """After motion (node positions with round-off everywhere), every free node's columns of B_e
    are [[I, 0], [0, R_node]] exactly: S_v = x × S_w and S_w × x cancel in element_columns."""
    sec = fm.BeamSection(7e10, 2.7e10, 4e-4, 2e-7, 3e-7, 4e-7, 3000.0)
    mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    nodes = mb.add_flexible_link("link", (0.1, 0.2, 0.3), (1.3, 0.7, -0.4), 12, sec)
    mb.add_joint("pin", "revolute", "ground", nodes[0], axis=(0.0, 0.0, 1.0), u0=2.0)
    model = mb.compile()
    states = []
    fm.simulate(model, 0.02, 1e-3, output_every=20, callback=lambda st, ev: states.append(st.copy()))
    st = states[-1]
    assert st.t > 0.019
    asm = Assembler(model)
    ev = asm.evaluate(st)
    sc = asm.matrices.get(model.free_u).groups[0]
    Be = np.zeros((12, sc.max_ne))
    first = np.empty(3, dtype=np.int64)
    n_free = 0
    for e in range(sc.nodes.shape[0]):
        ne = element_columns(sc.nodes, e, sc.anc_ptr, sc.anc_coord, ev.kin.S, ev.kin.x, Be, first)
        for sd in range(2):
            f0, nc = first[sd], first[sd + 1] - first[sd]
            if nc == 6:
                node = sc.nodes[e, sd]
                block = Be[6 * sd:6 * sd + 6, f0:f0 + 6]
                assert np.array_equal(block[:3], np.hstack([np.eye(3), np.zeros((3, 3))]))
                assert np.array_equal(block[3:, :3], np.zeros((3, 3)))
                assert np.array_equal(block[3:, 3:], ev.kin.R[node])
                assert _free_node_block(Be, 6 * sd, f0, nc)
                n_free += 1
        assert ne == first[2]
    assert n_free == 2 * 12 - 1  # every node but the pinned one, counted once per element it ends
