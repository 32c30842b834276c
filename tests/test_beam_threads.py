"""The beams' passes and forward kinematics on several threads (elements/beam/kernels.py: residual, mass_forces,
add_element_matrices with ``threads`` > 1) give the one-thread results bit for bit: each element's
forces and matrix products are formed on its thread and added in element order afterwards. Checked
on the kernels with elements that share nodes (one thread per slice of elements, including slices
of one element and more threads than elements), on a model whose beams hang off a tree (B_e with
ancestor columns) and on whole runs, compiled and Python iterates; and ``threads_for`` follows
PARALLEL_MIN and numba's thread count."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from test_beam_compiled import _deformed_models, arrays, motion, random_state
from test_tree_run import _assert_same

import flexmb as fm
from flexmb.elements import FAMILIES
from flexmb.elements.beam import Beams, kernels
from flexmb.elements.beam.kernel_data import BeamResults, MatrixWeights, beam_arrays, scatter_maps
from flexmb.engine import kinematics, parallel
from flexmb.engine.assembly import Assembler
from flexmb.solvers.element_step import ElementStep

SECTION = fm.BeamSection(E=2.1e11, G=8.1e10, A=1e-4, Iy=1e-9, Iz=1e-9, J=2e-9, rho=7800.0)


def _chain(seed: int, n: int) -> dict:
    """random_state's elements joined into a chain: element e from node e to node e + 1 (each inner
    node shared by two elements), the nodes' poses and motions random."""
    s = random_state(seed, n)
    rng = np.random.default_rng(100 + seed)
    s["a"], s["b"] = np.arange(n), np.arange(1, n + 1)
    s["x"] = np.cumsum(np.concatenate([np.zeros((1, 3)), s["L0"][:, None] * s["C1"][:, :, 0]]), axis=0)
    s["x"] += 0.01 * rng.normal(size=s["x"].shape)
    s["R"] = s["R"][: n + 1].copy()
    s["V"], s["zeta"] = rng.normal(size=(n + 1, 6)), rng.normal(size=(n + 1, 6))
    return s


def _residual(s: dict, threads: int) -> list[np.ndarray]:
    n, N = len(s["L0"]), len(s["x"])
    bias = np.random.default_rng(5).normal(size=(N, 6))  # node forces the beams add to
    outs = [np.full((n, 3, 3), np.nan), np.full((n, 7), np.nan), np.full((n, 4), np.nan), np.full((n, 7), np.nan),
            np.full((n, 7, 12), np.nan), np.full(n, np.nan)]
    kernels.residual(arrays(s), motion(s), s["g"], 0.9, bias, BeamResults(*outs), threads)
    acc = np.random.default_rng(6).normal(size=(N, 6))
    mf = np.random.default_rng(7).normal(size=(N, 6))
    kernels.mass_forces(s["a"], s["b"], outs[0], *kernels.mass_pattern(s["Ml"]), acc, mf, threads)
    return [bias, mf, *outs]


@pytest.mark.parametrize("n", [1, 2, 9, 40])
def test_residual_and_mass_forces_on_threads_are_the_one_thread_values(n) -> None:
    s = _chain(3, n)
    one = _residual(s, 1)
    assert all(np.isfinite(v).all() for v in one)
    assert np.abs(one[0]).max() > 1.0 and np.abs(one[1]).max() > 0.1
    for threads in (2, 3, 5):
        many = _residual(s, threads)
        for k, (a, b) in enumerate(zip(one, many)):
            assert np.array_equal(a, b), (threads, k, np.abs(a - b).max())


