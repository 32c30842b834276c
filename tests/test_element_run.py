"""Fixed steps of a model of bodies, beams and bushings, or of bodies and rigid cuts, between output
rows in one compiled call (flexmb/solvers/element_run.py, flexmb/solvers/cut_projection.py) against
the same run step by step (one compiled Newton loop per step, the Python step around it, the rigid
cuts' projections in Python): every row, every entry of the step history, the energy balance (work
integrals and the elements' dissipation included) and the run's counters equal bit for bit, also
where steps are halved, where the last step is shortened, and where the run fails (same message)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from cut_mechanisms import GRASHOF, Z, four_bar, n_four_bar, rocker_angle, rod_inertia, slider_crank
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


def beam_loop(driven: bool = True, push=lambda t: (0.0, -5.0 * np.sin(20 * t), 0.0), rigid: bool = False) -> fm.Model:
    """A crank-rocker whose coupler is a damped flexible beam, a bushing at the rocker (``rigid``: a
    rigid cut); the crank driven (or free), a nodal load on the coupler: drives, loads, beams and
    bushings in one run."""
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
    if rigid:
        mb.add_rigid_cut("B", nodes[-1], "rocker", point=(0.5, 0.3, 0.0), free_rotation="z")
    else:
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
    (beam_loop, "dense", 0.02, 5e-4, 1),  # a row every step: one-step calls, the rows' reactions from the step's wrenches
], ids=["bushings", "band_every_step", "beam_drive_load", "beam_band_one_row", "beam_every_step"])
def test_the_compiled_run_is_the_python_run_bit_for_bit(monkeypatch, build, solver, t_end, dt, every) -> None:
    model = build()
    fast, slow, calls = _both(monkeypatch, model, t_end, dt, output_every=every, linear_solver=solver)
    assert fast.status == "finished"
    _assert_same(fast, slow)
    assert calls and sum(calls) >= fast.stats["steps"] - len(fast.t)  # the compiled calls took the steps between rows


def test_the_compiled_run_applies_to_loops_of_bushings_not_to_rigid_cuts_or_callbacks() -> None:
    """What takes the compiled run: bushing and beam models on the dense or band factor without a
    callback, and rigid cuts beside bodies, bushings, beams, joint springs and spring-dampers (their force
    laws too); CHOLMOD and a callback take one step per call."""
    integ = GeneralizedAlpha(bushing_loop())
    assert ElementRun.applies(integ, None) and not ElementRun.applies(integ, lambda st, ev: None)
    assert not ElementRun.applies(GeneralizedAlpha(bushing_loop(), linear_solver="cholmod"), None)
    assert ElementRun.applies(GeneralizedAlpha(n_four_bar(2, cut="rigid")), None)
    assert not ElementRun.applies(GeneralizedAlpha(n_four_bar(2, cut="rigid"), linear_solver="cholmod"), None)
    assert ElementRun.applies(GeneralizedAlpha(mixed_loop()), None)  # a bushing beside the rigid cut
    assert ElementRun.applies(GeneralizedAlpha(mixed_loop(spring=True)), None)  # a joint spring beside it
    assert ElementRun.applies(GeneralizedAlpha(beam_loop(rigid=True)), None)  # a beam beside it
    assert ElementRun.applies(GeneralizedAlpha(mixed_loop(spring_damper=True)), None)  # a spring-damper beside it
    assert ElementRun.applies(GeneralizedAlpha(mixed_loop(spring_damper=True, law=True)), None)  # a force law
    assert ElementRun.applies(GeneralizedAlpha(mixed_loop(rotational=True)), None)  # a rotational spring-damper


def _strut_law(l: float, ldot: float, t: float) -> float:
    """An asymmetric damper beside a spring of rest length 0.9 m whose stiffness grows in time (its force
    depends on l, l' and t; tanh as in cases/quarter_car.py's damper)."""
    return 50.0 * (1.0 + t) * (l - 0.9) + 0.5 * ldot * (1.0 + 0.5 * math.tanh(ldot / 0.1))


def mixed_loop(spring: bool = False, spring_damper: bool = False, law: bool = False, rotational: bool = False
               ) -> fm.Model:
    """A four-bar (tests/cut_mechanisms.py, four_bar) closed by a rigid cut with a torsional bushing
    from the ground to the rocker (or, ``spring``, a damped spring on the crank's joint, or, ``spring_damper``,
    a spring-damper from the ground to the coupler, with ``law`` a force law, or, ``rotational``, a torsion
    spring-damper about z from the ground to the rocker): the cut's projection takes its own factor
    (rigid_cut._elastic)."""
    a, b, c, d = GRASHOF
    th0 = 1.0
    A = np.array([a * np.cos(th0), a * np.sin(th0), 0.0])
    th4 = rocker_angle(th0, a, b, c, d)
    B = np.array([d + c * np.cos(th4), c * np.sin(th4), 0.0])
    O4 = np.array([d, 0.0, 0.0])
    mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    for name, at, tip in (("crank", np.zeros(3), A), ("coupler", A, B), ("rocker", O4, B)):
        mb.add_node(name, at)
        mb.add_body(name, name, 1.0, (tip - at) / 2, rod_inertia(1.0, float(np.linalg.norm(tip - at)), tip - at))
    mb.add_joint("O2", "revolute", "ground", "crank", point=(0, 0, 0), axis=Z)
    mb.add_joint("A", "revolute", "crank", "coupler", point=A, axis=Z)
    mb.add_joint("O4", "revolute", "ground", "rocker", point=O4, axis=Z)
    mb.add_rigid_cut("B", "coupler", "rocker", point=B, free_rotation="z")
    if spring_damper:  # from the ground to the coupler's middle
        kw = dict(force_law=_strut_law) if law else dict(stiffness=50.0, damping=0.5)
        mb.add_spring_damper("strut", "ground", "coupler", point_a=(0.5 * d, -0.5, 0.0), point_b=(A + B) / 2, **kw)
    elif spring:
        mb.add_joint_spring("O2", stiffness=2.0, damping=0.1)
    elif rotational:  # its reference angle (R3a) set at each step's end, its power at the projected state
        mb.add_rotational_spring_damper("twist", "ground", "rocker", axis=Z, stiffness=2.0, damping=0.1)
    else:
        mb.add_bushing("twist", "ground", "rocker", stiffness=[1e6] * 5 + [2.0], point=O4)
    return mb.compile()


def _drive(t: float) -> tuple[float, float, float]:
    return 2.0 * t * t, 4.0 * t, 4.0


@pytest.mark.parametrize("build, solver, t_end, dt, every", [
    (lambda: n_four_bar(3, cut="rigid"), "auto", 0.3, 1e-3, 25),  # the A02 N-four-bar, rigid cuts (dense factor)
    (lambda: n_four_bar(12, cut="rigid"), "band", 0.1013, 1e-3, 1),  # the band factor, a row every step, a short last step
    (lambda: four_bar("rigid", drive=(lambda t: _drive(t)[0], lambda t: _drive(t)[1], lambda t: _drive(t)[2])), "auto",
     0.3, 1e-3, 7),  # a driven rigid four-bar: drive forces of the converged iterate, drive work at the projected u
    (lambda: slider_crank("rigid", drive=(lambda t: 3.0 * t, lambda t: 3.0, lambda t: 0.0))[0], "auto", 0.2, 1e-3, 10),
    (mixed_loop, "auto", 0.3, 1e-3, 10),  # a bushing beside the cut: the projection's own factor, its dissipation
    (lambda: mixed_loop(spring=True), "band", 0.3, 1e-3, 10),  # a damped joint spring beside it, the band factor
    (lambda: mixed_loop(spring_damper=True), "auto", 0.3, 1e-3, 10),  # a spring-damper: its dissipation projected
    (lambda: mixed_loop(spring_damper=True, law=True), "band", 0.3, 1e-3, 1),  # a force law of (l, l', t)
    (lambda: mixed_loop(rotational=True), "auto", 0.3, 1e-3, 10),  # a rotational spring-damper: (R3a) in the call
    (lambda: beam_loop(rigid=True), "auto", 0.1, 5e-4, 7),  # a flexible coupler: beams' mass in the projection matrix,
    (lambda: beam_loop(False, rigid=True), "band", 0.05, 1e-3, 1),  # their dissipation at the projected state
], ids=["n_four_bar_rigid", "n_four_bar_rigid_band", "four_bar_driven", "slider_crank_load", "bushing_beside",
        "spring_beside_band", "spring_damper_beside", "force_law_beside_band", "rotational_beside", "beam_beside",
        "beam_beside_band"])
def test_rigid_cuts_run_compiled_bit_for_bit(monkeypatch, build, solver, t_end, dt, every) -> None:
    """Rigid cuts' begin and end of step (AL5-AL9 of docs/rigid_cut.md) inside the compiled run: the
    same rows, cut forces, steps, energy balance and counters (factorizations of the end steps
    included) as the per-step path with the projections in Python, with the Newton factor or, beside
    a bushing or a joint spring, the projection's own (rigid_cut._elastic)."""
    model = build()
    fast, slow, calls = _both(monkeypatch, model, t_end, dt, output_every=every, linear_solver=solver)
    assert fast.status == "finished"
    _assert_same(fast, slow)
    assert calls and sum(calls) >= fast.stats["steps"] - len(fast.t)


