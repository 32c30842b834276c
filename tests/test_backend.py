"""The sparse backend is CHOLMOD (scikit-sparse), with one symbolic analysis per simulation; the
numeric factor is refreshed every step or reused over steps while Newton converges fast (DESIGN §4).
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
    res = simulate(model, t_end=0.2, dt=1e-3, reuse_factor=False)
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
    every = simulate(model, t_end=0.5, dt=1e-3, rho_inf=0.9, reuse_factor=False)
    reused = simulate(model, t_end=0.5, dt=1e-3, rho_inf=0.9, reuse_factor=True)
    assert reused.status == "finished"
    assert reused.stats["symbolic_analyses"] == 1
    assert reused.stats["factorizations"] < 0.5 * every.stats["factorizations"]
    # same steps, same residual tolerance: the same trajectory up to the Newton tolerance
    assert np.abs(reused.q - every.q).max() < 1e-9