@pytest.mark.parametrize("n", [1, 9, 40])
def test_the_fused_residual_and_mass_forces_are_the_two_passes(n) -> None:
    """residual_and_mass_forces (one pass, used by the compiled iterates) gives the node forces and
    the mass forces of residual followed by mass_forces bit for bit, on one and several threads; the
    mass forces are there (not all zero) and follow the accelerations (a mutation that drops them or
    takes the velocity products' accelerations instead fails)."""
    s = _chain(4, n)
    two = _residual(s, 1)
    N = len(s["x"])
    for threads in (1, 2, 3):
        bias = np.random.default_rng(5).normal(size=(N, 6))
        acc = np.random.default_rng(6).normal(size=(N, 6))
        mf = np.random.default_rng(7).normal(size=(N, 6))
        mf0 = mf.copy()
        outs = [np.full((n, 3, 3), np.nan), np.full((n, 7), np.nan), np.full((n, 4), np.nan), np.full((n, 7), np.nan),
                np.full((n, 7, 12), np.nan), np.full(n, np.nan)]
        kernels.residual_and_mass_forces(arrays(s), motion(s), s["g"], 0.9, bias, acc, mf, BeamResults(*outs), threads)
        assert np.abs(mf - mf0).max() > 1e-3
        for k, (a, b) in enumerate(zip(two, [bias, mf, *outs])):
            assert np.array_equal(a, b), (threads, k, np.abs(a - b).max())


def _matrices(asm: Assembler, ev, threads: int, material_only: bool, planned: bool = False) -> np.ndarray:
    """The beams' part of the iteration matrix's values (add_element_matrices) on ``threads``
    (``planned``: with ElementScatter.thread_plan, each thread adding to the values itself)."""
    k, = [i for i, f in enumerate(asm.with_blocks) if f[0] is FAMILIES["beam"]]
    data = asm.with_blocks[k][1]
    fe = ev.elements["beam"]
    sc = asm.matrices.get(asm.model.free_u).groups[k]
    out = np.random.default_rng(8).normal(size=int(sc.pos.max()) + 1)  # values already there (M̄, diagonal)
    plan = sc.thread_plan(threads) if planned else None
    kernels.add_element_matrices(Beams.results(fe), beam_arrays(data), MatrixWeights(3e-5, 0.01, 1.0, material_only),
                                 scatter_maps(sc), ev.kin.S, ev.kin.x, out, threads,
                                 None if plan is None else (plan.doff, plan.dmap))
    return out


def test_element_matrices_on_threads_are_the_one_thread_values() -> None:
    """Beams hanging off a driven hub (B_e with the hub's column) and a pinned free link."""
    for asm, ev in _deformed_models():
        for material_only in (False, True):
            one = _matrices(asm, ev, 1, material_only)
            for threads in (2, 3, 7):
                assert np.array_equal(_matrices(asm, ev, threads, material_only), one)
                assert np.array_equal(_matrices(asm, ev, threads, material_only, planned=True), one)


