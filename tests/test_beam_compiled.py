"""The compiled beam kernels (elements/beam/kernels.py) compute what the vectorised test oracles
of elements/beam/reference.py compute, to round-off, on random deformed and moving elements; so do
the compiled rigid-body pass and the in-place iteration matrix (against flexmb/engine/reference.py)."""

from types import SimpleNamespace

import numpy as np

from flexmb.elements.beam import Beams, exact, kernels, reference
from flexmb.elements.beam.kernel_data import BeamResults, MatrixWeights, NodeMotion, beam_arrays, scatter_maps
from flexmb.rotations import expm


def arrays(s: dict):
    """The kernels' BeamArrays of a random_state."""
    return beam_arrays(SimpleNamespace(**s))


def motion(s: dict) -> NodeMotion:
    """The kernels' NodeMotion of a random_state."""
    return NodeMotion(s["x"], s["R"], s["V"], s["zeta"])


def random_state(seed: int, n: int = 7):
    rng = np.random.default_rng(seed)
    L0 = rng.uniform(0.2, 2.0, n)
    E0 = expm(rng.normal(size=(n, 3)))
    x = np.zeros((2 * n, 3))
    R = np.zeros((2 * n, 3, 3))
    x[:n] = rng.normal(size=(n, 3))
    x[n:] = x[:n] + L0[:, None] * E0[:, :, 0] * rng.uniform(0.98, 1.02, (n, 1)) + 0.03 * rng.normal(size=(n, 3))
    R[:n] = expm(0.3 * rng.normal(size=(n, 3))) @ E0
    R[n:] = expm(0.3 * rng.normal(size=(n, 3))) @ E0
    R0 = expm(rng.normal(size=(2 * n, 3)))  # assembly rotations of the nodes
    C1 = np.swapaxes(R0[:n], 1, 2) @ E0
    C2 = np.swapaxes(R0[n:], 1, 2) @ E0
    R = R @ np.swapaxes(E0, 1, 2).repeat(1, 0)[np.r_[np.arange(n), np.arange(n)]] @ R0  # node frames carry C
    a, b = np.arange(n), np.arange(n, 2 * n)
    E, G, A, Iy, Iz, J, rho = 7e10, 2.7e10, 4e-4, 2e-7, 3e-7, 4e-7, 3000.0
    Kl = exact.local_stiffness(L0, E, G, A, Iy, Iz, J)
    Ml = exact.local_mass(L0, rho * A, rho * Iy, rho * Iz)
    V = rng.normal(size=(2 * n, 6))
    zeta = rng.normal(size=(2 * n, 6))
    alpha = rng.uniform(0, 1e-3, n)
    return dict(a=a, b=b, x=x, R=R, V=V, zeta=zeta, C1=C1, C2=C2, L0=L0, Kl=Kl, Ml=Ml, alpha=alpha,
                mass=rho * A * L0, g=np.array([0.3, -9.81, 1.1]))


def reference_bias(s, load_factor):
    a, b, x, R = s["a"], s["b"], s["x"], s["R"]
    V = np.concatenate([s["V"][a], s["V"][b]], axis=1)
    p, Bl, Rr, Wr = exact.deformations(x[a], R[a], x[b], R[b], s["C1"], s["C2"], s["L0"])
    f, energy, fl, power = reference.elastic_forces(p, Bl, V, s["Kl"], s["alpha"])
    fg, eg = reference.gravity_forces(p, Bl, Rr, Wr, x[a], x[b], s["mass"], s["L0"], s["g"])
    zeta = np.concatenate([s["zeta"][a], s["zeta"][b]], axis=1)
    w = reference.inertia_forces(Rr, Wr, s["Ml"], V) + reference.mass_times(Rr, s["Ml"], zeta) - f - load_factor * fg
    bias = np.zeros((len(x), 6))
    np.add.at(bias, a, w[:, :6])
    np.add.at(bias, b, w[:, 6:])
    T = reference.kinetic_energy(Rr, s["Ml"], V)
    return bias, Rr, fl, np.stack([energy, power, T, load_factor * eg], axis=1)


