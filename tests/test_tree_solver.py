"""The O(n) tree factorization of rigid trees (flexmb/engine/tree_solver.py): it solves with M̄
exactly as CHOLMOD does, with its nonsymmetric velocity tangent exactly as the dense matrix it
stands for, that tangent is the derivative of the residual, so is the position tangent K̄, and the
integrator uses it where it applies (stats['tree_solver']) and CHOLMOD elsewhere, with the same motion
to the Newton tolerance and, with K̄, fewer Newton iterations."""

import numpy as np
import pytest

import flexmb as fm
from flexmb.engine.assembly import Assembler
from flexmb.engine.linalg import SparseCholesky
from flexmb.engine.tree_solver import TreeSolver, node_tangent_blocks, position_tangent_times
from flexmb.errors import SettingsError
from flexmb.solvers.generalized_alpha import GeneralizedAlpha

KINDS = ("revolute", "prismatic", "universal", "spherical", "cylindrical", "free", "revolute")


def _unit(rng) -> np.ndarray:
    v = rng.normal(size=3)
    return v / np.linalg.norm(v)


def random_tree(seed: int, n: int = 9, driven: bool = True) -> fm.Model:
    """A random tree of n bodies (random masses, centres of mass, full inertia tensors) on joints of
    every kind with scalar coordinates and balls, branching, initial coordinates and velocities; a
    drive on one coordinate and a joint spring on another."""
    rng = np.random.default_rng(seed)
    mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    kinds = []
    for i in range(n):
        pos = rng.normal(size=3)
        mb.add_node(f"n{i}", position=pos)
        Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        mb.add_body(f"b{i}", f"n{i}", rng.uniform(0.5, 2.0), com=0.3 * rng.normal(size=3),
                    inertia=Q @ np.diag(rng.uniform(1.0, 2.0, 3)) @ Q.T)
        parent = "ground" if i == 0 or rng.uniform() < 0.2 else f"n{rng.integers(i)}"
        kind = KINDS[i % len(KINDS)]
        kinds.append(kind)
        ax = {}
        if kind in ("revolute", "prismatic", "cylindrical"):
            ax = {"axis": _unit(rng)}
        elif kind == "universal":
            a = _unit(rng)
            b = np.cross(a, _unit(rng))
            ax = {"axes": [a, b / np.linalg.norm(b)]}
        nu = {"revolute": 1, "prismatic": 1, "cylindrical": 2, "universal": 2, "spherical": 3, "free": 6}[kind]
        mb.add_joint(f"j{i}", kind, parent, f"n{i}", point=pos + 0.2 * rng.normal(size=3), q0=0.3 * rng.normal(size=nu),
                     u0=rng.normal(size=nu), **ax)
    if driven:
        mb.add_drive("j1", lambda t: 0.2 * np.sin(3 * t))  # the prismatic joint
        mb.add_drive("j2", lambda t: 0.1 * t, dof=1)  # the universal joint's second axis
    mb.add_joint_spring("j0", 50.0, 2.0)
    return mb.compile()


def _evaluation(model: fm.Model, seed: int):
    rng = np.random.default_rng(seed + 100)
    st = model.initial_state()
    st.udot[:] = rng.normal(size=model.n_u)
    st.apply_drives(model, 0.3)
    asm = Assembler(model)
    return asm, st, asm.evaluate(st)


def _dense_composite(model, kin, Mb, gp) -> np.ndarray:
    """Eq. (1) of the tree solver's docstring written out: Σ_i Bsᵀ D_i B̃s (spatial B, S̃ = S + 2γ'Ṡ)."""
    N, n_u = model.n_nodes, model.n_u
    D = np.empty((N, 6, 6))
    node_tangent_blocks(Mb, kin.x, kin.Vs, gp, D)
    Bs = np.zeros((6 * N, n_u))
    Bt = np.zeros((6 * N, n_u))
    p = kin.pattern
    for i, k in zip(p.pair_node, p.pair_coord):
        Bs[6 * i:6 * i + 6, k] = kin.S[k]
        Bt[6 * i:6 * i + 6, k] = kin.S[k] + 2 * gp * kin.Sdot[k]
    Dbig = np.zeros((6 * N, 6 * N))
    for i in range(N):
        Dbig[6 * i:6 * i + 6, 6 * i:6 * i + 6] = D[i]
    return Bs.T @ Dbig @ Bt


