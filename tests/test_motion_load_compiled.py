"""Loads of the motion f(t, x, R, v, w) and follower loads in the compiled steps (flexmb/solvers/motion_load_step.py,
docs/motion_forces.md §8) against the Python Newton loop they replace:

* a pendulum under a quadratic drag, a body held by a PD position controller (force and moment, a target moving in
  time), the same controller sampled, and a beam whose tip carries a follower load: the run with the compiled
  element step is the Python run bit for bit (every row, the step history, the energies, the counters: Newton's
  iterations equal), on the dense, band and CHOLMOD factors;
* a rigid pendulum with a follower load: the compiled tree step is the Python tree loop bit for bit;
* the compiled tangent of the PD load is its hand-derived one (K = kp I, C = kd I, the moment's C = kr I), and the
  drag's is the complex step of its closed form c (|v| I + v vᵀ / |v|) to round-off;
* ``describe_solver()`` names the compiled path, and a load numba does not compile keeps the Python loop with the
  load and numba's error named;
* the energy balance closes: kinetic + potential - load work stays constant to the trapezoid rule's error.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from test_element_step import _both, _compiled
from test_tree_run import _assert_same

import flexmb as fm
from flexmb.solvers.generalized_alpha import GeneralizedAlpha
from flexmb.solvers.tree_step import TreeStep

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from motion_load_models import KD, KP, KR, drag_pendulum, follower_beam, follower_pendulum, pd_body  # noqa: E402


def _balance(res: fm.Result) -> float:
    """The largest drift of kinetic + potential + dissipated - drive work - load work over the rows."""
    total = res.total_energy
    return float(np.abs(total - total[0]).max())


@pytest.mark.parametrize("solver", ["dense", "band", "cholmod"])
@pytest.mark.parametrize("build, t_end", [(drag_pendulum, 0.4), (pd_body, 0.3), (lambda: pd_body(0.01), 0.3),
                                          (follower_beam, 0.2)], ids=["drag", "pd", "pd_sampled", "follower_beam"])
def test_the_compiled_element_step_is_the_python_step_bit_for_bit(monkeypatch, build, t_end, solver) -> None:
    model = build()
    fast, slow, count = _both(monkeypatch, model, t_end, 1e-3, output_every=5, linear_solver=solver)
    _assert_same(fast, slow)  # every row, the step history (Newton's iterations per step), energies, counters
    assert fast.status == "finished"
    _compiled(fast, count, solver)
    if model.elements["motion_load"].n:
        np.testing.assert_array_equal(fast.motion_loads, slow.motion_loads)
        assert np.abs(fast.motion_loads[:, :, :6]).max() > 0.0  # the loads acted
    # the energy balance: the trapezoid rule's error on the work, far below the energy exchanged
    e = fast.energy
    scale = np.abs(e["kinetic"]).max() + np.abs(e["potential"] - e["potential"][0]).max() + np.abs(e["load_work"]).max()
    assert _balance(fast) < 2e-3 * scale


def test_the_compiled_tree_step_takes_follower_loads_bit_for_bit(monkeypatch) -> None:
    """A rigid tree with a follower load takes the compiled tree step and its fixed-step runs the whole-run call (the
    loads' values at every step's end evaluated before it: tree_run.follower_values); the Python tree loop gives the
    same bits."""
    model = follower_pendulum()
    integ = GeneralizedAlpha(model)
    assert integ.chol.kind == "tree" and integ.tree_step is not None
    assert "whole runs compiled between output rows" in integ.describe_solver(fixed_steps=True, callback=False)
    fast = fm.simulate(model, 0.5, 1e-3, output_every=10)
    with monkeypatch.context() as mp:
        mp.setattr(TreeStep, "applies", staticmethod(lambda model, asm: False))
        slow = fm.simulate(model, 0.5, 1e-3, output_every=10)
    _assert_same(fast, slow)
    assert fast.status == "finished"
    e = fast.energy
    assert np.abs(e["load_work"]).max() > 0.1  # the thrust worked
    assert _balance(fast) < 2e-3 * (np.abs(e["kinetic"]).max() + np.abs(e["load_work"]).max())


def _last_evaluation(model: fm.Model) -> tuple:
    """The compiled element step's evaluation after 20 steps of 1 ms (its loads of the motion) and the state."""
    integ = GeneralizedAlpha(model, linear_solver="dense")
    assert integ.element_step is not None
    from flexmb.solvers.initial import relaxed_start

    st, _ = integ.initial_acceleration(relaxed_start(model)[0])
    a = st.udot.copy()
    for _ in range(20):
        st, a, ev, _ = integ.step(st, a, 1e-3)
    ev = integ.element_step.evaluation()
    return ev.elements["motion_load"], ev.kin, st


def test_the_compiled_tangents_are_the_hand_derived_ones() -> None:
    """PD: K = kp I on (x, x), C = kd I on (v, v) and kr I on (w, w), zero elsewhere, exactly (the complex step of
    a linear function). Drag -c s v, s = sqrt(|v|² + ε): C = c (s I + v vᵀ / s), to round-off of its entries."""
    fe, kin, _ = _last_evaluation(pd_body())
    K, C = fe.K[0], fe.C[0]
    Kx, Cx = np.zeros((6, 6)), np.zeros((6, 6))
    Kx[:3, :3] = KP * np.eye(3)
    Cx[:3, :3], Cx[3:, 3:] = KD * np.eye(3), KR * np.eye(3)
    np.testing.assert_array_equal(K, Kx)
    np.testing.assert_array_equal(C, Cx)
    c = 0.8
    fe, kin, _ = _last_evaluation(drag_pendulum(c))
    tip = 1
    v = kin.V[tip, :3]
    s = np.sqrt(v @ v + 1e-12)
    assert s > 0.05  # moving: the tangent is not the one at rest
    expect = c * (s * np.eye(3) + np.outer(v, v) / s)
    np.testing.assert_allclose(fe.C[0][:3, :3], expect, rtol=0, atol=8 * np.finfo(float).eps * np.abs(expect).max())
    np.testing.assert_array_equal(fe.K[0], 0.0)
    np.testing.assert_array_equal(fe.F[0][:3], -c * s * v)


def test_the_path_is_named_and_a_load_numba_does_not_compile_is_named() -> None:
    for model in (drag_pendulum(), pd_body(), follower_beam()):
        how = GeneralizedAlpha(model, linear_solver="dense").describe_solver()
        assert "each step's whole Newton loop in one compiled call" in how, how

    class Gain:  # a Python object: numba cannot type it
        k = 2.0

    gain = Gain()
    mb = fm.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    mb.add_node("b", position=(0.0, 0.0, 0.0))
    mb.add_body("b", node="b", mass=1.0, com=(0.0, 0.0, 0.0), inertia=np.eye(3))
    mb.add_joint("j", "free", "ground", "b")
    mb.add_load("odd", "b", lambda t, x, R, v, w: -gain.k * v)
    integ = GeneralizedAlpha(mb.compile())
    assert integ.element_step is None
    how = integ.describe_solver()
    assert "load of the motion 'odd' does not compile with numba (TypingError" in how, how