def test_compiled_residual_equals_reference():
    for seed in range(3):
        s = random_state(seed)
        n = len(s["L0"])
        ref, Rr, fl, en = reference_bias(s, 0.7)
        bias = np.zeros((len(s["x"]), 6))
        frames, fl_c, en_c = np.zeros((n, 3, 3)), np.zeros((n, 7)), np.zeros((n, 4))
        p_c, Bl_c, chord = np.zeros((n, 7)), np.zeros((n, 7, 12)), np.zeros(n)
        kernels.residual(arrays(s), motion(s), s["g"], 0.7, bias, BeamResults(frames, fl_c, en_c, p_c, Bl_c, chord))
        assert np.abs(bias - ref).max() <= 1e-9 * np.abs(ref).max()
        assert np.abs(frames - Rr).max() < 1e-13
        a, b, x, R = s["a"], s["b"], s["x"], s["R"]
        p, Bl, _, _ = exact.deformations(x[a], R[a], x[b], R[b], s["C1"], s["C2"], s["L0"])
        assert np.abs(p_c - p).max() <= 1e-13 * np.abs(p).max()
        assert np.abs(Bl_c - Bl).max() <= 1e-12 * np.abs(Bl).max()
        assert np.abs(chord - np.linalg.norm(x[b] - x[a], axis=1)).max() <= 1e-15 * chord.max()
        assert np.abs(fl_c - fl).max() <= 1e-9 * np.abs(fl).max()
        assert np.allclose(en_c, en, rtol=1e-9, atol=1e-9 * np.abs(en).max())


def test_compiled_mass_forces_and_element_matrices_equal_reference():
    s = random_state(7)
    a, b, x, R = s["a"], s["b"], s["x"], s["R"]
    n = len(a)
    _, _, Rr, _ = exact.deformations(x[a], R[a], x[b], R[b], s["C1"], s["C2"], s["L0"])
    acc = np.random.default_rng(1).normal(size=(len(x), 6))
    out = np.zeros((len(x), 6))
    kernels.mass_forces(a, b, Rr, *kernels.mass_pattern(s["Ml"]), acc, out)
    f = reference.mass_times(Rr, s["Ml"], np.concatenate([acc[a], acc[b]], axis=1))
    ref = np.zeros_like(out)
    np.add.at(ref, a, f[:, :6])
    np.add.at(ref, b, f[:, 6:])
    assert np.abs(out - ref).max() <= 1e-12 * np.abs(ref).max()
    ck, cc, cm = 0.37, 0.011, 1.3
    for material_only in (False, True):
        got = np.zeros((n, 12, 12))
        kernels.element_matrices(arrays(s), x, R, MatrixWeights(ck, cc, cm, material_only), got)
        K, Km = exact.tangent_approx(x[a], R[a], x[b], R[b], s["C1"], s["C2"], s["L0"], s["Kl"])
        ref = ck * (Km if material_only else K) + cc * s["alpha"][:, None, None] * Km + cm * exact.global_mass(Rr, s["Ml"])
        assert np.abs(got - ref).max() <= 1e-10 * np.abs(ref).max()


