"""Run a model in time: generalized-α steps of a fixed size or error-controlled (``dt="auto"``,
flexmb.solvers.step_control), outputs (poses, drive forces, joint reactions, energy balance)
recorded by flexmb.solvers.recorder into a :class:`~flexmb.results.result.Result` and, with
``out=``, streamed to a run directory as they are computed (flexmb.results.rundir)."""

from __future__ import annotations

import math
import time as _time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

from flexmb.errors import SolverError
from flexmb.model import Model
from flexmb.motion_forces import sample_hold
from flexmb.results.result import Result
from flexmb.results.rundir import RunWriter
from flexmb.settings import RHO_INF
from flexmb.solvers.element_run import ElementRun
from flexmb.solvers.energy_check import FAIL_RATIO, EnergyWarning, model_energy, stiff_parts
from flexmb.solvers.generalized_alpha import GeneralizedAlpha
from flexmb.solvers.initial import relaxed_start
from flexmb.solvers.nonfinite import check_finite
from flexmb.solvers.recorder import Recorder, check_keep
from flexmb.solvers.run_settings import AUTO, check_auto, check_settings, step_count
from flexmb.solvers.step_control import DEFAULT_TOL, ErrorEstimate, StepController, interpolate, shifted_acceleration
from flexmb.solvers.tree_run import TreeRun
from flexmb.state import State

__all__ = ["simulate"]


