"""The sparse backend is CHOLMOD (scikit-sparse), with one symbolic analysis per simulation; the
numeric factor is refreshed every step or reused over steps while Newton converges fast (docs/equations_of_motion.md §4).
Rigid trees use the O(n) tree factorization instead (tests/test_tree_solver.py): the double
pendulum here carries a soft bushing between its rods, so CHOLMOD runs."""

import importlib

import numpy as np

import flexmb as fm
import flexmb.engine.linalg
from flexmb.solvers.simulate import simulate


def double_pendulum() -> fm.Model:
    mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    mb.add_node("n1", position=(0, 0, 0))
    mb.add_node("n2", position=(1, 0, 0))
    for n in ("n1", "n2"):
        mb.add_body(f"rod_{n}", node=n, mass=1.0, com=(0.5, 0, 0), inertia=np.diag([0, 1 / 12, 1 / 12]))
    mb.add_joint("j1", "revolute", parent="ground", child="n1", point=(0, 0, 0), axis=(0, 0, 1), q0=0.3)
    mb.add_joint("j2", "revolute", parent="n1", child="n2", point=(1, 0, 0), axis=(0, 0, 1), u0=1.0)
    # a soft bushing between the rods (an element joining two nodes), so CHOLMOD factorizes
    mb.add_bushing("soft", "n1", "n2", stiffness=np.diag([1.0, 1.0, 1.0, 0.1, 0.1, 0.1]), point=(1, 0, 0))
    return mb.compile()


def test_backend_is_cholmod():
    assert flexmb.engine.linalg.BACKEND == "cholmod"
    cholmod = importlib.import_module("sksparse.cholmod")
    assert hasattr(cholmod, "analyze")
    assert flexmb.engine.linalg.require_cholmod() is cholmod


def test_one_symbolic_analysis_per_simulation():
    model = double_pendulum()
    before = flexmb.engine.linalg.symbolic_analysis_count()
    res = simulate(model, t_end=0.2, dt=1e-3, reuse_factor=False, linear_solver="cholmod")
    after = flexmb.engine.linalg.symbolic_analysis_count()
    assert res.status == "finished"
    assert res.stats["steps"] == 200
    assert res.stats["tree_solver"] == 0.0
    assert res.stats["symbolic_analyses"] == 1
    assert after - before == 1
    # without reuse: a numeric refactorization in every step (plus the initial-acceleration solve)
    assert res.stats["factorizations"] >= 201


def test_reusing_the_factor_across_steps_gives_the_same_motion_with_fewer_factorizations():
    model = double_pendulum()
    every = simulate(model, t_end=0.5, dt=1e-3, rho_inf=0.9, reuse_factor=False, linear_solver="cholmod")
    reused = simulate(model, t_end=0.5, dt=1e-3, rho_inf=0.9, reuse_factor=True, linear_solver="cholmod")
    assert reused.status == "finished"
    assert reused.stats["symbolic_analyses"] == 1
    assert reused.stats["factorizations"] < 0.5 * every.stats["factorizations"]
    # same steps, same residual tolerance: the same trajectory up to the Newton tolerance
    assert np.abs(reused.q - every.q).max() < 1e-9


def test_values_written_into_the_persistent_matrix_factorize_like_a_new_matrix():
    """The integrator writes S's values straight into SparseCholesky.values (its one persistent matrix
    on the analysed pattern) and refactorizes that: the solves equal those of the sparse matrix
    assembled anew (bit for bit) and of a dense solve, step after step with changing values."""
    from flexmb.engine.assembly import Assembler
    from flexmb.engine.linalg import SparseCholesky

    model = double_pendulum()
    asm = Assembler(model)
    free = model.free_u
    chol, fresh = SparseCholesky(asm.structural_pattern(free)), SparseCholesky(asm.structural_pattern(free))
    values = chol.values
    st = model.initial_state()
    diag = np.zeros(free.size)
    rhs = np.arange(1.0, free.size + 1)
    for k in range(3):
        st.q[:] = 0.4 * k + 0.1
        ev = asm.evaluate(st)
        gp, bp = 1e-3 * (k + 1), 1e-6 * (k + 1)
        S = asm.iteration_matrix(ev, free, gp, bp, diag)
        assert asm.iteration_matrix(ev, free, gp, bp, diag, out=chol.values) is values  # written in place
        chol.factorize()
        fresh.factorize(S)
        x = chol.solve(rhs)
        assert np.array_equal(x, fresh.solve(rhs))
        assert np.abs(S.toarray() @ x - rhs).max() <= 1e-12 * np.abs(rhs).max()
    assert chol.values is values and chol.n_factorize == 3
