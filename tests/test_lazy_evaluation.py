"""A converged Newton iterate taken without evaluating it (GeneralizedAlpha.lazy_accept,
flexmb.engine.assembly.LazyEvaluation): the run is the same bit for bit as with the evaluation
in the step (rows, energies and work, step history), for models whose work needs the full
evaluation (drives, loads, damped elements) and for one that needs only the kinematics, which then
costs one evaluation less per step. The step's error estimate takes the kinematics of the iterate
evaluated before the lazy one (flexmb.solvers.step_control, (E5)): equal to 1e-12 relative, not
bit for bit; so with dt="auto" the step sizes chosen from it, and the run, agree to round-off."""

from __future__ import annotations

import numpy as np
import pytest

import flexmb as fm
from flexmb.engine.assembly import Assembler, LazyEvaluation
from flexmb.solvers.element_step import ElementStep
from flexmb.solvers.generalized_alpha import GeneralizedAlpha

SEC = fm.BeamSection(0.7e11, 0.7e11 / 2.6, 4e-4, 2e-7, 2e-7, 4e-7, 3000.0)


def falling_link(damping: float | None = None) -> fm.Model:
    """Zahariev's link, 6 beam elements, pinned to ground, falling from horizontal."""
    mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    nodes = mb.add_flexible_link("link", (0.0, 0.0, 0.0), (2.0, 0.0, 0.0), 6, SEC, damping=damping)
    mb.add_joint("pin", "revolute", "ground", nodes[0], axis=(0.0, 0.0, 1.0))
    return mb.compile()


def driven_link_with_load() -> fm.Model:
    """The link driven at its pin, a time-varying tip load: drive work and load work."""
    mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    nodes = mb.add_flexible_link("link", (0.0, 0.0, 0.0), (2.0, 0.0, 0.0), 4, SEC)
    mb.add_joint("pin", "revolute", "ground", nodes[0], axis=(0.0, 0.0, 1.0))
    mb.add_drive("pin", lambda t: 0.5 * np.sin(3.0 * t))
    mb.add_load("tip", nodes[-1], force=lambda t: np.array([0.0, 5.0 * np.cos(7.0 * t), 1.0]))
    return mb.compile()


def _counted(monkeypatch) -> list[int]:
    """Counts the evaluations: Assembler.evaluate and the compiled iterates that evaluate (ElementStep)."""
    calls = [0]
    original = Assembler.evaluate
    iterate = ElementStep.iterate

    def evaluate(self, *args, **kw):
        calls[0] += 1
        return original(self, *args, **kw)

    def counted_iterate(self, udot, evaluate, first):
        calls[0] += int(evaluate)
        return iterate(self, udot, evaluate, first)
    monkeypatch.setattr(Assembler, "evaluate", evaluate)
    monkeypatch.setattr(ElementStep, "iterate", counted_iterate)
    return calls


def _both(monkeypatch, model: fm.Model, t_end: float, dt, **kw) -> tuple[fm.Result, fm.Result, int, int]:
    calls = _counted(monkeypatch)
    lazy = fm.simulate(model, t_end, dt, **kw)
    n_lazy, calls[0] = calls[0], 0
    with monkeypatch.context() as mp:
        mp.setattr(GeneralizedAlpha, "lazy_accept", False)
        eager = fm.simulate(model, t_end, dt, **kw)
    return lazy, eager, n_lazy, calls[0]