def simulate(
    model: Model, t_end: float, dt: float | str, *, rho_inf: float = RHO_INF, output_every: int = 1, rtol: float = 1e-10,
    max_halvings: int = 10, state: State | None = None, raise_on_failure: bool = False,
    callback: Callable[[State, object], str | None] | None = None, out: str | Path | RunWriter | None = None,
    progress: Callable[[float, int], None] | None = None, reuse_factor: bool | str = "auto", linear_solver: str = "auto",
    tol: float | None = None, output_dt: float | None = None, dt_max: float | None = None, keep: str | int | None = None
) -> Result:
    """Integrate ``model`` from its initial state (or ``state``) to ``t_end`` with step ``dt``; the
    initial state with its free FE nodes carried along (flexmb.solvers.initial.relaxed_start, ``meta["start"]``).
    ``model``, ``t_end`` and ``dt`` may be given by position; every other setting is a keyword-only option,
    passed by name (``simulate(model, 1.0, 1e-3, rho_inf=0.8)``; a case's settings: ``simulate(model,
    **RunSettings(...).as_dict())``, flexmb.settings). Both kinds of step in full: docs/guide/integrator.md.

    **Fixed steps** (``dt`` a number, the default way): steps of ``dt`` from t0 (0 or ``state.t``), the last
    one shortened to end exactly at t_end where t_end - t0 is no multiple of dt (t_end = 1, dt = 0.3: at 0.3,
    0.6, 0.9 and 1.0); where it is one, a shorter run's rows are the first rows of a longer one, bit for bit.
    A step whose Newton iteration fails is retried with halved steps down to dt / 2**max_halvings
    (GeneralizedAlpha.advance). Records every ``output_every``-th step and always the last one.

    **Error-controlled steps** (``dt="auto"``, flexmb.solvers.step_control): a step is accepted if its local
    error, C h² (a_{n+1} - a_n) at the nodes per unit step relative to the motion (step_control eqs. E2, E3),
    is at most ``tol`` (default 1e-4; the global error is then about tol × (the largest node speed) ×
    (t_end - t0)). The step grows at most twice per step, up to ``dt_max`` (default (t_end - t0)/20); a Newton
    failure halves it, and the run fails when a step of h/2**max_halvings fails (h: the first failed one).
    Rows: at t0 + k ``output_dt`` and t_end (dense output), or without ``output_dt`` at every
    ``output_every``-th step. ``result.steps`` holds every step attempt (time, size, Newton iterations,
    error estimate, accepted/rejected/failed), in both modes.

    ``reuse_factor``: keep the factorized iteration matrix across steps while Newton converges fast: True, False
    (refactorize every step) or "auto" (reuse where refactorizing costs more than a few residual evaluations);
    same results. ``linear_solver``: "auto" (the O(n) tree factorization for rigid trees, a dense factor for other
    models of at most 64 unknowns, a band factor for larger banded ones such as long flexible links, CHOLMOD
    otherwise), "tree", "dense", "band" or "cholmod" (GeneralizedAlpha). On a Newton failure the steps computed
    so far are returned with ``status`` saying why (or the SolverError is raised if ``raise_on_failure``); so is
    a step whose outputs (drive forces, reactions, energies, element forces, ...) are not finite: a run that says
    ``finished`` holds finite numbers only. A failure at the start (the initial accelerations or outputs) raises
    the SolverError. Invalid settings raise :class:`flexmb.errors.SettingsError` (a ValueError)
    naming the argument, before anything is written. ``result.stats``: wall time, step counts, Newton
    iterations, factorizations, the time split and the energy balance (docs/guide/integrator.md, "Run
    statistics"); a rise of the balance above 40 % of the energy the run moved warns with an
    :class:`~flexmb.solvers.energy_check.EnergyWarning`, one by orders of magnitude also ends the run with status
    ``failed: energy balance grew from ... to ... J ...``, raised as a SolverError if ``raise_on_failure``.

    ``out``: a directory (or a :class:`flexmb.results.rundir.RunWriter`) the output rows and the step history are
    streamed to while the run goes, closed with the run's status; it must not exist yet (or be empty). ``keep``:
    the rows kept in memory (flexmb.solvers.recorder): ``"all"`` (the default without ``out``), ``"none"`` (the
    default with ``out``: memory stays bounded by the model whatever the run's length, and the result returned is
    read lazily from ``out``, flexmb.load) or an int N (the last N rows, returned as the result).
    ``callback(state, evaluation)`` is called after every accepted step; if it returns a non-empty string the run
    ends there with ``status = "stopped: <that string>"`` (the last step is recorded). ``progress(t,
    newton_iterations)`` is called after every accepted step (the last one at ``t_end``). Ctrl-C
    (KeyboardInterrupt) closes the streamed run with status ``interrupted`` and is then re-raised, so scripts
    stop as the user asked; ``flexmb.load(out)`` returns what was computed.
    """
    output_every, max_halvings = check_settings(t_end, dt, rho_inf, output_every, rtol, max_halvings, state, callback,
                                                 progress)
    t0 = 0.0 if state is None else float(state.t)
    check_auto(dt, t0, t_end, tol, output_dt, dt_max, output_every)
    keep = check_keep(keep, out is not None)
    auto = dt == AUTO
    wall0 = _time.perf_counter()
    integ = GeneralizedAlpha(model, rho_inf=rho_inf, rtol=rtol, max_halvings=max_halvings, reuse_factor=reuse_factor,
                             linear_solver=linear_solver)
    writer = out if (out is None or isinstance(out, RunWriter)) else RunWriter(out)
    rec = Recorder(model, integ, writer, keep)
    settings = {"t_end": t_end, "dt": dt, "rho_inf": rho_inf, "output_every": output_every, "rtol": rtol,
                "max_halvings": max_halvings, "reuse_factor": reuse_factor, "keep": keep}
    if auto:
        settings.update(tol=DEFAULT_TOL if tol is None else tol, output_dt=output_dt, dt_max=dt_max)
    run = _begin(_Run(model, integ, rec, callback, progress), writer, settings, t0)
    st, start_meta, stats = _run_and_close(run, writer, state, settings, (raise_on_failure, t0, wall0))
    if (not run.status.startswith("failed") or run.status.startswith("failed: energy balance")) and rec.energy.created():
        _energy_warning(model, integ, rec, st, run.h_max if auto else float(dt), auto)
    if raise_on_failure and run.status.startswith("failed: energy balance"):
        raise SolverError(run.status[len("failed: "):], rec.energy.t_growth)
    if keep == "none" and writer is not None:
        from flexmb.results.load import load  # the rows are on disk only: read them when used

        return load(writer.path)
    return rec.result(run.status, stats, {"settings": settings, **start_meta})


def _begin(run: _Run, writer: RunWriter | None, settings: dict, t0: float) -> _Run:
    """``run`` with its integrator's step log and error estimate set, and the streamed run's files
    begun with the output's template and the ``settings``."""
    integ, rec = run.integ, run.rec
    integ.log = rec.log
    integ.estimator = ErrorEstimate(run.m, integ.beta, integ.gamma, integ.length_scale, settings["t_end"] - t0)
    if writer is not None:
        writer.begin(rec.template(), settings)
    return run


