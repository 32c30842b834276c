"""Fixed steps of a rigid tree between output rows in one compiled call (flexmb/solvers/tree_run.py)
against the same run step by step in Python: every row, every entry of the step history, the
energy balance (work integrals included) and the run's counters equal bit for bit, also where
steps are halved, where the last step is shortened, and where the run fails (same message)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_tree_step import chain, featured_tree, free_body

import flexmb as fm
from flexmb.solvers import tree_run
from flexmb.solvers.tree_run import TreeRun

COUNTERS = ("steps", "substeps", "min_step", "max_step", "mean_step", "rejected_steps", "failed_steps", "newton_iterations",
            "factorizations")


def _both(monkeypatch, model: fm.Model, *args, **kw) -> tuple[fm.Result, fm.Result, list[int]]:
    """The run with the compiled steps, the run without, and the number of steps of each compiled call."""
    calls: list[int] = []
    original = TreeRun.run

    def counting(self, st, a, dt, n):
        out = original(self, st, a, dt, n)
        calls.append(len(out[3]))
        return out
    with monkeypatch.context() as mp:
        mp.setattr(TreeRun, "run", counting)
        fast = fm.simulate(model, *args, **kw)
    with monkeypatch.context() as mp:
        mp.setattr(TreeRun, "applies", staticmethod(lambda integ, callback: False))
        slow = fm.simulate(model, *args, **kw)
    return fast, slow, calls


def _assert_same(fast: fm.Result, slow: fm.Result) -> None:
    assert fast.status == slow.status
    for name in ("t", "q", "u", "udot", "x", "R", "twists", "drive_forces", "reactions", "newton_iterations"):
        np.testing.assert_array_equal(getattr(fast, name), getattr(slow, name), err_msg=name)
    for key in ("kinetic", "potential", "dissipated", "drive_work", "load_work"):
        np.testing.assert_array_equal(fast.energy[key], slow.energy[key], err_msg=key)
    for col in ("t", "h", "iterations", "error", "status"):
        np.testing.assert_array_equal(fast.steps[col], slow.steps[col], err_msg=col)
    for key in COUNTERS:
        assert fast.stats[key] == slow.stats[key], key


@pytest.mark.parametrize("build, t_end, dt, every", [
    (featured_tree, 0.5, 2e-3, 25),  # drive, springs, dampers, joint force, time-varying load, ball joint
    (featured_tree, 0.1013, 2e-3, 1),  # a row every step, and a shortened last step
    (lambda: chain(10), 0.3, 1e-3, 7),  # rows not on a multiple of the call's length
    (free_body, 1.0, 5e-3, 1000),  # one row at the end: calls of at most MAX_STEPS
], ids=["featured", "featured_every_step", "chain10", "free_body"])
def test_the_compiled_run_is_the_python_run_bit_for_bit(monkeypatch, build, t_end, dt, every) -> None:
    model = build()
    fast, slow, calls = _both(monkeypatch, model, t_end, dt, output_every=every)
    _assert_same(fast, slow)
    assert fast.status == "finished"
    n_steps = math.ceil(t_end / dt - 1e-9)
    assert sum(calls) == n_steps - 1  # every step but the last (Python: it may be shortened) in compiled calls
    limit = min(tree_run.MAX_STEPS, tree_run.MAX_COORDINATE_STEPS // model.n_u)
    assert max(calls) == min(every, limit, n_steps - 1)
    # the energy balance of the recorded rows holds: the work integrals are the physics, not only the same bits
    e = fast.energy
    total = e["kinetic"] + e["potential"] + e["dissipated"] - e["drive_work"] - e["load_work"]
    assert np.abs(total - total[0]).max() < 2e-3 * (np.abs(e["kinetic"]).max() + np.abs(e["potential"]).max())


def test_halved_steps_leave_the_compiled_call_and_come_back(monkeypatch) -> None:
    """Steps of 0.02 s on a falling 10-link chain fail in Newton and are halved: the compiled call
    stops there, the Python step halves it, and the next call goes on; the same run bit for bit."""
    fast, slow, calls = _both(monkeypatch, chain(10), 1.0, 0.02, output_every=5)
    _assert_same(fast, slow)
    assert fast.stats["failed_steps"] > 10 and fast.stats["substeps"] > fast.stats["steps"]
    assert 0 in calls or min(calls) < 4  # some calls stopped early at a failing step
    assert sum(calls) > 10  # and others took steps


def test_a_failure_in_the_compiled_call_gives_the_python_message(monkeypatch) -> None:
    """A joint force that turns infinite at t > 0.05: the run ends at the same step with the same
    message, its rows before it the same."""
    mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    mb.add_node("a", position=(0, 0, 0))
    mb.add_body("a_body", node="a", mass=1.0, com=(0.5, 0, 0), inertia=np.diag([1e-3, 1 / 12, 1 / 12]))
    mb.add_joint("ja", "revolute", parent="ground", child="a", point=(0, 0, 0), axis=(0, 0, 1))
    mb.add_joint_force("ja", lambda t: math.inf if t > 0.05 else 1.0)
    fast, slow, calls = _both(monkeypatch, mb.compile(), 0.2, 1e-3, output_every=10)
    _assert_same(fast, slow)
    assert fast.status.startswith("failed") and "non-finite" in fast.status
    # the step ending at 0.05 (+ round-off: past it) fails; the last row is the one before it
    assert "joint spring/force on coordinate 'ja.q'" in fast.status and fast.t[-1] == pytest.approx(0.04)
    assert sum(calls) == 49 and calls[-1] == 9  # 49 steps compiled, the call stopped there, the failing one to Python


def test_runs_with_a_callback_stay_in_python(monkeypatch) -> None:
    """A callback sees every step's state: no compiled calls then."""
    seen: list[float] = []

    def callback(st, ev):
        seen.append(st.t)
    fast, slow, calls = _both(monkeypatch, chain(3), 0.05, 1e-3, output_every=10, callback=callback)
    assert calls == [] and len(seen) == 2 * 50
    _assert_same(fast, slow)