def test_rigid_cut_steps_halved_and_failing_leave_the_compiled_call(monkeypatch) -> None:
    """Steps of 0.02 s on the rigid four-bar: one fails, the call stops there, the Python step halves
    it, the next call goes on; a drive that turns infinite at t > 0.05 ends the run at the same step
    with the same message, the call stopping there."""
    fast, slow, calls = _both(monkeypatch, four_bar("rigid"), 0.5, 2e-2, output_every=5, max_halvings=8)
    assert fast.status == "finished" and fast.stats["substeps"] > fast.stats["steps"]
    _assert_same(fast, slow)
    assert len(calls) >= 2 and min(calls) < 5
    model = four_bar("rigid", drive=(lambda t: math.inf if t > 0.05 else t, lambda t: 1.0, lambda t: 0.0))
    fast, slow, calls = _both(monkeypatch, model, 0.2, 1e-3, output_every=10)
    _assert_same(fast, slow)
    assert fast.status.startswith("failed") and "non-finite" in fast.status
    assert sum(calls) == 49 and calls[-1] == 9


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


def test_an_end_step_that_refactorizes_is_the_python_one(monkeypatch) -> None:
    """The rigid four-bar from 2.5 rad in steps of 5 ms: at one step the accepted iterate raised a cut's
    penalty (AL11), so the Newton factor is not S's and the projections (AL5, AL6) refactorize it at
    the converged iterate first (newton_loop.accept's ``solve``), inside the compiled call too:
    the same run bit for bit, the factorization counted once."""
    counts = []
    original = element_run.element_run

    def capture(*args):
        done = original(*args)
        if args[-1] is not None:  # the call's own factorizations (the run's cut arrays, refilled for every call)
            counts.append(int(args[-1][1].key[7]))
        return done
    monkeypatch.setattr(element_run, "element_run", capture)
    fast, slow, calls = _both(monkeypatch, four_bar("rigid", th0=2.5), 1.0, 5e-3, output_every=20)
    assert fast.status == "finished"
    _assert_same(fast, slow)
    assert sum(counts) >= 1  # the end step's own factorization, in a compiled call