def _run_and_close(run: _Run, writer: RunWriter | None, state: State | None, settings: dict,
                   how: tuple[bool, float, float]) -> tuple[State, dict, dict]:
    """(the start state, the start's meta data, the run's statistics) of the steps of ``run`` from ``state``
    (or the model's relaxed start) with ``settings``, ``how`` = (raise_on_failure, t0, the wall clock's start):
    a SolverError ends the run with status ``failed: ...`` (raised if raise_on_failure), Ctrl-C with
    ``interrupted``; the energy balance's check and the streamed run's closing happen whatever the end."""
    raise_on_failure, t0, wall0 = how
    model, integ, rec = run.m, run.integ, run.rec
    t_end, dt = settings["t_end"], settings["dt"]
    auto = dt == AUTO
    start_meta: dict = {}  # the relaxed start (flexmb/solvers/initial.py): free FE nodes carried along, strain energy
    try:
        st, start_meta = relaxed_start(model) if state is None else (state.copy(), {})
        st, ev = integ.initial_acceleration(st)
        if integ.start_notes:  # what the families' start did (rigid cuts: the gaps closed; moved positions if far)
            start = {**start_meta.get("start", {}), "cuts": dict(integ.start_notes)}
            start["positions_relaxed"] = bool(start.get("positions_relaxed")) or bool(integ.start_notes.get("positions_closed"))
            start_meta = {**start_meta, "start": start}
        rec.step(st, ev)
        rec.row(st, ev, 0)
        rec.commit()
        try:
            if auto:
                run.auto(st, t_end, settings["tol"], settings["output_dt"], settings["dt_max"], settings["output_every"],
                         settings["max_halvings"])
            else:
                run.fixed(st, t_end, dt, settings["output_every"])
        except SolverError as exc:
            run.status = f"failed: {exc}"
            if raise_on_failure:
                raise
    except KeyboardInterrupt:
        run.status = "interrupted"
        raise
    except BaseException as exc:
        if run.status == "finished":
            run.status = f"failed: {type(exc).__name__}: {exc}"
        raise
    finally:
        if run.status == "finished":  # a balance risen by orders of magnitude is no result (energy_check.py)
            run.status = _energy_status(model, integ, rec, st, t_end - t0, run.h_max if auto else float(dt), auto)
        stats = {**run.stats(integ, _time.perf_counter() - wall0), **rec.energy.stats()}
        if writer is not None:
            try:
                if writer.opened:
                    rec.flush()
            finally:
                writer.close(run.status, stats, start_meta)
    return st, start_meta, stats


def _energy_warning(model: Model, integ: GeneralizedAlpha, rec: Recorder, start: State, h: float, auto: bool) -> None:
    """The EnergyWarning of a run whose energy balance rose far (flexmb/solvers/energy_check.py),
    naming the joint springs and loop-cut bushings too stiff for the step h (``auto``: the largest
    step taken) at the ``start``."""
    message = rec.energy.message(h, auto, _stiff_parts(model, integ, integ.asm.evaluate(start), h))
    warnings.warn(f"simulate: {message}", EnergyWarning, stacklevel=3)


def _stiff_parts(model: Model, integ: GeneralizedAlpha, ev, h: float) -> list[str]:
    """The joint springs and loop-cut bushings too stiff for the step h at the start's evaluation ``ev``."""
    d = np.zeros(model.n_u)
    free = integ.free
    if free.size:
        d[free] = integ.asm.mbar(ev).diagonal()[free]
    return stiff_parts(model, d, h)


def _energy_status(model: Model, integ: GeneralizedAlpha, rec: Recorder, start: State, duration: float, h: float,
                   auto: bool) -> str:
    """``finished``, or ``failed: energy balance grew ...`` when the run's energy balance rose by orders
    of magnitude (flexmb/solvers/energy_check.py, B4 and B5; ``h``, ``auto`` as for the warning)."""
    check = rec.energy
    if not (check.created() and check.growth > FAIL_RATIO * check.supply):  # without an evaluation, mostly
        return "finished"
    ev = integ.asm.evaluate(start)
    scale = model_energy(model, ev, integ.length_scale, duration)
    if not check.failed(scale):
        return "finished"
    return "failed: " + check.failure(scale, h, auto, _stiff_parts(model, integ, ev, h))


