"""The run pipeline: :func:`run_case`, the one sequence behind ``flexmb run`` and every sweep
worker (flexmb.app.study.run_one).

    load the case -> resolve its parameters (RunSettings) -> check the output folder -> build
    -> the case's monitor -> its companion runs started (flexmb.app.companions) -> RunWriter
    -> simulate -> reload from disk -> ParaView export -> plots -> the case's postprocess
    (with the companions' results) -> summary.json

Everything written into the run folder is recorded in its manifest (flexmb.results.manifest)
before it is written, the files of the case's postprocess included (as it opens them:
flexmb.results.manifest.recording), so that a later ``overwrite`` removes exactly that, even
after a run killed in the middle of a write. What differs between the command and a sweep is said by arguments (a sweep writes no
ParaView files or plots by default), never by a second copy of the sequence.

Errors before the simulation starts are raised: CaseError (bad case file or parameter),
CaseCodeError (the case's build() or monitor() raised), RunDirError (the output folder may
not be used). A run that fails, is stopped by the case's monitor or is cut short is not an
error: :class:`RunOutcome` says how it ended (``status``, as in the run folder's end.json).
Ctrl-C (KeyboardInterrupt) closes the run folder with status ``interrupted`` and propagates.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flexmb.app.casefile import Case, load_case, resolve_params
from flexmb.app.companions import Companions, companion_params
from flexmb.errors import CaseCodeError, FlexmbError, SolverError
from flexmb.model import Model
from flexmb.results import manifest
from flexmb.results.files import write_json
from flexmb.results.load import load
from flexmb.results.result import Result
from flexmb.results.rundir import RunWriter
from flexmb.settings import RunSettings
from flexmb.solvers.simulate import simulate
from flexmb.version import __version__

__all__ = ["MAX_FRAMES", "RunStart", "RunOutcome", "run_case", "build_model", "frames_every", "status_kind"]

MAX_FRAMES = 500
"""Default ceiling of the ParaView frames a run writes (every n-th output row, the last always)."""


def frames_every(n_rows: int, every: int | None = None) -> int:
    """Write every ``every``-th output row to ParaView; by default (None or 0) as few as keep
    at most :data:`MAX_FRAMES` frames."""
    return every if every else max(1, math.ceil(n_rows / MAX_FRAMES))


def status_kind(status: str) -> str:
    """The first word of a run status: ``finished``, ``stopped`` (the case's monitor ended the
    run as designed), ``failed``, ``interrupted`` or ``incomplete``."""
    return status.partition(":")[0].strip()


@dataclass(frozen=True)
class RunStart:
    """What is known when the simulation starts (given to ``run_case``'s ``on_start``)."""

    case: Case
    params: dict[str, Any]
    settings: RunSettings
    model: Model
    out: Path


@dataclass
class RunOutcome:
    """How a run of a case ended and what it wrote.

    ``result``: the run as reloaded from ``out`` (what is on disk is what the user gets);
    ``status``: its status; ``summary``: the generic figures (status, steps, output rows,
    final time, wall time, Newton iterations) followed by ``case_summary`` (the case's
    postprocess); ``postprocess_error``: '' or why the case's postprocess failed (its exception
    in ``postprocess_exception``); ``paraview``: the .pvd written (or None); ``plots``: PNG files."""

    case: Case
    params: dict[str, Any]
    settings: RunSettings
    out: Path
    model: Model
    result: Result
    summary: dict[str, Any] = field(default_factory=dict)
    case_summary: dict[str, Any] = field(default_factory=dict)
    postprocess_error: str = ""
    postprocess_exception: BaseException | None = None
    paraview: Path | None = None
    plots: list[Path] = field(default_factory=list)

    @property
    def status(self) -> str:
        """How the run ended (the result's status)."""
        return self.result.status

    @property
    def kind(self) -> str:
        """:func:`status_kind` of the status."""
        return status_kind(self.status)

    @property
    def completed(self) -> bool:
        """True if the run finished, or the case's monitor stopped it (both end as designed)."""
        return self.kind in ("finished", "stopped")

    @property
    def ok(self) -> bool:
        """Completed, and the case's postprocess (if run) did not fail."""
        return self.completed and not self.postprocess_error


def build_model(case: Case, params: Mapping[str, Any]) -> Model:
    """The case's model for the resolved ``params``; CaseCodeError if its build() raises."""
    return _call_case(case, "build", lambda: case.build(dict(params)))


def _call_case(case: Case, step: str, f: Callable[[], Any]) -> Any:
    """``f()``, a call into the case's own code; its exception becomes a CaseCodeError."""
    try:
        return f()
    except Exception as exc:
        if isinstance(exc, FlexmbError):
            msg = f"model error in case '{case.name}'{'' if step == 'build' else f' ({step})'}: {exc}"
            hint = "check the parameters (flexmb info CASE)"
        else:
            msg, hint = f"case '{case.name}': {step}() failed: {type(exc).__name__}: {exc}", None
        raise CaseCodeError(msg, step, exc, hint) from exc


def run_case(case: Case | str | Path, overrides: Mapping[str, Any] | None = None, out: str | Path | None = None, *,
             overwrite: bool = False, reuse: bool = False, monitor: bool = True, postprocess: bool = True,
             paraview: bool = True, every: int | None = None, plots: bool = True, meta: Mapping[str, Any] | None = None,
             on_start: Callable[[RunStart], Callable[[float, int], None] | None] | None = None,
             companion_workers: int | None = None) -> RunOutcome:
    """Run the case ``case`` (a path or a loaded Case) with the parameter ``overrides`` into
    the run folder ``out`` (default ``runs/<case name>``); the one pipeline of flexmb. ``case``,
    ``overrides`` and ``out`` may be given by position; the others are keyword-only options, passed by name.

    ``overwrite``: replace an earlier run in ``out`` (only flexmb's files; RunDirError if it
    holds anything else). ``reuse``: do not simulate; take the run already in ``out`` (a sweep
    resuming a run whose result was complete). ``monitor``: apply the case's ``monitor``
    (a run it stops ends ``stopped: <reason>``). ``postprocess``: run the case's postprocess
    when the run finished or was stopped by the monitor. ``paraview``: export to
    ``out/paraview`` (every ``every``-th row, default :func:`frames_every`); ``plots``: the
    standard PNG plots into ``out``. ``meta``: extra facts for the run's meta.json.
    ``on_start(RunStart)``: called once the model is built, before the simulation; it may
    return a progress callback ``(t, newton_iterations)``. ``companion_workers``: worker processes
    for the case's companion runs (flexmb.app.companions; default: one fewer than the cores, 0:
    after the main run in this process)."""
    # matplotlib and meshio are imported in _finish, not at the top: they take a second to load, and
    # `flexmb info`/`--help`, sweeps without plots and scripts that only simulate never need them
    cs = case if isinstance(case, Case) else load_case(case)
    params = resolve_params(cs, dict(overrides or {}))
    settings = cs.settings(params)
    out = Path(out) if out is not None else Path("runs") / cs.name
    writer = RunWriter(out, overwrite=overwrite, meta={"case": str(cs.path), "case_name": cs.name, "title": cs.title,
                                                       "params": params, "flexmb_version": __version__, **(meta or {})})
    if not reuse:
        writer.check()  # before the build, which may take long
    # the postprocess's companion runs (flexmb.app.companions) start first, on a spare core
    comps = Companions(cs, companion_params(cs, params) if postprocess and cs.takes_companions else {}, companion_workers,
                       params)
    try:
        comps.start()
        model = build_model(cs, params)
        callback = _call_case(cs, "monitor", lambda: cs.monitor(model, params)) if monitor and not reuse else None
        progress = on_start(RunStart(cs, params, settings, model, out)) if on_start is not None else None
        if not reuse:
            try:
                simulate(model, **settings.as_dict(), out=writer, progress=progress, callback=callback)
            except SolverError:  # before the first step (initial accelerations): the run folder records it
                if not writer.opened:
                    raise
        outcome = RunOutcome(cs, params, settings, out, model, load(out))
        if not outcome.completed:  # no postprocess: stop the companions before the outputs are written
            comps.cancel()
        return _finish(cs, params, out, outcome, comps, postprocess, paraview, plots, every)
    finally:
        comps.cancel()


def _finish(cs: Case, params: dict[str, Any], out: Path, outcome: RunOutcome, comps: Companions, postprocess: bool,
            paraview: bool, plots: bool, every: int | None) -> RunOutcome:
    """The steps after the simulation: ParaView export and plots, the case's postprocess,
    summary.json. With companion runs on a worker process, the export and plots go to that
    worker (after the companions) while this process runs the postprocess."""
    # matplotlib and meshio load here, not at import (see run_case)
    from flexmb.results.paraview import planned_files, safe_name
    from flexmb.results.plots import standard_plot_files

    res = outcome.result
    every = frames_every(len(res.t), every) if paraview else None
    # each file is recorded in the manifest before it is written: a run killed while writing
    # leaves nothing that a later overwrite would take for a file of the user's
    if paraview:
        _record(out, [out / "paraview" / f for f in planned_files(len(res.t), "pvd", safe_name(cs.name), every)])
    if plots:
        _record(out, [out / f for f in standard_plot_files(res)])
    in_postprocess = postprocess and outcome.completed
    pending = comps.submit(write_outputs, str(out), cs.name, every, plots) if in_postprocess and (paraview or plots) else None
    if pending is None:
        outcome.paraview, outcome.plots = write_outputs(out, cs.name, every, plots, res)
    outcome.summary = {"status": res.status, "steps": int(res.stats.get("steps", 0)), "output_rows": int(res.t.size),
                       "final_time_s": float(res.t[-1]) if res.t.size else 0.0,
                       "wall_time_s": round(res.stats.get("wall_time", float("nan")), 3),
                       "newton_iterations": int(res.stats.get("newton_iterations", 0))}
    if in_postprocess:
        before = manifest.Snapshot(out)  # for files written other than through Python's open (recording)
        try:
            companions = None
            if comps.runs:
                outcome.summary["companion_runs"] = comps.describe()
                companions = comps.results()
            with manifest.recording(out):  # each file the postprocess writes, recorded before it is opened
                outcome.case_summary = cs.postprocess(res, outcome.model, params, out, companions)
        except Exception as exc:
            outcome.postprocess_error = f"postprocess() failed: {type(exc).__name__}: {exc}"
            outcome.postprocess_exception = exc
        finally:
            _record(out, [out / f for f in before.changed()])
        outcome.summary.update(outcome.case_summary)
    if pending is not None:
        try:
            written = pending.result()
        except Exception as exc:  # the worker died: write them here
            written = f"{type(exc).__name__}: {exc}"
        # an error in the worker: write them here, where it is raised with its traceback
        paths = write_outputs(out, cs.name, every, plots, res) if isinstance(written, str) else written
        outcome.paraview, outcome.plots = paths
    _record(out, [out / "summary.json"])
    write_json(out / "summary.json", outcome.summary)
    return outcome


def write_outputs(out: str | Path, case_name: str, every: int | None, plots: bool, result: Result | None = None
                  ) -> tuple[Path | None, list[Path]] | str:
    """The ParaView files (every ``every``-th row; None: none) and the standard plots (if
    ``plots``) of the run in ``out`` (``result``: the run already loaded): (the .pvd, the PNGs).
    In a worker process (``result`` None) an exception is returned as its text."""
    # matplotlib and meshio load here, not at import (see run_case)
    from flexmb.results.paraview import export, safe_name
    from flexmb.results.plots import standard_plots

    try:
        res = load(out) if result is None else result
        pvd = export(res, Path(out) / "paraview", "pvd", safe_name(case_name), every) if every is not None else None
        return pvd, (standard_plots(res, out) if plots else [])
    except Exception as exc:
        if result is not None:
            raise
        return f"{type(exc).__name__}: {exc}"


def _record(out: Path, paths) -> None:
    """Record ``paths`` (inside ``out``; relative ones to the working directory, like ``out``);
    RunDirError if one would be written through a symbolic link in ``out``."""
    paths = [Path(p).absolute() for p in paths]  # manifest.record reads relative paths as relative to out
    manifest.refuse_links(out, paths)
    manifest.record(out, paths)