def test_a_row_every_step_keeps_the_call_arrays_of_rigid_cuts(monkeypatch) -> None:
    """With a row every step each compiled call takes one step: the cuts' arrays (cut_arrays) and the compiled
    structures of the step's model and buffers (new_step_args) are made once for the run and refilled per call,
    not made again (they were, every call: half the cost of a row); the run is still the Python one bit for bit."""
    from flexmb.solvers import step_args

    made = {"cut_arrays": 0, "new_step_args": 0}

    def counted(module, name):
        original = getattr(module, name)

        def count(*args):
            made[name] += 1
            return original(*args)
        monkeypatch.setattr(module, name, count)
    counted(element_run, "cut_arrays")
    counted(step_args, "new_step_args")
    fast, slow, calls = _both(monkeypatch, four_bar("rigid", th0=2.5), 0.2, 5e-3, output_every=1)
    _assert_same(fast, slow)
    assert len(calls) >= 30 and set(calls) == {1}  # a call per row
    assert made["cut_arrays"] == 1
    assert made["new_step_args"] <= 3  # the step's model and buffers, the slow run's model (per call before: 41)


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


def test_one_step_times_are_those_of_the_sums() -> None:
    """step_times of one step (floats, no arrays of sums) gives the times of the cumulative sums bit for bit,
    at times and steps that are not binary fractions, where t + dt - t is not dt."""
    rng = np.random.default_rng(7)
    for t, dt in [(0.0, 1e-3), (0.1, 0.3), (2.6 - 2e-3, 2e-3), *zip(rng.uniform(0, 50, 200), rng.uniform(1e-6, 1e-1, 200))]:
        times = np.cumsum(np.concatenate(([t], np.full(1, dt))))
        h = np.minimum(dt, times[1:] - times[:-1])
        np.testing.assert_array_equal(element_run.step_times(float(t), float(dt), 1),
                                      np.column_stack((h, times[:-1] + h, times[1:])))