def test_calls_of_a_large_tree_stay_short(monkeypatch) -> None:
    """Steps x coordinates per call are bounded (Ctrl-C and progress are seen between calls): with the
    bound at 400 a 10-link chain takes 40 steps per call, and the run is the same."""
    monkeypatch.setattr(tree_run, "MAX_COORDINATE_STEPS", 400)
    fast, slow, calls = _both(monkeypatch, chain(10), 0.2, 1e-3, output_every=1000)
    _assert_same(fast, slow)
    assert max(calls) == 40 and sum(calls) == 199


def test_follower_loads_run_compiled_bit_for_bit(monkeypatch) -> None:
    """benchmarks/motion_load_models.py's rigid double pendulum with a follower thrust in its second link's axes: the
    thrust's values at every step's end evaluated before the call (tree_run.follower_values), turned per iterate
    inside it; the same run as step by step, the load work included; the work balances the energy."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from motion_load_models import follower_pendulum

    from flexmb.solvers.generalized_alpha import GeneralizedAlpha

    model = follower_pendulum()
    assert TreeRun.applies(GeneralizedAlpha(model), None)
    fast, slow, calls = _both(monkeypatch, model, 0.5, 1e-3, output_every=10)
    _assert_same(fast, slow)
    assert fast.status == "finished" and sum(calls) == 499
    e = fast.energy
    assert np.abs(e["load_work"]).max() > 0.1  # the thrust worked
    total = e["kinetic"] + e["potential"] + e["dissipated"] - e["drive_work"] - e["load_work"]
    assert np.abs(total - total[0]).max() < 2e-3 * (np.abs(e["kinetic"]).max() + np.abs(e["load_work"]).max())