@pytest.mark.parametrize("seed", range(4))
def test_tree_solve_equals_cholmod_on_the_mass_matrix(seed):
    """γ' = 0: the tree factor solves M̄ + diag as CHOLMOD does (random trees with balls, prismatic,
    universal and cylindrical joints, branches, driven coordinates), to 1e-12 relative."""
    model = random_tree(seed)
    asm, st, ev = _evaluation(model, seed)
    free = model.free_u
    assert free.size < model.n_u  # driven coordinates are left out
    diag = np.random.default_rng(seed).uniform(0.0, 3.0, free.size)
    chol = SparseCholesky(asm.structural_pattern(free))
    chol.factorize(asm.iteration_matrix(ev, free, 0.0, 0.0, diag))
    tree = TreeSolver(asm.pattern, free, model.n_u, model.coordinate_names)
    tree.factorize_tree(ev.kin, ev.Mb, 0.0, diag)
    R = np.random.default_rng(seed + 7).normal(size=(free.size, 3))
    for r in R.T:
        x_ref, x = chol.solve(r), tree.solve(r)
        assert np.abs(x - x_ref).max() <= 1e-12 * np.abs(x_ref).max()


@pytest.mark.parametrize("seed", range(4))
def test_tree_solve_with_the_velocity_tangent_equals_the_dense_matrix(seed):
    """γ' > 0: the factor solves the nonsymmetric matrix (1) Σ Bsᵀ D_i B̃s + diag written out densely."""
    model = random_tree(seed)
    asm, st, ev = _evaluation(model, seed)
    free = model.free_u
    gp = 0.02  # large, so the nonsymmetric part is far above round-off
    diag = np.random.default_rng(seed).uniform(0.0, 3.0, free.size)
    A = _dense_composite(model, ev.kin, ev.Mb, gp)[np.ix_(free, free)] + np.diag(diag)
    assert np.abs(A - A.T).max() > 1e-3 * np.abs(A).max()  # really nonsymmetric
    tree = TreeSolver(asm.pattern, free, model.n_u, model.coordinate_names)
    tree.factorize_tree(ev.kin, ev.Mb, gp, diag)
    r = np.random.default_rng(seed + 3).normal(size=free.size)
    x = tree.solve(r)
    assert np.abs(A @ x - r).max() <= 1e-12 * np.abs(A).max() * np.abs(x).max()


def test_velocity_tangent_is_the_derivative_of_the_residual():
    """(A(γ') - M̄)/γ' equals ∂r/∂u by central differences of the residual (chain with universal and
    cylindrical joints and balls, no drives: every coordinate unknown), to the differences' error."""
    model = random_tree(11, driven=False)
    asm, st, ev = _evaluation(model, 11)
    n = model.n_u
    eps = 1e-6
    J = np.empty((n, n))
    for j in range(n):
        s1, s2 = st.copy(), st.copy()
        s1.u[j] += eps
        s2.u[j] -= eps
        J[:, j] = (asm.evaluate(s1).residual(st.udot) - asm.evaluate(s2).residual(st.udot)) / (2 * eps)
    free = model.free_u
    gp = 1e-7
    A0 = _dense_composite(model, ev.kin, ev.Mb, 0.0)
    A1 = _dense_composite(model, ev.kin, ev.Mb, gp)
    T = (A1 - A0) / gp
    # without the spring's damping (diagonal) the tangent is the inertia forces' derivative
    J[0, 0] -= 2.0
    assert np.abs(J).max() > 1.0
    assert np.abs(T - J).max() <= 1e-6 * np.abs(J).max()
    # and the factor holds exactly this matrix
    tree = TreeSolver(asm.pattern, free, n, model.coordinate_names)
    tree.factorize_tree(ev.kin, ev.Mb, 0.01, np.zeros(n))
    A = _dense_composite(model, ev.kin, ev.Mb, 0.01)
    assert np.abs(tree.dense() - A).max() <= 1e-9 * np.abs(A).max()