def test_step_log_keeps_attempts_and_accepted_columns_in_order() -> None:
    """The step history's preallocated columns (recorder.StepLog) grow past their capacity and give back the
    entries in the order added, one by one or as columns, with STEP_COLUMNS' dtypes; a take empties them."""
    from flexmb.results.checks import STEP_COLUMNS
    from flexmb.solvers.recorder import StepLog

    log = StepLog(capacity=2)
    log.add(0.1, 0.1, 3, math.nan, 0)
    log.add(0.2, 0.1, -1, math.nan, 2)
    log.add_accepted(np.array([0.15, 0.2, 0.25]), np.full(3, 0.05), np.array([2, 2, 3]), np.array([1e-4, 2e-4, 3e-4]))
    log.add(0.3, 0.05, 4, 0.5, 1)
    assert len(log) == 6 and log.counts == [4, 1, 1]
    cols = log.take()
    assert {k: v.dtype.name for k, v in cols.items()} == STEP_COLUMNS
    np.testing.assert_array_equal(cols["t"], [0.1, 0.2, 0.15, 0.2, 0.25, 0.3])
    np.testing.assert_array_equal(cols["iterations"], [3, -1, 2, 2, 3, 4])
    np.testing.assert_array_equal(cols["status"], [0, 2, 0, 0, 0, 1])
    np.testing.assert_array_equal(cols["error"], [math.nan, math.nan, 1e-4, 2e-4, 3e-4, 0.5])
    assert len(log) == 0 and all(v.size == 0 for v in log.take().values())
    log.add(0.4, 0.1, 1, 0.0, 0)  # the columns are used again after a take
    np.testing.assert_array_equal(log.take()["t"], [0.4])


