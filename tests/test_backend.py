"""The sparse backend is CHOLMOD (scikit-sparse), with one symbolic analysis per simulation and a
numeric refactorization per time step (DESIGN §4)."""

import importlib

import numpy as np

import flexmb as fm
import flexmb.linalg
from flexmb.simulate import simulate


def double_pendulum() -> fm.Model:
    mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    mb.add_node("n1", position=(0, 0, 0))
    mb.add_node("n2", position=(1, 0, 0))
    for n in ("n1", "n2"):
        mb.add_body(f"rod_{n}", node=n, mass=1.0, com=(0.5, 0, 0), inertia=np.diag([0, 1 / 12, 1 / 12]))
    mb.add_joint("j1", "revolute", parent="ground", child="n1", point=(0, 0, 0), axis=(0, 0, 1), q0=0.3)
    mb.add_joint("j2", "revolute", parent="n1", child="n2", point=(1, 0, 0), axis=(0, 0, 1), u0=1.0)
    return mb.compile()


def test_backend_is_cholmod():
    assert flexmb.linalg.BACKEND == "cholmod"
    cholmod = importlib.import_module("sksparse.cholmod")
    assert hasattr(cholmod, "analyze")
    assert flexmb.linalg.require_cholmod() is cholmod


def test_one_symbolic_analysis_and_one_factorization_per_step():
    model = double_pendulum()
    before = flexmb.linalg.symbolic_analysis_count()
    res = simulate(model, t_end=0.2, dt=1e-3)
    after = flexmb.linalg.symbolic_analysis_count()
    assert res.status == "finished"
    assert res.stats["steps"] == 200
    assert res.stats["symbolic_analyses"] == 1
    assert after - before == 1
    # at least one numeric refactorization per step (plus the initial-acceleration solve)
    assert res.stats["factorizations"] >= 200