class _Run:
    """The time loop of one run (fixed or error-controlled steps) and its counters."""

    def __init__(self, model: Model, integ: GeneralizedAlpha, rec: Recorder, callback, progress) -> None:
        self.m, self.integ, self.rec = model, integ, rec
        self.callback, self.progress = callback, progress
        self.status = "finished"
        self.n_ok = self.total_it = self.above_tol = 0
        self.h_max = 0.0
        self.t0 = self.t_reached = 0.0

    def _accepted(self, st: State, ev, iterations: int) -> str | None:
        """Bookkeeping of an accepted step: work integrals, the callback (a monitor may end the
        run, e.g. flexmb.analysis.monitors.SingularityMonitor); returns its stop reason."""
        self.rec.step(st, ev)
        return self.callback(st, ev) if self.callback is not None else None

    def _after(self, t: float, h: float, iterations: int, stop: str | None) -> None:
        self.n_ok += 1
        self.h_max = max(self.h_max, h)
        self.t_reached = t
        self.total_it += iterations
        if stop:
            self.status = f"stopped: {stop}"
        if self.progress is not None:
            self.progress(t, iterations)

    def _after_many(self, t: np.ndarray, h: float, iterations: np.ndarray) -> None:
        """_after for steps of size h (none stopping the run) ending at the times t."""
        self.n_ok += t.size
        self.h_max = max(self.h_max, h)
        self.t_reached = float(t[-1])
        self.total_it += int(iterations.sum())
        if self.progress is not None:
            for tk, it in zip(t.tolist(), iterations.tolist()):
                self.progress(tk, it)

    def fixed(self, st: State, t_end: float, dt: float, output_every: int) -> None:
        """Steps of dt (the last one shortened to end at t_end), halved on Newton failure."""
        integ, rec = self.integ, self.rec
        self.t0 = self.t_reached = st.t
        n_steps, dt_multiple = step_count(st.t, t_end, dt)
        a = st.udot.copy()
        # a plain rigid tree without a callback: the steps up to the next row in one compiled call
        # (and a model of bodies, beams and bushings on the dense or band factor, flexmb/solvers/element_run.py)
        run: TreeRun | ElementRun | None = None
        if TreeRun.applies(integ, self.callback):
            run = TreeRun(integ, rec, integ.estimator)
        elif ElementRun.applies(integ, self.callback):
            run = ElementRun(integ, rec, integ.estimator)
        i = 0
        python_next = False  # the compiled call stopped at a step: the Python step repeats it (halving it, or naming why)
        while i < n_steps:
            i += 1
            if run is not None and i < n_steps and not python_next:
                upto = min(-(-i // output_every) * output_every, n_steps - 1)  # the next row's step, not the last one
                st1, a1, ev, taken = run.run(st, a, dt, upto - i + 1)
                python_next = ev is None
                if len(taken):
                    st, a = st1, a1
                    i += len(taken) - 1
                    if ev is not None and i % output_every == 0:
                        rec.row(st, ev, int(taken.iterations[-1]))
                        rec.commit()
                    # progress after the row is saved (as _after below): a run interrupted once it shows t keeps that row
                    self._after_many(taken.t, dt, taken.iterations)
                    continue
            python_next = False
            last = i == n_steps
            # the last step ends at t_end, shortened unless t_end is a multiple of dt
            short = last and not dt_multiple
            st, a, ev, info = integ.advance(st, a, t_end - st.t, t_end) if short else integ.advance(st, a, dt)
            stop = self._accepted(st, ev, info.iterations)
            if stop or last or i % output_every == 0:  # after a sample's jump (M16), the row's evaluation has the new values
                rec.row(st, ev if integ.sample_evaluation is None else integ.sample_evaluation, info.iterations)
                rec.commit()
            self._after(st.t, info.h, info.iterations, stop)
            if self.status != "finished":
                return

    def auto(self, st: State, t_end: float, tol: float, output_dt: float | None, dt_max: float | None,
             output_every: int, max_halvings: int) -> None:
        """Error-controlled steps (flexmb.solvers.step_control); rows at the multiples of
        ``output_dt`` (dense output) or at every ``output_every``-th step."""
        m, integ, rec, est = self.m, self.integ, self.rec, self.integ.estimator
        t0 = self.t0 = self.t_reached = st.t
        ctl = StepController(tol, t0, t_end, dt_max)
        dalpha = integ.am - integ.af
        a, a_prev, h_prev = st.udot.copy(), None, 0.0
        h = ctl.h
        fail_first: float | None = None  # the first failed step since the last accepted one
        rejected_since = False
        k_out = 1  # the next output time is out_time(k_out)
        n = 0

        def out_time(k: int) -> float:
            """t0 + k output_dt, or t_end from where that reaches it (to 1e-9 of output_dt)."""
            t = t0 + k * output_dt
            return t_end if t >= t_end - 1e-9 * output_dt else t
        while True:
            h_try, last = ctl.plan(st.t, h, rejected_since)
            t1 = t_end if last else st.t + h_try
            a_use = shifted_acceleration(a, a_prev, h_try, h_prev, dalpha)  # (E4)
            try:
                st1, a1, ev1, info = integ.step(st, a_use, h_try, t1)
                check_finite(st1, m)
            except SolverError as exc:
                rec.log.add(t1, h_try, -1, math.nan, 2)
                fail_first = h_try if fail_first is None else fail_first
                if h_try <= math.ldexp(fail_first, -max_halvings) or h_try <= 1e-12 * (t_end - t0):
                    raise SolverError(
                        f"{exc} — the step from t = {st.t:.6g} failed down to h = {h_try:.3e} (the smallest step tried; "
                        f"{fail_first:.3e} halved {round(math.log2(fail_first / h_try))} times); loosen tol, raise "
                        "max_halvings, or check the model at that time.", exc.time) from exc
                h = 0.5 * h_try
                rejected_since = True
                continue
            err = est(ev1, a_use, a1, h_try)
            if err > tol and h_try > ctl.h_min:
                rec.log.add(t1, h_try, info.iterations, err, 1)
                h = ctl.rejected(h_try, err)
                rejected_since = True
                continue
            # accepted
            sampled = sample_hold(m, st1)  # the sampled joint forces due at its end (docs/motion_forces.md (M6))
            rec.log.add(t1, h_try, info.iterations, err, 0)
            self.above_tol += err > tol
            est.accept(ev1)
            integ.substeps += 1
            integ.min_step = min(integ.min_step, h_try)
            n += 1
            if output_dt is not None:  # rows at the output times strictly inside the step: dense output
                while (tau := out_time(k_out)) < t1 - 1e-9 * h_try:
                    sti = integ.between(st, st1, interpolate(m, st, st1, a_use, a1, integ.beta, tau))
                    rec.row_between(sti, integ.asm.evaluate(sti), info.iterations)
                    rec.commit()
                    k_out += 1
            jump = integ.sample_jump(st1) if sampled else None  # the accelerations jump with the samples (M16)
            if jump is not None:
                a1, a_use = a1 + jump, a_use + jump  # (E4) then extrapolates the motion's a, not the jump
            stop = self._accepted(st1, ev1, info.iterations)
            on_grid = output_dt is not None and out_time(k_out) <= t1 + 1e-9 * h_try
            if stop or last or on_grid or (output_dt is None and n % output_every == 0):
                rec.row(st1, ev1 if jump is None else integ.sample_evaluation, info.iterations)
                rec.commit()
                k_out += on_grid
            a_prev, a, h_prev = a_use, a1, h_try
            st = st1
            self._after(st.t, h_try, info.iterations, stop)
            if self.status != "finished" or last:
                return
            h = ctl.accepted(h_try, err, rejected_since)
            fail_first, rejected_since = None, False

    def stats(self, integ: GeneralizedAlpha, wall: float) -> dict[str, float]:
        """The run's statistics (simulate's docstring); every value a float."""
        counts = self.rec.log.counts
        return {
            "wall_time": wall, "steps": float(self.n_ok), "substeps": float(integ.substeps),
            "min_step": float(integ.min_step) if integ.substeps else 0.0, "max_step": float(self.h_max),
            "mean_step": float((self.t_reached - self.t0) / self.n_ok) if self.n_ok else 0.0,
            "rejected_steps": float(counts[1]), "failed_steps": float(counts[2]),
            "steps_error_above_tol": float(self.above_tol), "newton_iterations": float(self.total_it),
            "factorizations": float(integ.chol.n_factorize if integ.chol else 0),
            "symbolic_analyses": float(integ.chol.n_analyze if integ.chol else 0), **integ.solver_stats(),
            "modified_newton_steps": float(integ.modified_newton),
            **{f"time_{k}": v for k, v in integ.timings.items()},
        }