def test_rows_take_the_node_wrenches_the_step_formed(monkeypatch) -> None:
    """The evaluation a compiled call returns carries its accepted iterate's node wrenches (element_iterate's
    M (B u̇ + ζ) + bias + the beams' mass forces): equal bit for bit to those Evaluation.node_wrenches forms
    from its kinematics, masses and forces, and not used at other accelerations."""
    seen = []
    original = ElementRun.run

    def keep(self, st, a, dt, n):
        out = original(self, st, a, dt, n)
        if out[2] is not None:
            ev, udot = out[2], out[0].udot
            assert ev.wrenches_known is not None
            known = ev.node_wrenches(udot)
            ev.wrenches_known = None
            formed = ev.node_wrenches(udot)
            other = ev.node_wrenches(2.0 * udot + 1.0)
            ev.wrenches_known = (udot.copy(), known)
            seen.append((known, formed, other, ev.node_wrenches(2.0 * udot + 1.0)))
        return out
    monkeypatch.setattr(ElementRun, "run", keep)
    res = fm.simulate(beam_loop(), 0.01, 5e-4, output_every=1, linear_solver="dense")
    assert res.status == "finished" and len(seen) == res.stats["steps"] - 1  # the last step: the Python step's
    for known, formed, other, other_known in seen:
        np.testing.assert_array_equal(known, formed)
        np.testing.assert_array_equal(other_known, other)
        assert np.abs(other - formed).max() > 0.0


def test_one_step_count_is_that_of_the_arrays() -> None:
    """GeneralizedAlpha.note_element_steps of one step (no arrays made) counts as for several: steps,
    the smallest one, factorizations and the factor's (γ', β')."""
    model = beam_loop()
    one, many = GeneralizedAlpha(model), GeneralizedAlpha(model)
    for h, nfac in [(1e-3, 1), (5e-4, 0), (2.5e-4, 2), (1e-3, 0)]:
        one.note_element_steps(np.array([h]), np.array([nfac]))
        many.note_element_steps(np.array([h, h]), np.array([0, nfac]))
        many.substeps -= 1
    assert (one.substeps, one.min_step, one.chol.n_factorize, one._factor_key) == \
        (many.substeps, many.min_step, many.chol.n_factorize, many._factor_key)
    assert one._factor_key is not None and one.chol.n_factorize == 3


def wound_disk(law: bool = False, blow_up: float = math.inf) -> fm.Model:
    """tests/test_rotational_spring_damper_turns.py's disk driven through 2.5 turns by a torsion spring-damper to
    ground, a free wheel beside it; ``law``: the spring a torque law f(φ, φ', t) = k φ + c φ' + 0.2 sin φ + 0.01 t
    (its power f φ' depends on the angle, so on the reference angle of (R3) the step's end sets (R3a), and on the
    time) and the wheel tied to the disk by an isotropic element; the drive's angle infinite after ``blow_up``."""
    from test_rotational_spring_damper_turns import A, C, J, K, T

    mb = fm.ModelBuilder(gravity=(0, 0, 0))
    mb.add_node("d", (0.1, 0.2, 0.0))
    mb.add_body("d", "d", 1.0, (0.0, 0.0, 0.0), np.diag([0.1, 0.15, J]))
    mb.add_joint("O", "revolute", "ground", "d", axis=(0, 0, 1))
    mb.add_drive("O", lambda t: math.inf if t > blow_up else A * (3 * (t / T) ** 2 - 2 * (t / T) ** 3),
                 lambda t: A * (6 * t / T**2 - 6 * t**2 / T**3), lambda t: A * (6 / T**2 - 12 * t / T**3))
    mb.add_node("p", (1.0, 0.0, 0.0))
    mb.add_body("p", "p", 1.0, (0.0, 0.0, 0.0), np.eye(3) * 0.1)
    mb.add_joint("P", "revolute", "ground", "p", axis=(0, 0, 1), u0=0.5)
    if law:
        mb.add_rotational_spring_damper("rs", "ground", "d", axis=(0, 0, 1),
                                        law=lambda p, v, t: K * p + C * v + 0.2 * np.sin(p) + 0.01 * t)
        mb.add_rotational_spring_damper("free", "d", "p", stiffness=0.5, damping=0.01)  # isotropic
    else:
        mb.add_rotational_spring_damper("rs", "ground", "d", axis=(0, 0, 1), stiffness=K, damping=C)
    return mb.compile()


