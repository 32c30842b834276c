"""Fixed steps of a model of bodies, beams and bushings between output rows in one compiled call
(flexmb/solvers/element_run.py) against the same run step by step (one compiled Newton loop per
step, the Python step around it): every row, every entry of the step history, the energy balance
(work integrals and the elements' dissipation included) and the run's counters equal bit for bit,
also where steps are halved, where the last step is shortened, and where the run fails (same
message)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from cut_mechanisms import n_four_bar
from test_tree_run import COUNTERS

import flexmb as fm
from flexmb.solvers import element_run
from flexmb.solvers.element_run import ElementRun
from flexmb.solvers.generalized_alpha import GeneralizedAlpha


def _both(monkeypatch, model: fm.Model, *args, **kw) -> tuple[fm.Result, fm.Result, list[int]]:
    """The run with the compiled run, the run without, and the number of steps of each compiled call."""
    calls: list[int] = []
    original = ElementRun.run

    def counting(self, st, a, dt, n):
        out = original(self, st, a, dt, n)
        calls.append(len(out[3]))
        return out
    with monkeypatch.context() as mp:
        mp.setattr(ElementRun, "run", counting)
        fast = fm.simulate(model, *args, **kw)
    with monkeypatch.context() as mp:
        mp.setattr(ElementRun, "applies", staticmethod(lambda integ, callback: False))
        slow = fm.simulate(model, *args, **kw)
    return fast, slow, calls


def _assert_same(fast: fm.Result, slow: fm.Result) -> None:
    assert fast.status == slow.status
    for name in ("t", "q", "u", "udot", "x", "R", "twists", "drive_forces", "reactions", "newton_iterations", "cut_forces"):
        np.testing.assert_array_equal(getattr(fast, name), getattr(slow, name), err_msg=name)
    for key in ("kinetic", "potential", "strain", "dissipated", "drive_work", "load_work"):
        np.testing.assert_array_equal(fast.energy[key], slow.energy[key], err_msg=key)
    for col in ("t", "h", "iterations", "error", "status"):
        np.testing.assert_array_equal(fast.steps[col], slow.steps[col], err_msg=col)
    for key in COUNTERS:
        assert fast.stats[key] == slow.stats[key], key


def bushing_loop(n: int = 3) -> fm.Model:
    """An n-window four-bar chain closed by default-damped bushings (tests/cut_mechanisms.py)."""
    return n_four_bar(n, cut="elastic", k=1e8)


def beam_loop(driven: bool = True, push=lambda t: (0.0, -5.0 * np.sin(20 * t), 0.0)) -> fm.Model:
    """A crank-rocker whose coupler is a damped flexible beam, a bushing at the rocker; the crank
    driven (or free), a nodal load on the coupler: drives, loads, beams and bushings in one run."""
    sec = fm.BeamSection(2.1e11, 8.1e10, 1e-4, 1e-9, 1e-9, 2e-9, 7800.0)
    mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    mb.add_node("crank", (0.0, 0.0, 0.0))
    mb.add_body("crank", "crank", 1.0, (0.0, 0.1, 0.0), np.diag([1e-3, 1e-3, 1e-3]))
    mb.add_joint("O", "revolute", "ground", "crank", axis=(0, 0, 1))
    nodes = mb.add_flexible_link("coupler", (0.0, 0.2, 0.0), (0.5, 0.3, 0.0), 4, sec, damping=1e-4)
    mb.add_joint("A", "revolute", "crank", nodes[0], point=(0.0, 0.2, 0.0), axis=(0, 0, 1))
    mb.add_node("rocker", (0.5, 0.0, 0.0))
    mb.add_body("rocker", "rocker", 1.0, (0.0, 0.15, 0.0), np.diag([1e-3, 1e-3, 1e-3]))
    mb.add_joint("D", "revolute", "ground", "rocker", point=(0.5, 0.0, 0.0), axis=(0, 0, 1))
    mb.add_bushing("B", nodes[-1], "rocker", stiffness=[1e7] * 6, point=(0.5, 0.3, 0.0), free_rotation="z")
    if driven:
        mb.add_drive("O", lambda t: 2.0 * t**2)
    mb.add_load("push", nodes[2], force=push)
    return mb.compile()


@pytest.mark.parametrize("build, solver, t_end, dt, every", [
    (bushing_loop, "auto", 0.3, 1e-3, 25),  # bushings: their dissipation in the work integrals
    (lambda: bushing_loop(12), "band", 0.1013, 1e-3, 1),  # the band factor, a row every step, a shortened last step
    (beam_loop, "auto", 0.2, 5e-4, 7),  # beams, a drive, a nodal load; rows not on a multiple of the call's length
    (lambda: beam_loop(False), "band", 0.1, 1e-3, 1000),  # one row at the end
], ids=["bushings", "band_every_step", "beam_drive_load", "beam_band_one_row"])
def test_the_compiled_run_is_the_python_run_bit_for_bit(monkeypatch, build, solver, t_end, dt, every) -> None:
    model = build()
    fast, slow, calls = _both(monkeypatch, model, t_end, dt, output_every=every, linear_solver=solver)
    assert fast.status == "finished"
    _assert_same(fast, slow)
    assert calls and sum(calls) >= fast.stats["steps"] - len(fast.t)  # the compiled calls took the steps between rows


def test_the_compiled_run_applies_to_loops_of_bushings_not_to_rigid_cuts_or_callbacks() -> None:
    """What takes the compiled run: bushing and beam models on the dense or band factor without a
    callback; rigid cuts (projections in Python), CHOLMOD and a callback take one step per call."""
    integ = GeneralizedAlpha(bushing_loop())
    assert ElementRun.applies(integ, None) and not ElementRun.applies(integ, lambda st, ev: None)
    assert not ElementRun.applies(GeneralizedAlpha(bushing_loop(), linear_solver="cholmod"), None)
    assert not ElementRun.applies(GeneralizedAlpha(n_four_bar(2, cut="rigid")), None)


def test_halved_steps_leave_the_compiled_call_and_come_back(monkeypatch) -> None:
    """Steps of 0.02 s on the beam coupler: some fail (Newton, or a matrix that is not positive
    definite without dropping the geometric stiffness), the call stops there, the Python step halves
    them or drops that stiffness, the next call starts after it; the same run bit for bit."""
    fast, slow, calls = _both(monkeypatch, beam_loop(), 0.5, 2e-2, output_every=5, max_halvings=8)
    assert fast.status == "finished" and fast.stats["substeps"] > fast.stats["steps"]  # some steps were halved
    _assert_same(fast, slow)
    assert len(calls) >= 2 and min(calls) < 5  # calls stopped before their row


def test_a_failure_in_the_compiled_call_gives_the_python_message(monkeypatch) -> None:
    """A nodal load that turns infinite at t > 0.05: the run ends at the same step with the same
    message, its rows before it the same."""
    model = beam_loop(push=lambda t: (0.0, math.inf if t > 0.05 else -5.0, 0.0))
    fast, slow, calls = _both(monkeypatch, model, 0.2, 1e-3, output_every=10)
    _assert_same(fast, slow)
    assert fast.status.startswith("failed") and "non-finite" in fast.status and "push" in fast.status
    assert fast.t[-1] == pytest.approx(0.04)  # the step ending at 0.05 (+ round-off: past it) fails
    assert sum(calls) == 49 and calls[-1] == 9  # 49 steps compiled, the call stopped there, the failing one to Python


def test_calls_stay_short(monkeypatch) -> None:
    """At most MAX_COORDINATE_STEPS steps x coordinates per call (Ctrl-C and progress between calls)."""
    monkeypatch.setattr(element_run, "MAX_COORDINATE_STEPS", 400)
    model = bushing_loop()
    fast, slow, calls = _both(monkeypatch, model, 0.2, 1e-3, output_every=1000)
    _assert_same(fast, slow)
    assert max(calls) == 400 // model.n_u


@pytest.mark.parametrize("every", [1, 3])
def test_ctrl_c_after_a_reported_step_finds_its_row_recorded(tmp_path, every) -> None:
    """Ctrl-C right after the progress reports a time (what tests/test_cli.py's Ctrl-C test does to
    `flexmb run`): the streamed run holds the row of that time when it is an output row. The compiled
    call's row is recorded before its steps are reported, as on the Python path."""
    reported: list[float] = []

    def progress(t: float, iterations: int) -> None:
        reported.append(t)
        if len(reported) == every:
            raise KeyboardInterrupt
    model = beam_loop()
    assert ElementRun.applies(GeneralizedAlpha(model), None)
    with pytest.raises(KeyboardInterrupt):
        fm.simulate(model, 0.1, 1e-3, output_every=every, out=tmp_path / "run", progress=progress)
    res = fm.load(tmp_path / "run")
    assert res.status == "interrupted"
    assert len(res.t) == 2 and res.t[-1] == pytest.approx(reported[-1], abs=1e-12)
