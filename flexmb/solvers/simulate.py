"""Run a model in time: generalized-α steps, outputs (poses, drive forces, joint reactions,
energy balance) recorded into a :class:`~flexmb.results.result.Result` and, with ``out=``, streamed
to a run directory as they are computed (flexmb.results.rundir)."""

from __future__ import annotations

import math
import time as _time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from flexmb.elements import recorded_fields
from flexmb.errors import SolverError
from flexmb.model import Model
from flexmb.results.drawing import drawing_of
from flexmb.results.result import Result
from flexmb.results.rundir import RunWriter
from flexmb.rotations import logm
from flexmb.settings import RHO_INF
from flexmb.solvers.generalized_alpha import GeneralizedAlpha
from flexmb.solvers.initial import relaxed_start
from flexmb.solvers.nonfinite import evaluation_source, row_source
from flexmb.solvers.run_settings import check_settings, step_count
from flexmb.state import State

__all__ = ["simulate"]


_ROW_KEYS = ("t", "q", "u", "udot", "x", "R", "joint_points", "twists", "drive_forces", "reactions",
             "newton_iterations")
_ENERGY_KEYS = ("kinetic", "potential", "strain", "dissipated", "drive_work", "load_work")


class _Recorder:
    """Output rows of a run; also streams them to a RunWriter when one is given. The work of
    dampers, drives and loads is integrated over every step (trapezoidal rule), whatever the
    output interval."""

    def __init__(self, model: Model, integ: GeneralizedAlpha, writer: RunWriter | None = None) -> None:
        self.m = model
        self.integ = integ
        self.writer = writer
        # the element families' recorded outputs by Result field (families sharing one: rows concatenated)
        self.outputs = recorded_fields(model)
        self.rows: dict[str, list] = {k: [] for k in _ROW_KEYS + tuple(self.outputs)
                                      + tuple(f"energy__{k}" for k in _ENERGY_KEYS)}
        self.work = {"dissipated": 0.0, "drive_work": 0.0, "load_work": 0.0}
        self._prev: tuple[float, tuple[float, float, float]] | None = None
        self._drive = np.zeros(0)

    def _nonfinite(self, st: State, ev, source: str) -> SolverError:
        """The SolverError for an output that is not finite (and where the evaluation first was not)."""
        cause = evaluation_source(self.m, st, ev)
        return SolverError(f"t = {st.t:.6g}: non-finite output (NaN or inf): {source}"
                           + (f", from the {cause}" if cause else "") + "; the inputs there are too large for "
                           "double precision (check masses, centres of mass, stiffness, loads, drives).", st.t)

    def _q_out(self, st: State) -> np.ndarray:
        m = self.m
        q = np.zeros(m.n_u)
        q[~m.u_is_ball] = st.q
        if m.n_ball:
            q[m.u_is_ball] = logm(st.balls).reshape(-1)
        return q

    def step(self, st: State, ev) -> None:
        """Add the work done over the step that ended at ``st`` (call after every step); a SolverError
        names a drive force or power that is not finite (nothing is added then)."""
        m = self.m
        drive = ev.residual(st.udot)[m.driven] if m.driven.size else np.zeros(0)
        p_diss = float(np.sum(m.spring_c * st.u[m.spring_u] ** 2)) if m.spring_u.size else 0.0
        p_diss += ev.element_dissipation
        if ev.friction is not None:  # bearing friction (flexmb/friction.py) dissipates -sum(tau u)
            p_diss -= ev.friction.power(ev.node_wrenches(st.udot))
        p_drive = float(np.dot(drive, st.u[m.driven])) if m.driven.size else 0.0
        p_load = float(np.sum(ev.loads * ev.kin.V))
        if m.jforce_u.size:  # applied joint forces work like loads
            p_load += float(np.dot([f(st.t) for f in m.jforce_f], st.u[m.jforce_u]))
        power = (p_diss, p_drive, p_load)
        source = row_source(m, {"drive_forces": drive}) or next(
            (f"power of the {what} ({p})" for what, p in zip(("dampers and friction", "drives", "loads"), power)
             if not math.isfinite(p)), None)
        if source is not None:
            raise self._nonfinite(st, ev, source)
        self._drive = drive
        if self._prev is not None:
            h = st.t - self._prev[0]
            for key, p, p0 in zip(("dissipated", "drive_work", "load_work"), power, self._prev[1]):
                self.work[key] += 0.5 * h * (p + p0)
        self._prev = (st.t, power)

    def record(self, st: State, ev, iterations: int) -> None:
        """Store an output row at ``st`` (after :meth:`step` for that state)."""
        self.append(self.row(st, ev, iterations))

    def row(self, st: State, ev, iterations: int) -> dict:
        """The output row at ``st`` (after :meth:`step` for that state); a SolverError names its first
        non-finite quantity (flexmb.solvers.nonfinite.row_source)."""
        m, asm = self.m, self.integ.asm
        T, V = asm.energies(ev, st)
        row = {
            "t": st.t, "q": self._q_out(st), "u": st.u.copy(), "udot": st.udot.copy(), "x": ev.kin.x, "R": ev.kin.R,
            "joint_points": ev.kin.joint_point, "twists": ev.kin.V, "drive_forces": self._drive,
            "reactions": asm.reactions(ev, st.udot), "newton_iterations": np.int64(iterations),
            **{field: _joined([asm.element_output(ev, name, o.name) for name, o in outs])
               for field, outs in self.outputs.items()},
            # element strain energy apart from gravity and joint springs (energies() sums them)
            "energy__kinetic": T, "energy__potential": V - ev.strain_energy, "energy__strain": ev.strain_energy,
            **{f"energy__{k}": v for k, v in self.work.items()},
        }
        source = row_source(m, row)
        if source is not None:  # a run never reports a NaN or inf as a result
            raise self._nonfinite(st, ev, source)
        return row

    def append(self, row: dict) -> None:
        """Store an output row (from :meth:`row`) and stream it."""
        for k, v in row.items():
            self.rows[k].append(v)
        if self.writer is not None:
            self.writer.append(row)

    def result(self, status: str, stats: dict, meta: dict | None = None) -> Result:
        m, R = self.m, self.rows
        n = len(R["t"])
        outputs = {}
        for field, outs in self.outputs.items():
            n_el, out = sum(m.elements[name].n for name, _ in outs), outs[0][1]
            shape = (n, n_el, len(out.columns)) if out.columns else (n, n_el)
            outputs[field] = np.array(R[field], dtype=float).reshape(shape)
            if out.names_field:
                outputs[out.names_field] = tuple(e for name, _ in outs for e in m.elements[name].names)
        return Result(
            t=np.array(R["t"], dtype=float), q=np.array(R["q"]).reshape(n, m.n_u), u=np.array(R["u"]).reshape(n, m.n_u),
            udot=np.array(R["udot"]).reshape(n, m.n_u), x=np.array(R["x"]).reshape(n, m.n_nodes, 3),
            R=np.array(R["R"]).reshape(n, m.n_nodes, 3, 3), joint_points=np.array(R["joint_points"]).reshape(n, m.n_joints, 3),
            twists=np.array(R["twists"]).reshape(n, m.n_nodes, 6),
            drive_forces=np.array(R["drive_forces"], dtype=float).reshape(n, m.driven.size),
            reactions=np.array(R["reactions"]).reshape(n, m.n_joints, 6),
            energy={k: np.array(R[f"energy__{k}"], dtype=float) for k in _ENERGY_KEYS},
            newton_iterations=np.array(R["newton_iterations"], dtype=np.int64), coordinate_names=m.coordinate_names,
            node_names=m.node_names, joint_names=m.joint_names,
            driven_names=tuple(m.coordinate_names[k] for k in m.driven), status=status, stats=stats, **outputs,
            drawing=drawing_of(m), meta=dict(meta or {}),
        )