def test_a_thread_plan_lets_one_slice_add_to_each_value_and_stores_the_rest_in_element_order() -> None:
    """ElementScatter.thread_plan: for every value position, the products its thread adds itself
    all come from one slice of elements, the first that reaches that position, and every other
    product is stored once, in element order; on the pinned link of free nodes only the first
    element of each later slice stores (the node it shares with the slice before)."""
    for asm, _ in _deformed_models():
        k, = [i for i, f in enumerate(asm.with_blocks) if f[0] is FAMILIES["beam"]]
        im = asm.matrices.get(asm.model.free_u)
        for sc in (im.groups[k], im.groups[k].lower_only(im.indices, im.indptr)):
            n = sc.nodes.shape[0]
            counts = np.diff(sc.pos_ptr)
            elem = np.repeat(np.arange(n), counts)
            for threads in (1, 2, 3, 7):
                plan = sc.thread_plan(threads)
                sl = np.repeat(np.searchsorted([c * n // threads for c in range(threads)], np.arange(n), "right") - 1,
                               counts)
                slot = np.full(sc.pos.size, -1)
                for e in np.flatnonzero(plan.doff >= 0):
                    slot[sc.pos_ptr[e]:sc.pos_ptr[e + 1]] = plan.dmap[plan.doff[e]:plan.doff[e] + counts[e]]
                have = sc.pos >= 0
                stored = have & (slot >= 0)
                assert np.array_equal(slot[stored], np.arange(stored.sum()))  # in entry (element) order
                for p in np.unique(sc.pos[have]):
                    at = have & (sc.pos == p)
                    direct = at & ~stored
                    assert direct.any() and np.unique(sl[direct]).size == 1  # one slice adds itself ...
                    assert sl[direct][0] == sl[at].min()  # ... the first one
                    assert np.all(sl[at & stored] > sl[direct][0])  # the later slices' products are stored
                if threads == 1:
                    assert not stored.any()
                if asm.model.n_joints == n + 1 and threads > 1:  # the pinned link: seams only
                    seams = {c * n // threads for c in range(1, threads)} - {0}
                    assert set(np.unique(elem[stored])) == seams


def _link(n: int, damping: float = 0.0) -> fm.Model:
    mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    nodes = mb.add_flexible_link("link", (0.0, 0.0, 0.0), (0.5, 0.0, 0.1), n, SECTION, damping=damping)
    mb.add_joint("pin", "revolute", "ground", nodes[0], axis=(0.0, 0.0, 1.0))
    mb.add_node("tip", position=(0.5, 0.0, 0.1))
    mb.add_body("tip_body", node="tip", mass=0.1, com=(0.01, 0.0, 0.0), inertia=np.diag([1e-5, 2e-5, 2e-5]))
    mb.add_joint("wrist", "spherical", parent=nodes[-1], child="tip", point=(0.5, 0, 0.1), u0=(1.0, 0.0, -2.0))
    return mb.compile()


@pytest.mark.parametrize("iterates, solver", [("compiled", "cholmod"), ("python", "cholmod"), ("compiled", "band")])
def test_a_run_on_threads_is_the_one_thread_run(monkeypatch, iterates, solver) -> None:
    """The same run bit for bit whether the beams' passes and the joints on ground take one thread
    or three (every row, the step history, the counters), through the compiled iterates
    (flexmb/solvers/element_step.py) and through the Python ones (the beam family's evaluate and
    add_blocks, forward_kinematics); on the band factor the compiled Newton loop writes the matrix
    into the band on three threads (ElementStep.band_maps)."""
    model = _link(12, damping=1e-4)
    kw = dict(rho_inf=0.8, output_every=1, linear_solver=solver)
    if iterates == "python":
        monkeypatch.setattr(ElementStep, "applies", staticmethod(lambda *a: False))
    calls = []
    residual = kernels.residual

    def counting(*args):
        calls.append(args[-1])
        return residual(*args)

    monkeypatch.setattr(parallel, "threads_for", lambda n: 1)
    one = fm.simulate(model, 0.02, 1e-3, **kw)
    monkeypatch.setattr(parallel, "threads_for", lambda n: 3)  # the beams' passes and forward kinematics
    if iterates == "python":
        monkeypatch.setattr(kernels, "residual", counting)
    many = fm.simulate(model, 0.02, 1e-3, **kw)
    if iterates == "python":
        assert calls and set(calls) == {3}  # the family's passes were given three threads
    assert many.stats["newton_iterations"] > 20
    _assert_same(one, many)


_KIN = ("x", "R", "Vs", "As", "S", "Sd", "P", "V", "zeta")


def _forward(m: fm.Model, st, buf: kinematics.KinematicsBuffers, threads: int) -> list[np.ndarray]:
    """engine/kinematics._forward of ``st`` on ``threads`` into ``buf`` (NaN first, Sd zero): copies."""
    for name in _KIN:
        getattr(buf, name)[:] = 0.0 if name == "Sd" else np.nan
    t = buf.pattern
    kinematics._forward(t.joint_tree, st.q, st.balls.reshape(-1, 3, 3), st.u, buf.arrays, threads)
    return [getattr(buf, name).copy() for name in _KIN]


def test_forward_kinematics_on_threads_is_the_one_thread_pass() -> None:
    """The joints on ground split over threads, then the others in tree order (engine/kinematics.py
    _forward): the same poses, twists, axes and rates, on a tree with a driven hub carrying a link
    (joints below joints), a body on a free joint, and a link whose nodes all hang off ground."""
    for m in [asm.model for asm, _ in _deformed_models()] + [_link(9)]:
        rng = np.random.default_rng(4)
        st = m.initial_state().retract(m, 0.05 * rng.normal(size=m.n_u))
        st.u[:] = rng.normal(size=m.n_u)
        buf = kinematics.KinematicsBuffers(m, Assembler(m).pattern)
        assert (buf.pattern.joint_parent_ext == m.n_nodes).sum() >= 2  # several joints on ground to split
        one = _forward(m, st, buf, 1)
        assert all(np.isfinite(a).all() for a in one)
        for threads in (2, 3, 8):
            for name, a, b in zip(_KIN, one, _forward(m, st, buf, threads)):
                assert np.array_equal(a, b), name


def test_node_twists_and_projection_on_threads_are_the_one_thread_passes() -> None:
    """B u and Bᵀ w over the nodes with the joints on ground split over threads, the others in tree
    order (engine/kinematics.py node_twists_threads, project_node_threads), bit for bit the one-thread
    passes, on trees with joints below joints and on a link whose nodes all hang off ground."""
    for m in [asm.model for asm, _ in _deformed_models()] + [_link(9)]:
        rng = np.random.default_rng(5)
        st = m.initial_state().retract(m, 0.05 * rng.normal(size=m.n_u))
        buf = kinematics.KinematicsBuffers(m, Assembler(m).pattern)
        _forward(m, st, buf, 1)
        t = buf.pattern
        parent = t.joint_parent_ext
        ground, rest = np.flatnonzero(parent == m.n_nodes), np.flatnonzero(parent != m.n_nodes)
        assert ground.size >= 2
        args = (parent, m.joint_child, t.coord_start, t.coord_count, buf.S)
        u, w = rng.normal(size=m.n_u), rng.normal(size=(m.n_nodes, 6))
        tw1, W1, p1 = np.empty((m.n_nodes, 6)), np.empty((m.n_nodes, 6)), np.empty(m.n_u)
        kinematics._node_twists(*args, u, buf.x, tw1)
        kinematics._project_node(*args, w, buf.x, W1, p1)
        for threads in (2, 3, 8):
            tw, W, pr = np.full_like(tw1, np.nan), np.full_like(W1, np.nan), np.full_like(p1, np.nan)
            kinematics.node_twists_threads(ground, rest, threads, *args, u, buf.x, tw)
            kinematics.project_node_threads(ground, rest, threads, *args, w, buf.x, W, pr)
            assert np.array_equal(tw, tw1) and np.array_equal(pr, p1) and np.array_equal(W, W1)


def test_threads_for_follows_the_element_count_and_numba() -> None:
    assert parallel.threads_for(1) == 1
    assert parallel.threads_for(parallel.PARALLEL_MIN - 1) == 1
    assert parallel.threads_for(parallel.PARALLEL_MIN) == numba.get_num_threads()
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        assert parallel.threads_for(10 * parallel.PARALLEL_MIN) == 1
    finally:
        numba.set_num_threads(before)


def test_flexmb_info_says_how_many_threads_the_beams_take() -> None:
    from flexmb.solvers.generalized_alpha import GeneralizedAlpha

    small = GeneralizedAlpha(_link(4)).describe_solver()
    assert "the 4 beam elements' passes on 1 thread(s)" in small
    n = parallel.PARALLEL_MIN
    big = GeneralizedAlpha(_link(n)).describe_solver()
    assert f"the {n} beam elements' passes on {numba.get_num_threads()} thread(s)" in big
    assert f"threading layer {parallel.threading_layer()}" in big


def test_importing_flexmb_makes_waiting_threads_sleep_unless_told_otherwise() -> None:
    """OMP_WAIT_POLICY=PASSIVE is set when flexmb is imported, before CHOLMOD (which loads libgomp)
    is (flexmb/engine/parallel.py): on a busy machine spinning threads take each other's core; a
    policy the user set is kept."""
    import os
    import subprocess
    import sys

    code = ("import os, sys; import flexmb; from flexmb.engine.parallel import WAIT_POLICY; "
            "print(os.environ['OMP_WAIT_POLICY'], WAIT_POLICY, 'sksparse.cholmod' not in sys.modules)")
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout.split()
    assert out == ["PASSIVE", "PASSIVE", "True"]  # set, and CHOLMOD (with libgomp) not loaded yet
    env["OMP_WAIT_POLICY"] = "ACTIVE"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout.split()
    assert out == ["ACTIVE", "ACTIVE", "True"]


def test_the_threads_come_from_tbb_unless_numba_is_told_otherwise() -> None:
    """Importing flexmb loads pip's libtbb (flexmb/engine/parallel.py), so numba's default choice
    runs the beams' passes on TBB, whose waiting threads cost less than GNU OpenMP's sleeping ones;
    NUMBA_THREADING_LAYER keeps the user's choice. Checked after a pass on two threads has run."""
    import os
    import subprocess
    import sys

    code = ("import numba, numpy as np; import flexmb; from flexmb.engine import parallel; "
            "from flexmb.elements.beam.kernels import mass_forces; before = parallel.threading_layer(); "
            "n = 4; F = np.zeros((n + 1, 6)); frames = np.tile(np.eye(3), (n, 1, 1)); Mnz = np.ones((n, 144)); "
            "r, c = np.nonzero(np.ones((12, 12))); "
            "mass_forces(np.arange(n), np.arange(1, n + 1), frames, Mnz, r, c, np.ones((n + 1, 6)), F, 2); "
            "print(before, numba.threading_layer(), parallel.threading_layer(), parallel.TBB_LIBRARY is not None, "
            "float(F[0, 0]))")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_THREADING_LAYER"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout.split()
    assert out == ["tbb", "tbb", "tbb", "True", "12.0"]
    env["NUMBA_THREADING_LAYER"] = "omp"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout.split()
    assert out == ["omp", "omp", "omp", "False", "12.0"]


def _beam_values(ev, data, im, sc, threads: int) -> np.ndarray:
    """The beams' part of S's values (add_element_matrices) through the scatter ``sc`` of ``im``."""
    fe = ev.elements["beam"]
    out = np.zeros(im.indices.size)
    kernels.add_element_matrices(Beams.results(fe), beam_arrays(data), MatrixWeights(3e-5, 0.01, 1.0, False),
                                 scatter_maps(sc), ev.kin.S, ev.kin.x, out, threads)
    return out


def test_the_lower_triangle_scatter_gives_the_full_scatter_values_there() -> None:
    """ElementScatter.lower_only (the compiled element step's matrix): the beams' values in S's
    lower triangle are the full scatter's bit for bit, on one and on several threads, and 0 above;
    on the pinned link of free nodes every element leaves out the block of its first node's rows
    in its second node's columns; the factor of the lower-only matrix solves as the full one's."""
    from flexmb.engine.linalg import SparseCholesky

    for asm, ev in _deformed_models():
        k, = [i for i, f in enumerate(asm.with_blocks) if f[0] is FAMILIES["beam"]]
        data = asm.with_blocks[k][1]
        im = asm.matrices.get(asm.model.free_u)
        full, low = im.groups[k], im.groups[k].lower_only(im.indices, im.indptr)
        col = np.repeat(np.arange(im.shape[0]), np.diff(im.indptr))
        lower = im.indices >= col
        assert np.all(low.pos[low.pos >= 0] >= 0) and np.all(lower[low.pos[low.pos >= 0]])
        want = _beam_values(ev, data, im, full, 1)
        assert np.any(want[~lower] != 0.0)  # the full scatter fills both triangles
        for threads in (1, 3):
            got = _beam_values(ev, data, im, low, threads)
            assert np.array_equal(got[lower], want[lower])
            assert np.all(got[~lower] == 0.0)
        if asm.model.n_joints == data.n + 1:  # the pinned link: free nodes but the first
            assert np.all(low.skip[1:] == 2) and low.skip[0] in (0, 2)
        S = want + np.where(col == im.indices, 1e3, 0.0)  # positive definite with a large diagonal
        pattern = im.pattern
        a, b = SparseCholesky(pattern), SparseCholesky(pattern)
        a.values[:] = S
        b.values[:] = np.where(lower, S, 0.0)
        a.factorize()
        b.factorize()
        rhs = np.linspace(-1.0, 2.0, im.shape[0])
        assert np.array_equal(a.solve(rhs), b.solve(rhs))