@pytest.mark.parametrize("build, solver, t_end, dt, every", [
    ("wound", "auto", 1.0, 1e-3, 10),  # 2.5 turns: the references carried from step to step inside the call
    ("wound", "band", 0.2013, 1e-3, 1),  # the band factor, a row every step, a shortened last step
    ("law", "dense", 1.0, 2e-3, 7),  # a torque law of the angle and time, an isotropic element beside
    ("tumbling", "auto", 0.3, 1e-3, 10),  # a tumbling body: an isotropic and an axis element, a spring-damper
], ids=["wound", "wound_band_every_step", "wound_law", "tumbling"])
def test_rotational_spring_dampers_run_compiled_bit_for_bit(monkeypatch, build, solver, t_end, dt, every) -> None:
    """Rotational spring-dampers' reference angles (R3a of docs/rotational_spring_damper.md) set at every step's end
    inside the compiled run: the same rows, element outputs, steps, energy balance and counters as the per-step path
    (newton_loop.accept in Python); the spring wound 2.5 turns keeps its angle, the joint's, on every row, 5π at the
    end."""
    from test_rotational_spring_damper import free_body
    from test_rotational_spring_damper_turns import A

    model = free_body() if build == "tumbling" else wound_disk(law=build == "law")
    assert ElementRun.refusal(GeneralizedAlpha(model, linear_solver=solver)) == ""
    fast, slow, calls = _both(monkeypatch, model, t_end, dt, output_every=every, linear_solver=solver)
    assert fast.status == "finished"
    _assert_same(fast, slow)
    np.testing.assert_array_equal(fast.spring_dampers, slow.spring_dampers)
    assert calls and sum(calls) >= fast.stats["steps"] - len(fast.t)
    if build != "tumbling" and t_end == 1.0:  # the angle is the joint's (no jump of 2π), 5π at the end
        angle = fast.spring_dampers[:, 0, 0]
        np.testing.assert_allclose(angle, fast.coordinate("O.q"), rtol=0, atol=64 * np.finfo(float).eps * A)
        assert abs(angle[-1] - A) <= 64 * np.finfo(float).eps * A


def test_a_run_of_turning_springs_that_fails_gives_the_python_message(monkeypatch) -> None:
    """The wound disk's drive turns infinite at t > 0.05: the compiled call stops at that step, the Python step
    repeats it from the reference angles of the last step taken and fails with the same message."""
    fast, slow, calls = _both(monkeypatch, wound_disk(blow_up=0.05), 0.2, 1e-3, output_every=10)
    _assert_same(fast, slow)
    assert fast.status.startswith("failed") and "non-finite" in fast.status
    assert sum(calls) == 49 and calls[-1] == 9


@pytest.mark.parametrize("solver", ["dense", "band"])
def test_follower_loads_run_compiled_bit_for_bit(monkeypatch, solver) -> None:
    """benchmarks/motion_load_models.py's follower beam (a follower force and moment at the tip, a fixed force on the
    middle node): the follower loads' values at every step's end evaluated before the call (tree_run.follower_values),
    turned per iterate inside it; the same run as step by step, the load work included, and the load worked."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from motion_load_models import follower_beam

    model = follower_beam()
    assert ElementRun.refusal(GeneralizedAlpha(model, linear_solver=solver)) == ""
    fast, slow, calls = _both(monkeypatch, model, 0.2, 1e-3, output_every=7, linear_solver=solver)
    assert fast.status == "finished"
    _assert_same(fast, slow)
    assert calls and sum(calls) >= fast.stats["steps"] - len(fast.t)
    assert np.abs(fast.energy["load_work"]).max() > 1e-4