def test_scattered_iteration_matrix_equals_sparse_products():
    """S assembled in place (flexmb/engine/iteration_matrix.py) equals M̄ + B^T E B by sparse products, for
    a mechanism with a driven joint, beams hanging off a tree, a bushing to ground and a free body."""
    import flexmb as fm
    from flexmb.engine.assembly import Assembler
    from flexmb.engine.reference import iteration_matrix_via_B

    mb = fm.ModelBuilder(gravity=(0, -9.81, 0))
    mb.add_node("hub", (0, 0, 0))
    mb.add_body("hub", "hub", 2.0, (0.1, 0, 0), np.diag([0.1, 0.2, 0.3]))
    mb.add_node("arm", (0.5, 0, 0))
    mb.add_body("arm", "arm", 1.0, (0.2, 0.1, 0), np.diag([0.05, 0.1, 0.1]))
    mb.add_joint("h", "revolute", "ground", "hub", axis=(0, 0, 1), q0=0.3, u0=1.0)
    mb.add_joint("s", "spherical", "hub", "arm", point=(0.5, 0, 0), q0=(0.1, 0.2, -0.1), u0=(0.3, 0.1, 0.2))
    sec = fm.BeamSection(7e10, 2.7e10, 4e-4, 2e-7, 3e-7, 4e-7, 3000.0)
    nodes = mb.add_flexible_link("link", (0.5, 0, 0), (1.5, 0.2, 0.1), 3, sec, node_a="arm", damping=1e-3)
    mb.add_node("free", (2.0, 0.0, 0.0))
    mb.add_body("free", "free", 1.0, (0, 0, 0), np.eye(3) * 0.01)
    mb.add_bushing("tie", nodes[-1], "free", stiffness=np.full(6, 1e5), damping=np.full(6, 10.0), point=(2.0, 0.0, 0.0))
    mb.add_bushing("ground_tie", "ground", "free", stiffness=[1e4, 1e4, 1e4, 0, 0, 0], point=(2.0, 0.0, 0.0))
    mb.add_drive("h", lambda t: 0.3 + t)
    m = mb.compile()
    asm = Assembler(m)
    st = m.initial_state()
    st.u[:] = np.random.default_rng(0).normal(size=m.n_u)
    st.apply_drives(m, 0.0)
    ev = asm.evaluate(st)
    cols = m.free_u
    diag = np.linspace(1.0, 2.0, cols.size)
    for material_only in (False, True):
        for with_mass in (True, False):
            A = asm.iteration_matrix(ev, cols, 0.01, 3e-5, diag, material_only, with_mass).toarray()
            B = iteration_matrix_via_B(asm, ev, cols, 0.01, 3e-5, diag, material_only, with_mass).toarray()
            assert np.abs(A - B).max() <= 1e-12 * np.abs(B).max()
            assert np.abs(A - A.T).max() <= 1e-12 * np.abs(B).max()


def test_compiled_rigid_body_pass_equals_reference_kernels():
    from flexmb.elements import rigid_body
    from flexmb.elements.rigid_body import reference as rigid_reference

    rng = np.random.default_rng(4)
    N, nb = 5, 7
    node = rng.integers(0, N, nb)  # several bodies share nodes
    R = expm(rng.normal(size=(N, 3)))
    w = rng.normal(size=(N, 3))
    mass = rng.uniform(0.5, 3, nb)
    com = rng.normal(size=(nb, 3))
    A = rng.normal(size=(nb, 3, 3))
    inertia = A @ np.swapaxes(A, 1, 2) + np.eye(3)
    g = np.array([0.1, -9.81, 0.3])
    Mb, bias = np.zeros((N, 6, 6)), np.zeros((N, 6))
    rigid_body.accumulate(node, R, w, mass, com, inertia, g, 0.8, Mb, bias)
    Mref, bref = np.zeros((N, 6, 6)), np.zeros((N, 6))
    np.add.at(Mref, node, rigid_reference.mass_blocks(R[node], mass, com, inertia))
    gy = rigid_reference.gyroscopic(R[node], w[node], mass, com, inertia)
    np.add.at(bref, node, gy - 0.8 * rigid_reference.gravity_wrench(R[node], mass, com, g))
    assert np.abs(Mb - Mref).max() <= 1e-13 * np.abs(Mref).max()
    assert np.abs(bias - bref).max() <= 1e-13 * np.abs(bref).max()