def _assert_same(a: fm.Result, b: fm.Result) -> None:
    """The same run bit for bit, but for the error estimates of lazily taken steps ((E5): 1e-12)."""
    assert a.status == b.status == "finished"
    for name in ("t", "q", "u", "udot", "x", "R", "twists", "drive_forces", "reactions", "newton_iterations"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    for key in ("kinetic", "potential", "strain", "dissipated", "drive_work", "load_work"):
        np.testing.assert_array_equal(a.energy[key], b.energy[key], err_msg=key)
    for col in ("t", "h", "iterations", "status"):
        np.testing.assert_array_equal(a.steps[col], b.steps[col], err_msg=col)
    np.testing.assert_allclose(a.steps["error"], b.steps["error"], rtol=1e-12, atol=0.0)
    for key in ("steps", "newton_iterations", "factorizations"):
        assert a.stats[key] == b.stats[key], key


@pytest.mark.parametrize("solver", ["cholmod", "dense"])
def test_an_undamped_falling_link_skips_the_confirming_evaluation(monkeypatch, solver) -> None:
    """No drives, loads or damping: the work needs nothing of the accepted state but its velocities,
    the error estimate its kinematics: two evaluations per step instead of three (two Newton
    corrections each), the same run. On the dense factor the whole Newton loop is compiled
    (element_newton_step): the same run there too (its evaluations are not counted from Python)."""
    lazy, eager, n_lazy, n_eager = _both(monkeypatch, falling_link(), 0.1, 1e-3, rho_inf=0.8, output_every=25,
                                         linear_solver=solver)
    _assert_same(lazy, eager)
    steps = lazy.stats["steps"]
    assert lazy.stats["newton_iterations"] == 2 * steps
    assert lazy.stats["dense_solver"] == float(solver == "dense")
    if solver == "cholmod":
        assert n_eager - n_lazy >= 0.9 * steps  # one evaluation saved in (almost) every step
        assert n_lazy <= 2 * steps + lazy.t.size + 5  # the rows evaluate their states
    # and the physics: energy balance of the free fall (no damping, no drive, no load)
    e = lazy.energy
    total = e["kinetic"] + e["potential"] + e["strain"]
    assert np.abs(total - total[0]).max() < 1e-3 * np.abs(e["potential"]).max()


@pytest.mark.parametrize("build", [lambda: falling_link(damping=1e-4), driven_link_with_load],
                         ids=["damped_beams", "drive_and_load"])
def test_work_that_needs_the_forces_evaluates_them_and_gets_the_same_run(monkeypatch, build) -> None:
    lazy, eager, n_lazy, n_eager = _both(monkeypatch, build(), 0.1, 1e-3, output_every=10)
    _assert_same(lazy, eager)
    assert n_lazy == n_eager  # each accepted state is evaluated once, later instead of in the step
    work = lazy.energy["dissipated"][-1] + abs(lazy.energy["drive_work"][-1]) + abs(lazy.energy["load_work"][-1])
    assert work > 1e-6  # the work integrals had something to integrate


def test_error_controlled_steps_are_the_same(monkeypatch) -> None:
    """dt="auto": the step's error estimate takes the kinematics of the last evaluated iterate (E5),
    the controller's step sizes follow it continuously: the same steps to 1e-6 relative (the small
    differences of the estimate add up over 600 steps), the same run to 1e-8 of its size (measured 2e-10; tol is 1e-4);
    the rows between steps (dense output) evaluate their own states."""
    lazy, eager, n_lazy, n_eager = _both(monkeypatch, falling_link(), 0.1, "auto", tol=1e-4, output_dt=0.02,
                                         linear_solver="cholmod")
    assert lazy.status == eager.status == "finished"
    np.testing.assert_array_equal(lazy.t, eager.t)  # the user's output times
    np.testing.assert_array_equal(lazy.steps["iterations"], eager.steps["iterations"])
    for col in ("t", "h", "error"):
        np.testing.assert_allclose(lazy.steps[col], eager.steps[col], rtol=1e-6, atol=0.0, err_msg=col)
    for name in ("q", "u", "x"):
        a, b = getattr(lazy, name), getattr(eager, name)
        np.testing.assert_allclose(a, b, rtol=0.0, atol=1e-8 * np.abs(b).max(), err_msg=name)
    assert n_eager - n_lazy >= 0.5 * lazy.steps["t"].size


def test_the_lazy_evaluation_is_the_evaluation() -> None:
    model = falling_link()
    integ = GeneralizedAlpha(model, rho_inf=0.8)
    st, _ = integ.initial_acceleration(model.initial_state())
    a = st.udot.copy()
    lazy = None
    for _ in range(5):
        st, a, ev, info = integ.step(st, a, 1e-3)
        if isinstance(ev, LazyEvaluation):
            lazy = (st, ev, info)
    assert lazy is not None
    st, ev, info = lazy
    assert np.isnan(info.residual)  # not evaluated in the step
    ref = integ.asm.evaluate(st)
    np.testing.assert_array_equal(ev.kin.x, ref.kin.x)
    np.testing.assert_array_equal(ev.kin.S, ref.kin.S)
    assert ev.element_dissipation == 0.0 and ev.friction is None and not ev.evaluated  # known without evaluating
    np.testing.assert_array_equal(ev.Mb, ref.Mb)  # anything else evaluates in full, once
    assert ev.evaluated
    np.testing.assert_array_equal(ev.residual(st.udot), ref.residual(st.udot))
    np.testing.assert_array_equal(ev.kin.R, ref.kin.R)
    assert abs(ev.residual(st.udot)[model.free_u]).max() < 1e-6 * abs(ref.bias).max()  # and it is converged


def test_the_error_estimate_of_lazy_steps_spends_no_forward_pass(monkeypatch) -> None:
    """A step taken without evaluation gives the error estimate the kinematics of the iterate its
    step evaluated last (LazyEvaluation.near, (E5)), and nothing else computes them when the work
    needs only the velocities (no loads): no forward pass per step (only the output rows' states
    compute theirs); the estimates agree with those of full evaluations to 1e-12
    (test_an_undamped_falling_link_skips_the_confirming_evaluation)."""
    from flexmb.engine import assembly

    passes = [0]
    forward = assembly.forward_kinematics

    def counted(*args, **kw):
        passes[0] += 1
        return forward(*args, **kw)

    monkeypatch.setattr(assembly, "forward_kinematics", counted)
    res = fm.simulate(falling_link(), 0.1, 1e-3, rho_inf=0.8, output_every=25, linear_solver="cholmod")
    steps, rows = res.stats["steps"], res.t.size
    assert steps == 100 and np.isfinite(res.steps["error"]).all() and (res.steps["error"] > 0).all()
    assert passes[0] <= 2 * rows + 2  # the rows' states evaluate their own; the steps none


def test_near_kinematics_are_those_of_the_last_evaluated_iterate() -> None:
    """LazyEvaluation.near: the kinematics the step evaluated last, within the last correction of
    the state's own (here, 5 steps from rest: positions to 1e-10 m, velocities to 1e-6 of the largest),
    and the state's own once computed."""
    model = falling_link()
    integ = GeneralizedAlpha(model, rho_inf=0.8)
    st, _ = integ.initial_acceleration(model.initial_state())
    a = st.udot.copy()
    for _ in range(5):
        st, a, ev, info = integ.step(st, a, 1e-3)
    assert isinstance(ev, LazyEvaluation) and ev.near is not None and not ev.evaluated
    ref = integ.asm.evaluate(st)
    near = ev.near
    assert near.x is not ref.kin.x
    np.testing.assert_allclose(near.x, ref.kin.x, rtol=0.0, atol=1e-10 * 2.0)
    np.testing.assert_allclose(near.V, ref.kin.V, rtol=0.0, atol=1e-6 * np.abs(ref.kin.V).max())
    assert np.abs(near.x - ref.kin.x).max() > 0.0 or np.abs(near.V - ref.kin.V).max() > 0.0  # another iterate
    assert ev.kin is ev.near  # computed: the state's own from then on
    np.testing.assert_array_equal(ev.near.x, ref.kin.x)


def test_without_near_kinematics_the_estimate_reuses_one_set_of_arrays() -> None:
    """A lazy evaluation without ``near`` (the Python iterates of a model whose work evaluates the
    state anyway) gives the error estimate its kinematics by one forward pass into arrays made once
    (KinematicsBuffers): the same values as forward_kinematics, the same arrays for every step."""
    from flexmb.engine.kinematics import forward_kinematics
    from flexmb.solvers.step_control import ErrorEstimate

    model = falling_link()
    integ = GeneralizedAlpha(model, rho_inf=0.8)
    est = ErrorEstimate(model, integ.beta, integ.gamma, integ.length_scale, 1.0)
    st, _ = integ.initial_acceleration(model.initial_state())
    a = st.udot.copy()
    seen = []
    for _ in range(3):
        st, a, ev, _info = integ.step(st, a, 1e-3)
        lazy = LazyEvaluation(integ.asm, st)  # no near
        kin = est._kin(lazy)
        ref = forward_kinematics(model, st, integ.asm.pattern)
        np.testing.assert_array_equal(kin.x, ref.x)
        np.testing.assert_array_equal(kin.S, ref.S)
        seen.append(kin.x)
        assert not lazy.evaluated
    assert seen[0] is seen[1] is seen[2]