def _position_tangent(model: fm.Model, asm, st, ev, xd: np.ndarray) -> np.ndarray:
    kin, t = ev.kin, ev.kin.pattern
    out = np.zeros(model.n_u)
    position_tangent_times(t.joint_tree, np.asarray(t.coord_child, dtype=np.int64), kin.S, st.u, st.udot, ev.Mb, kin.x,
                           ev.node_wrenches(st.udot), np.asarray(model.gravity, float), xd, out)
    return out


@pytest.mark.parametrize("seed", range(4))
def test_position_tangent_is_the_derivative_of_the_residual(seed):
    """K̄ xd (engine/tree_solver.py, position_tangent_times) equals the central difference of the
    residual along the Lie-group retraction q ⊕ ε xd (at fixed u, u̇) on random trees with every joint
    kind (revolute, prismatic, universal, spherical, cylindrical, free), to the differences' error;
    the joint spring's stiffness (on the diagonal of the iteration matrix, not in K̄) is added."""
    model = random_tree(seed, driven=False)
    asm, st, ev = _evaluation(model, seed)
    xd = np.random.default_rng(seed + 7).normal(size=model.n_u)
    kx = _position_tangent(model, asm, st, ev, xd)
    kx[model.spring_u] += model.spring_k * xd[model.spring_u]
    eps = 1e-6
    s1, s2 = st.retract(model, eps * xd), st.retract(model, -eps * xd)
    fd = (asm.evaluate(s1).residual(st.udot) - asm.evaluate(s2).residual(st.udot)) / (2 * eps)
    assert np.abs(fd).max() > 10.0
    assert np.abs(kx - fd).max() <= 1e-7 * np.abs(fd).max()
    # without the spring the gravity and inertia parts alone are not zero: K̄ is not the spring
    assert np.abs(kx - model.spring_k[0] * xd[model.spring_u[0]] * (np.arange(model.n_u) == model.spring_u[0])).max() > 1.0


def _run(model: fm.Model, rtol: float, steps: int = 300, **kw):
    """The state after ``steps`` steps of 1 ms (ρ∞ = 0.8) and the Newton iterations per step."""
    integ = GeneralizedAlpha(model, rho_inf=0.8, rtol=rtol, **kw)
    st, _ = integ.initial_acceleration(model.initial_state())
    a = st.udot.copy()
    its = 0
    for _ in range(steps):
        st, a, _, info = integ.step(st, a, 1e-3)
        its += info.iterations
    return st, its / steps, integ


def test_position_tangent_cuts_newton_iterations_of_rigid_trees():
    """With β' K̄ in the tree solver Newton converges quadratically: at rtol 1e-10 over 300 steps the
    falling 10-link chain takes 2.47 Newton iterations per step instead of 3.25, the double pendulum
    1.00 instead of 1.73 (measured). The motion is the same to the Newton tolerance: the difference
    from the run without K̄ shrinks with rtol (chain: 7e-7 at rtol 1e-8, 1.4e-9 at 1e-10)."""
    for model, with_k, without_k in ((_chain(10), 2.6, 3.1), (_double_pendulum(), 1.1, 1.6)):
        diff = []
        for rtol in (1e-8, 1e-10):
            st_k, it_k, integ = _run(model, rtol)
            st_0, it_0, _ = _run(model, rtol, position_tangent=False)
            assert isinstance(integ.chol, TreeSolver)
            diff.append(np.abs(st_k.q - st_0.q).max())
        assert it_k <= with_k < without_k <= it_0, (it_k, it_0)
        assert diff[1] < 1e-8 and diff[1] < 0.05 * diff[0], diff


def test_position_tangent_auto_is_on_for_small_trees_only():
    """"auto" takes K̄ where it was measured to pay (at most GeneralizedAlpha.position_tangent_max
    unknowns); a bad value is refused naming the argument."""
    limit = GeneralizedAlpha.position_tangent_max
    assert GeneralizedAlpha(_chain(limit)).position_tangent is True
    assert GeneralizedAlpha(_chain(limit + 1)).position_tangent is False
    assert GeneralizedAlpha(_chain(limit + 1), position_tangent=True).position_tangent is True
    with pytest.raises(SettingsError, match="position_tangent"):
        GeneralizedAlpha(_chain(2), position_tangent="yes")