def _deformed_models():
    """A beam hanging off a tree with bushings and bodies, and a free beam-only link (no node masses),
    each at a random deformed, moving state: (assembler, evaluation)."""
    import flexmb as fm
    from flexmb.engine.assembly import Assembler

    sec = fm.BeamSection(7e10, 2.7e10, 4e-4, 2e-7, 3e-7, 4e-7, 3000.0)
    mb = fm.ModelBuilder(gravity=(0, -9.81, 0))
    mb.add_node("hub", (0, 0, 0))
    mb.add_body("hub", "hub", 2.0, (0.1, 0, 0), np.diag([0.1, 0.2, 0.3]))
    mb.add_joint("h", "revolute", "ground", "hub", axis=(0, 0, 1), q0=0.3, u0=1.0)
    nodes = mb.add_flexible_link("link", (0.0, 0, 0), (1.5, 0.2, 0.1), 4, sec, node_a="hub", damping=1e-3)
    mb.add_node("free", (2.0, 0.0, 0.0))
    mb.add_body("free", "free", 1.0, (0, 0, 0), np.eye(3) * 0.01)
    mb.add_bushing("tie", nodes[-1], "free", stiffness=np.full(6, 1e5), damping=np.full(6, 10.0), point=(2.0, 0.0, 0.0))
    tree = mb.compile()
    mb = fm.ModelBuilder(gravity=(0, -9.81, 0))
    nodes = mb.add_flexible_link("link", (0.0, 0, 0), (2.0, 0.0, 0.0), 5, sec)
    mb.add_joint("pin", "revolute", "ground", nodes[0], axis=(0.0, 0.0, 1.0))
    link = mb.compile()
    out = []
    for seed, m in enumerate((tree, link)):
        rng = np.random.default_rng(10 + seed)
        st = m.initial_state().retract(m, 0.02 * rng.normal(size=m.n_u))
        st.u[:] = rng.normal(size=m.n_u)
        asm = Assembler(m)
        out.append((asm, asm.evaluate(st)))
    return out


def test_fused_beam_matrices_equal_blocks_then_scatter():
    """The beam's fused pass (kernels.add_element_matrices: element matrices from the residual's
    frames, Bl and strains, scattered at once) gives the iteration matrix of the (n_el, 12, 12)
    blocks scattered afterwards to round-off (an element between two free nodes, on the free
    link's inner nodes, is formed in the nodes' coordinates at once: other sums), symmetric, and
    the matrix with M̄'s node part left out when there are no node masses equals the one with it."""
    for asm, ev in _deformed_models():
        cols = asm.model.free_u
        diag = np.linspace(1.0, 2.0, cols.size)
        itm = asm.matrices.get(cols)
        fe = ev.elements["beam"]
        assert fe.Bl is not None and np.abs(fe.deformations[:, 1:]).max() > 1e-3  # deformed elements
        for material_only in (False, True):
            for with_mass in (True, False):
                fused = asm.iteration_matrix(ev, cols, 0.01, 3e-5, diag, material_only, with_mass).toarray()
                blocks = asm.element_blocks(ev, 3e-5, 0.01, material_only, cm=1.0 if with_mass else 0.0)
                ref = itm.assemble(asm.matrices.pairs, ev.Mb, ev.kin, blocks, diag, with_mass).toarray()
                assert np.abs(fused - ref).max() <= 1e-13 * np.abs(ref).max()
                assert np.abs(fused - fused.T).max() <= 1e-12 * np.abs(ref).max()
                assert np.abs(fused).max() > 0.0


def test_int32_positions_give_the_int64_values_bit_for_bit():
    """The element positions in S's values are int32 (half the bytes per entry the matrix passes
    read) and the fused pass gives with them exactly what it gives with int64 positions, the free
    pairs' three-column blocks (_free_pair_matrix) and the general path alike."""
    from flexmb.elements.beam import kernels

    for asm, ev in _deformed_models():
        cols = asm.model.free_u
        itm = asm.matrices.get(cols)
        (scatter,) = [g for g in itm.groups if g.nodes.shape[1] == 2 and g.nodes.shape[0] == ev.elements["beam"].chord.size]
        assert scatter.pos.dtype == np.int32 and (scatter.pos >= 0).sum() > 0
        fe, data, kin = ev.elements["beam"], asm.model.elements["beam"], ev.kin
        for lower in (False, True):
            sc = scatter.lower_only(itm.indices, itm.indptr) if lower else scatter
            out = []
            for pos in (sc.pos, sc.pos.astype(np.int64)):
                d = np.zeros(itm.indices.size)
                maps = scatter_maps(sc)._replace(pos=pos)
                kernels.add_element_matrices(Beams.results(fe), beam_arrays(data), MatrixWeights(3e-5, 0.01, 1.0, False),
                                             maps, kin.S, kin.x, d, 1)
                out.append(d)
            assert np.abs(out[0]).max() > 0 and np.array_equal(out[0], out[1])