def _joined(parts: list[np.ndarray]) -> np.ndarray:
    """The rows of the families sharing a recorded field, one after the other."""
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def simulate(
    model: Model,
    t_end: float,
    dt: float,
    rho_inf: float = RHO_INF,
    output_every: int = 1,
    rtol: float = 1e-10,
    max_halvings: int = 10,
    state: State | None = None,
    raise_on_failure: bool = False,
    callback: Callable[[State, object], str | None] | None = None,
    out: str | Path | RunWriter | None = None,
    progress: Callable[[float, int], None] | None = None,
    reuse_factor: bool | str = "auto",
    linear_solver: str = "auto",
) -> Result:
    """Integrate ``model`` from its initial state (or ``state``) to ``t_end`` with step ``dt``; the
    initial state with its free FE nodes carried along (flexmb.solvers.initial.relaxed_start, ``meta["start"]``).

    The run ends at ``t_end``: steps of ``dt`` from t0 (0 or ``state.t``), and where t_end - t0 is
    no multiple of dt the last step is shortened to end exactly at t_end (t_end = 1, dt = 0.3: at
    0.3, 0.6, 0.9 and 1.0; dt > t_end: one step of t_end). Where it is one (to 1e-9 of a step)
    the last time is the sum of the steps, t_end to round-off, so a shorter run's rows are the
    first rows of a longer one, bit for bit. A step whose Newton iteration fails is retried with
    halved steps down to dt / 2**max_halvings (GeneralizedAlpha.advance). Records every
    ``output_every``-th step and always the last one. ``reuse_factor``: keep the factorized
    iteration matrix across steps while Newton converges fast: True, False (refactorize every step) or "auto"
    (reuse where refactorizing costs more than a few residual evaluations); same results.
    ``linear_solver``: "auto" (the O(n) tree factorization for rigid trees, CHOLMOD otherwise), "tree"
    or "cholmod" (GeneralizedAlpha).
    On a Newton failure the steps computed so far are returned with ``status`` saying why (or
    the SolverError is raised if ``raise_on_failure``); so is a step whose outputs (drive forces,
    reactions, energies, element forces, ...) are not finite: a run that says ``finished`` holds
    finite numbers only. A failure at the start (the initial accelerations or outputs) raises
    the SolverError. Invalid settings raise :class:`flexmb.errors.SettingsError` (a ValueError)
    naming the argument, before anything is written.
    ``result.stats`` holds wall time, steps (of dt, the shortened last one included), sub-steps
    (halved steps counted one by one), the smallest step taken, Newton iterations,
    factorizations, symbolic analyses and the time split (assembly, factorization, solve).

    ``out``: a directory (or a :class:`flexmb.results.rundir.RunWriter`) the output rows are streamed
    to while the run goes, closed with the run's status; it must not exist yet (or be empty).
    ``callback(state, evaluation)`` is called after every accepted step; if it returns a
    non-empty string the run ends there with ``status = "stopped: <that string>"`` (the last
    step is recorded). ``progress(t, newton_iterations)`` is called after every accepted step
    (the last one at ``t_end``). Ctrl-C
    (KeyboardInterrupt) closes the streamed run with status ``interrupted`` and is then
    re-raised, so scripts stop as the user asked; ``flexmb.load(out)`` returns what was computed.
    """
    output_every, max_halvings = check_settings(t_end, dt, rho_inf, output_every, rtol, max_halvings, state, callback,
                                                 progress)
    t0 = 0.0 if state is None else float(state.t)
    n_steps, dt_multiple = step_count(t0, t_end, dt)
    wall0 = _time.perf_counter()
    integ = GeneralizedAlpha(model, rho_inf=rho_inf, rtol=rtol, max_halvings=max_halvings, reuse_factor=reuse_factor,
                             linear_solver=linear_solver)
    writer = out if (out is None or isinstance(out, RunWriter)) else RunWriter(out)
    rec = _Recorder(model, integ, writer)
    settings = {"t_end": t_end, "dt": dt, "rho_inf": rho_inf, "output_every": output_every, "rtol": rtol,
                "max_halvings": max_halvings, "reuse_factor": reuse_factor}
    if writer is not None:
        writer.begin(rec.result("running", {}), settings)
    status = "finished"
    n_ok = total_it = 0
    start_meta: dict = {}  # the relaxed start (flexmb/solvers/initial.py): free FE nodes carried along, strain energy
    try:
        st, start_meta = relaxed_start(model) if state is None else (state.copy(), {})
        st, ev = integ.initial_acceleration(st)
        a = st.udot.copy()
        rec.step(st, ev)
        rec.record(st, ev, 0)
        for i in range(1, n_steps + 1):
            last = i == n_steps
            try:
                # the last step ends at t_end, shortened unless t_end is a multiple of dt
                short = last and not dt_multiple
                st, a, ev, info = integ.advance(st, a, t_end - st.t, t_end) if short else integ.advance(st, a, dt)
                rec.step(st, ev)
                # a monitor may end the run (e.g. flexmb.analysis.monitors.SingularityMonitor)
                stop = callback(st, ev) if callback is not None else None
                row = rec.row(st, ev, info.iterations) if stop or last or i % output_every == 0 else None
            except SolverError as exc:
                status = f"failed: {exc}"
                if raise_on_failure:
                    raise
                break
            n_ok += 1
            total_it += info.iterations
            if stop:
                status = f"stopped: {stop}"
            if row is not None:
                rec.append(row)
            if progress is not None:
                progress(st.t, info.iterations)
            if status != "finished":
                break
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    except BaseException as exc:
        if status == "finished":
            status = f"failed: {type(exc).__name__}: {exc}"
        raise
    finally:
        stats = {
            "wall_time": _time.perf_counter() - wall0, "steps": float(n_ok), "substeps": float(integ.substeps),
            "min_step": float(integ.min_step) if integ.substeps else 0.0, "newton_iterations": float(total_it),
            "factorizations": float(integ.chol.n_factorize if integ.chol else 0),
            "symbolic_analyses": float(integ.chol.n_analyze if integ.chol else 0), **integ.solver_stats(),
            "modified_newton_steps": float(integ.modified_newton),
            **{f"time_{k}": v for k, v in integ.timings.items()},
        }
        if writer is not None:
            writer.close(status, stats)
    return rec.result(status, stats, {"settings": settings, **start_meta})