def _double_pendulum() -> fm.Model:
    mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    for i, n in enumerate(("n1", "n2")):
        mb.add_node(n, position=(float(i), 0.0, 0.0))
        mb.add_body(f"r{i}", n, 1.0, com=(0.5, 0.0, 0.0), inertia=np.diag([0.0, 1 / 12, 1 / 12]))
    mb.add_joint("p1", "revolute", "ground", "n1", point=(0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0))
    mb.add_joint("p2", "revolute", "n1", "n2", point=(1.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0))
    return mb.compile()


def _chain(n: int) -> fm.Model:
    mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    parent = "ground"
    for i in range(n):
        mb.add_node(f"n{i}", position=(0.1 * i, 0.0, 0.0))
        mb.add_body(f"l{i}", f"n{i}", 0.1, com=(0.05, 0.0, 0.0), inertia=np.diag([0.0, 1e-4 / 12, 1e-4 / 12]))
        mb.add_joint(f"j{i}", "revolute", parent, f"n{i}", point=(0.1 * i, 0.0, 0.0), axis=(0.0, 0.0, 1.0))
        parent = f"n{i}"
    return mb.compile()


def test_integrator_uses_the_tree_solver_for_rigid_trees_with_the_same_motion():
    """A falling 10-link chain: the tree factorization (default) and CHOLMOD give the same motion to
    the Newton tolerance (after 0.3 s, max |Δq| = 1.6e-7, 4.8e-9, 1.9e-11 rad at rtol 1e-8, 1e-10,
    1e-12: it scales with rtol); with the velocity tangent Newton needs fewer iterations (measured:
    2.9 instead of 4.4 per step over 1 s at rtol 1e-10); the simulation says which solver ran."""
    model = _chain(10)
    out = {}
    for solver in ("tree", "cholmod"):  # the factorization alone: without the position tangent
        integ = GeneralizedAlpha(model, rho_inf=0.8, linear_solver=solver, rtol=1e-12, position_tangent=False)
        st, _ = integ.initial_acceleration(model.initial_state())
        a = st.udot.copy()
        its = 0
        for _ in range(300):
            st, a, _, info = integ.step(st, a, 1e-3)
            its += info.iterations
        out[solver] = (st, its, integ)
    (st_t, it_t, integ_t), (st_c, it_c, integ_c) = out["tree"], out["cholmod"]
    assert isinstance(integ_t.chol, TreeSolver) and isinstance(integ_c.chol, SparseCholesky)
    assert np.abs(st_t.q - st_c.q).max() < 1e-10 and np.abs(st_t.u - st_c.u).max() < 1e-8
    assert it_t < 0.8 * it_c
    res = fm.simulate(model, 0.01, 1e-3)
    assert res.stats["tree_solver"] == 1.0 and res.stats["symbolic_analyses"] == 0.0


def test_models_with_elements_between_nodes_take_the_dense_factor_or_cholmod():
    """Not a rigid tree: the dense factor while small (13 unknowns here), CHOLMOD when asked for."""
    mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    nodes = mb.add_flexible_link("link", (0.0, 0.0, 0.0), (1.0, 0.0, 0.0), 2,
                                 fm.BeamSection(2e11, 8e10, 1e-4, 1e-9, 1e-9, 2e-9, 7800.0))
    mb.add_joint("pin", "revolute", "ground", nodes[0], axis=(0.0, 0.0, 1.0))
    model = mb.compile()
    res = fm.simulate(model, 0.005, 1e-3)
    assert res.stats["tree_solver"] == 0.0 and res.stats["dense_solver"] == 1.0 and res.stats["symbolic_analyses"] == 0.0
    res = fm.simulate(model, 0.005, 1e-3, linear_solver="cholmod")
    assert res.stats["tree_solver"] == 0.0 and res.stats["dense_solver"] == 0.0 and res.stats["symbolic_analyses"] == 1.0
    with pytest.raises(SettingsError, match="beam elements"):
        GeneralizedAlpha(model, linear_solver="tree")
