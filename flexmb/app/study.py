"""Parameter studies: sweeps of a case file over a grid, a list of runs or random samples, run
on local worker processes (default) or on a Dask distributed cluster (flexmb.app.executors),
resumable. Each run goes through the one run pipeline (flexmb.app.run.run_case), the case's
monitor included; the table is flexmb.app.table.

    from flexmb.app.study import sweep, read_table
    s = sweep("cases/four_bar_rigid_limit.py", grid={"EA": [1e5, 1e6, 1e7]}, out_dir="runs/ea")
    tab = read_table(s.table)              # dict of columns: numpy arrays (numbers) or lists (text)

A sweep directory holds

* ``sweep.json`` — the case file, the fixed parameters, every run's parameter overrides, the
  chosen outputs and the counts of the last invocation (runs, ran, failed, skipped);
* ``run_0000``, ``run_0001``, … — one per run, numbered in the order of the run list (a grid
  is expanded with the first name varying slowest): the run's streamed result directory
  (``flexmb.load(DIR)``, see flexmb.results.rundir), the case's postprocess files,
  ``summary.json``, ``params.json`` (the overrides and the resolved parameters) and
  ``row.json`` (its row of the table, written last, atomically), all listed in the run
  folder's manifest (flexmb.results.manifest);
* ``summary.csv`` — one row per run: the varied parameters, how the run ended (``status``:
  finished / stopped / failed / error, and ``reason``), generic outputs (wall time, steps,
  Newton iterations, final time, energy-balance error, peak axial force and where), the
  case's postprocess summary and the chosen ``outputs``. Rewritten after every run.

Statuses: ``finished``; ``stopped`` — the case's monitor ended the run as designed (e.g. at
the elastic limit), ``reason`` says why; it counts as done, not as a failure, and its
postprocess runs as after a finished run (as ``flexmb run`` does); ``failed`` — a Newton
failure (its result up to the failure is kept); ``error`` — a bad parameter value, a build()
or postprocess that raises, a lost worker. Failures never stop the sweep; each is in the table
with its reason.

Resume: calling the same sweep again (or ``flexmb sweep`` with the same arguments) skips every
run whose ``row.json`` records an outcome (a finished or stopped run, or a failure unless
``retry_failed``); a run whose result says ``finished`` or ``stopped`` but whose row is missing
(killed during postprocess) gets its row from the result files without simulating again; any
other run (killed mid-way: no end record) is simulated again from the start, after removing
what flexmb wrote in its folder (a folder holding anything else is left alone and the run
recorded as an error). A run directory holding other parameters than the run asks for stops
the sweep (a different sweep in the same place).

Execution (flexmb.app.executors): local worker processes (one per core by default,
``workers=0`` runs in this process), or any Dask ``Client`` (``client=``) or scheduler address
(``scheduler="tcp://host:8786"``). Workers on other machines need flexmb installed and the case
file and the sweep directory at the same path (a shared file system): they write the run
directories.
"""


from __future__ import annotations

import itertools
import json
import math
import sys
import time as _time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from flexmb.app.casefile import Case, load_case, resolve_params
from flexmb.app.executors import require_dask, run_tasks
from flexmb.app.progress import SweepProgress
from flexmb.app.run import run_case, status_kind
from flexmb.app.table import GENERIC_COLUMNS, TIMING_COLUMNS, generic_outputs, named_outputs, read_table, scalar, write_table
from flexmb.errors import CaseCodeError, CaseError, RunDirError, StudyError
from flexmb.results import manifest
from flexmb.results.files import json_normal, write_json
from flexmb.results.load import load

__all__ = ["StudyError", "SweepSummary", "sweep", "read_table", "write_table", "expand_grid", "sample_runs", "run_one",
           "GENERIC_COLUMNS", "TIMING_COLUMNS", "DONE"]

SWEEP_FORMAT = "flexmb-sweep"
DONE = ("finished", "stopped")
"""Statuses of a run that ended as designed: done on resume, not counted as failed."""


@dataclass
class SweepSummary:
    """What a sweep did: ``n_runs`` in its list, ``ran`` simulated now, ``skipped`` (found
    done on disk), ``failed`` (status failed or error, whether run now or before), ``stopped``
    (ended by the case's monitor; not failures), the table path, the rows (dicts, in run
    order) and the wall time of this invocation."""

    out_dir: Path
    table: Path
    n_runs: int
    ran: int
    skipped: int
    failed: int
    wall_time_s: float
    rows: list[dict] = field(default_factory=list)
    interrupted: bool = False
    stopped: int = 0

    def line(self) -> str:
        """One line: how many ran, failed, were stopped by the case's monitor, were skipped."""
        stopped = f", {self.stopped} stopped by the case's monitor" if self.stopped else ""
        return (f"{self.n_runs} runs: {self.ran} ran, {self.skipped} skipped (done before), {self.failed} failed{stopped}"
                f"{' (interrupted)' if self.interrupted else ''}; wall time {self.wall_time_s:.1f} s")


# ------------------------------------------------------------------------------ run lists
def expand_grid(grid: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """All combinations of the grid's values (cartesian product), the first name varying slowest."""
    names = list(grid)
    for n in names:
        vals = grid[n]
        if isinstance(vals, (str, bytes)) or not isinstance(vals, Iterable) or len(list(vals)) == 0:
            raise StudyError(f"grid entry '{n}' must be a non-empty list of values, not {vals!r}",
                             "e.g. grid={'damping': [0.0, 0.01, 0.05]}")
    return [dict(zip(names, combo)) for combo in itertools.product(*(list(grid[n]) for n in names))]


def sample_runs(ranges: Mapping[str, Sequence[Any]], samples: int, seed: int,
                defaults: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """``samples`` random parameter sets drawn with ``numpy.random.default_rng(seed)``.

    ``ranges[name]``: ``(lo, hi)`` uniform, ``(lo, hi, "log")`` log-uniform (lo, hi > 0), or a
    list of values to choose from. A parameter whose default is an integer gets integers in
    [lo, hi]. Same seed, same runs."""
    if not (isinstance(samples, int) and samples >= 1):
        raise StudyError(f"samples = {samples!r} must be a positive integer", "e.g. samples=20")
    rng = np.random.default_rng(seed)
    defaults = defaults or {}
    specs = {}
    for name, r in ranges.items():
        if isinstance(r, list):
            if not r:
                raise StudyError(f"range of '{name}': the list of choices is empty", "give at least one value")
            specs[name] = ("choice", r)
            continue
        ok = isinstance(r, tuple) and len(r) in (2, 3) and all(isinstance(v, (int, float)) for v in r[:2])
        log = ok and len(r) == 3
        if ok and log and r[2] != "log":
            ok = False
        if not ok or not (math.isfinite(r[0]) and math.isfinite(r[1]) and r[0] <= r[1]) or (log and r[0] <= 0):
            raise StudyError(f"range of '{name}' = {r!r} is not (lo, hi) or (lo, hi, 'log') with lo <= hi (> 0 for log)",
                             "e.g. --range damping=0:0.1 or --range EA=1e5:1e8:log")
        integer = isinstance(defaults.get(name), int) and not isinstance(defaults.get(name), bool)
        specs[name] = ("log" if log else "uniform", (float(r[0]), float(r[1])), integer)
    runs = []
    for _ in range(samples):
        run = {}
        for name, spec in specs.items():
            if spec[0] == "choice":
                run[name] = spec[1][int(rng.integers(len(spec[1])))]
                continue
            lo, hi = spec[1]
            if spec[2]:
                run[name] = int(rng.integers(math.ceil(lo), math.floor(hi) + 1))
            elif spec[0] == "log":
                run[name] = float(math.exp(rng.uniform(math.log(lo), math.log(hi))))
            else:
                run[name] = float(rng.uniform(lo, hi))
        runs.append(run)
    return runs


# ------------------------------------------------------------------------------ one run (worker side)
_CASES: dict[str, Case] = {}


def _case(path: str) -> Case:
    if path not in _CASES:
        _CASES[path] = load_case(path)
    return _CASES[path]


def _row_status(status: str) -> tuple[str, str]:
    """(status, reason) of a table row from a run's status."""
    kind = status_kind(status)
    if kind in ("finished", "stopped", "failed"):
        return kind, status.partition(": ")[2] if kind != "finished" else ""
    return "error", status


def run_one(case_path: str, index: int, overrides: dict[str, Any], run_dir: str, outputs: Sequence[Any] = (),
            postprocess: bool = True, simulate_run: bool = True) -> dict[str, Any]:
    """Run one parameter set of a sweep (the task a worker executes) and return its table row.

    Runs flexmb.app.run.run_case (no ParaView files or plots) into ``run_dir`` with the case's
    monitor, ``simulate_run=False``: reuses the finished (or stopped) result there; then the
    chosen ``outputs``; writes ``params.json`` and ``row.json`` there. Never raises for a bad
    run: a bad parameter or a build()/postprocess() exception gives ``status`` "error", a
    Newton failure "failed", a stop by the case's monitor "stopped", each with its ``reason``."""
    d = Path(run_dir)
    row: dict[str, Any] = {"run": d.name, "status": "error", "reason": ""}
    info: dict[str, Any] = {"index": index, "case": case_path, "overrides": json_normal(overrides), "params": None}
    case = _case(case_path)
    try:
        if simulate_run:
            manifest.clear(d, "sweep run directory")  # what an earlier, unfinished attempt wrote
        params = resolve_params(case, overrides)
        info["params"] = params
        outcome = run_case(case, params, d, overwrite=True, reuse=not simulate_run, postprocess=postprocess,
                           paraview=False, plots=False, meta={"sweep_index": index},
                           companion_workers=0)  # the sweep's workers already use the cores
    except RunDirError as exc:  # a folder holding files that are not flexmb's: write nothing into it
        row["reason"] = f"{exc}"
        return row
    except CaseCodeError as exc:
        row["reason"] = f"{exc.step}() failed: {type(exc.cause).__name__}: {exc.cause}"
        return _finish(d, info, row)
    except CaseError as exc:
        row["reason"] = f"bad parameter: {exc}"
        return _finish(d, info, row)
    except Exception as exc:  # e.g. an exception in the case's drive functions: the run folder records it
        row.update(status="failed", reason=f"{type(exc).__name__}: {exc}")
        try:
            row.update(generic_outputs(load(d)))
        except Exception:  # nothing (readable) was written
            pass
        return _finish(d, info, row)
    res = outcome.result
    status, reason = _row_status(res.status)
    row.update(status=status, reason=reason)
    row.update(generic_outputs(res))
    if outcome.completed:
        if outcome.postprocess_error:
            e = outcome.postprocess_exception
            row.update(status="error", reason=f"postprocess failed: {type(e).__name__}: {e}")
        else:
            try:
                row.update({str(k): scalar(v) for k, v in outcome.case_summary.items()})
                row.update(named_outputs(res, outcome.model, params, outputs))
            except Exception as exc:
                row.update(status="error", reason=f"postprocess failed: {type(exc).__name__}: {exc}")
    return _finish(d, info, row)


def _finish(d: Path, info: dict, row: dict) -> dict:
    d.mkdir(parents=True, exist_ok=True)
    manifest.record(d, ["params.json", "row.json"])  # before writing them: a kill in between leaves nothing unrecorded
    write_json(d / "params.json", info)
    write_json(d / "row.json", row)
    return row


# ------------------------------------------------------------------------------ the sweep
def _load_json(p: Path) -> Any:
    try:
        return json.loads(p.read_text())
    except (OSError, ValueError):
        return None


def _end_status(d: Path) -> str:
    end = _load_json(d / "end.json")
    status = end.get("status") if isinstance(end, dict) else None
    return status if isinstance(status, str) else ""


def sweep(case: str | Path | Any, grid: Mapping[str, Sequence[Any]] | None = None, *,
          runs: Sequence[Mapping[str, Any]] | None = None, samples: int | None = None,
          ranges: Mapping[str, Sequence[Any]] | None = None, seed: int = 0, params: Mapping[str, Any] | None = None,
          outputs: Sequence[str | Callable] = (), out_dir: str | Path | None = None, client: Any = None,
          scheduler: str | None = None, workers: int | None = None, resume: bool = True, retry_failed: bool = False,
          postprocess: bool = True, progress: bool | TextIO = True) -> SweepSummary:
    """Run the case file ``case`` (a path or a loaded :class:`flexmb.app.casefile.Case`) for many
    parameter sets and collect a summary table. ``case`` and ``grid`` may be given by position; every
    other argument is a keyword-only option, passed by name.

    The runs: ``grid`` (name -> values, every combination), ``runs`` (a list of dicts) or ``samples`` random
    sets from ``ranges`` with ``seed`` (see :func:`sample_runs`); exactly one of them. ``params``: fixed
    overrides for every run (like ``flexmb run --param``). Names the case does not declare are refused before
    anything runs; a bad *value* makes that run an error. ``outputs``: extra columns (see :func:`run_one`:
    ``node:NAME``, ``coordinate:NAME``, ``peak_force:PATTERN`` or callables). ``out_dir``: the sweep directory
    (default ``runs/<case>_sweep``); an existing one is resumed (``resume=False`` refuses it); ``retry_failed``:
    runs that failed are run again on resume; ``postprocess``: False skips the case's postprocess. Execution:
    ``client`` (a ``dask.distributed.Client`` or a ``concurrent.futures.Executor``), else ``scheduler`` (a Dask
    address), else ``workers`` local processes (default: all cores; 0 = in this process). ``progress``: True
    (stderr), False or a stream. Returns a :class:`SweepSummary`; Ctrl-C stops the sweep after writing the table
    of the runs done (``interrupted``), then raises KeyboardInterrupt."""
    try:
        cs = case if isinstance(case, Case) else load_case(case)
    except CaseError as exc:
        raise StudyError(str(exc), exc.hint) from exc
    case_path = str(Path(cs.path).resolve())
    points, base, varied = _run_sets(cs, (grid, runs, samples), ranges, seed, params)
    overrides = [{**base, **p} for p in points]
    if client is None and scheduler is not None:
        require_dask(scheduler)
    out = Path(out_dir) if out_dir is not None else Path("runs") / f"{cs.name}_sweep"
    outputs = list(outputs)
    spec = {"format": SWEEP_FORMAT, "case": case_path, "case_name": cs.name, "params": json_normal(base),
            "varied": varied, "runs": json_normal(overrides),
            "outputs": [o if isinstance(o, str) else getattr(o, "__name__", repr(o)) for o in outputs]}
    old = _load_json(out / "sweep.json")
    _check_sweep_dir(out, old, resume, case_path)
    width = max(4, len(str(len(overrides) - 1)))
    dirs = [out / f"run_{i:0{width}d}" for i in range(len(overrides))]
    rows, tasks = _resume(dirs, overrides, retry_failed)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "sweep.json", {**spec, "created": (old or {}).get("created") or _time.strftime("%Y-%m-%dT%H:%M:%S%z")})
    table = out / "summary.csv"
    skipped = len(rows) + sum(1 for _, sim in tasks if not sim)
    bar = _progress_bar(progress, len(overrides), rows, skipped, bool(tasks))

    def with_params(i: int, row: dict) -> dict:
        return {"run": dirs[i].name, **{k: points[i][k] for k in varied if k in points[i]}, **row}

    rows = {i: with_params(i, r) for i, r in rows.items()}
    index = {dirs[i].name: (i, sim) for i, sim in tasks}

    def record(name: str, row: dict) -> None:
        i, simulated = index[name]
        rows[i] = with_params(i, row)
        write_table(table, [rows[k] for k in sorted(rows)], varied)
        if bar:
            bar.update(row, simulated)

    def lost(name: str, exc: BaseException) -> None:  # no row.json: the run is done again on resume
        record(name, {"run": name, "status": "error", "reason": f"lost: {type(exc).__name__}: {exc}"})

    wall0 = _time.perf_counter()
    write_table(table, [rows[k] for k in sorted(rows)], varied)
    try:
        interrupted = run_tasks(run_one, [(dirs[i].name, (case_path, i, overrides[i], str(dirs[i]), outputs, postprocess, sim))
                                          for i, sim in tasks], record, lost, client=client, scheduler=scheduler,
                                workers=workers, label=f"flexmb-{cs.name}")
    finally:
        if bar:
            bar.close()
    ordered = [rows[k] for k in sorted(rows)]
    write_table(table, ordered, varied)
    ran = sum(1 for i, sim in tasks if sim and i in rows)
    summary = _close_sweep(out, table, ordered, (len(overrides), ran, skipped), wall0, interrupted)
    if interrupted:
        raise KeyboardInterrupt
    return summary


def _run_sets(cs: Case, chosen: tuple[Any, Any, Any], ranges: Mapping[str, Sequence[Any]] | None, seed: int,
              params: Mapping[str, Any] | None) -> tuple[list[dict[str, Any]], dict[str, Any], list[str]]:
    """(the parameter sets varied, one per run; the fixed overrides ``params``; the names varied, in order of
    appearance) of :func:`sweep`'s ``chosen`` = (grid, runs, samples), exactly one of them given; names the
    case ``cs`` does not declare are refused."""
    grid, runs, samples = chosen
    given = [k for k, v in (("grid", grid), ("runs", runs), ("samples", samples)) if v is not None]
    if len(given) != 1:
        raise StudyError(f"give exactly one of grid, runs or samples (got {', '.join(given) or 'none'})",
                         "a grid: --grid name=v1,v2; random samples: --samples N --range name=lo:hi")
    if grid is not None:
        points = expand_grid(grid)
    elif runs is not None:
        points = [dict(r) for r in runs]
        if not points or not all(isinstance(r, Mapping) for r in runs):
            raise StudyError("runs must be a non-empty list of dicts (parameter name -> value)", "e.g. runs=[{'E': 1e9}]")
    else:
        if not ranges:
            raise StudyError("samples need ranges of the parameters to draw", "e.g. --range damping=0:0.1")
        points = sample_runs(ranges, samples, seed, cs.defaults)
    base = dict(params or {})
    varied: list[str] = []
    for p in points:
        varied += [k for k in p if k not in varied]
    unknown = [k for k in [*base, *varied] if k not in cs.defaults]
    if unknown:
        raise StudyError(f"unknown parameter '{unknown[0]}' for case '{cs.name}'",
                         f"known parameters: {', '.join(sorted(cs.defaults))}")
    return points, base, varied


def _progress_bar(progress: bool | TextIO, n_runs: int, rows: dict[int, dict], skipped: int,
                  to_run: bool) -> SweepProgress | None:
    """The sweep's progress lines on ``progress`` (True: stderr; False: none), shown at once if runs are
    ``to_run``, counting the ``rows`` of the runs done already."""
    stream = sys.stderr if progress is True else (progress or None)
    failed0 = sum(1 for r in rows.values() if r.get("status") not in DONE)
    bar = SweepProgress(n_runs, len(rows), skipped, failed0, stream) if stream else None
    if bar and to_run:
        bar.show()
    return bar


def _check_sweep_dir(out: Path, old: Any, resume: bool, case_path: str) -> None:
    """Refuse a sweep directory ``out`` that exists and is not empty unless it is a sweep of the same case
    (its sweep.json read as ``old``) to resume."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        if not isinstance(old, dict) or old.get("format") != SWEEP_FORMAT:
            raise StudyError(f"'{out}' exists and is not a flexmb sweep directory", "choose another output directory")
        if not resume:
            raise StudyError(f"sweep directory '{out}' already exists", "resume it (the default) or choose another one")
        if old.get("case") != case_path:
            raise StudyError(f"sweep directory '{out}' holds a sweep of another case ({old.get('case')})",
                             "choose another output directory")


def _close_sweep(out: Path, table: Path, ordered: list[dict], counts: tuple[int, int, int], wall0: float,
                 interrupted: bool) -> SweepSummary:
    """The sweep's summary of its rows ``ordered``, ``counts`` = (runs, ran, skipped), also written to
    sweep.json as its ``last`` sweep."""
    n_runs, ran, skipped = counts
    failed = sum(1 for r in ordered if r.get("status") not in DONE)
    stopped = sum(1 for r in ordered if r.get("status") == "stopped")
    summary = SweepSummary(out, table, n_runs, ran, skipped, failed, _time.perf_counter() - wall0, ordered,
                           interrupted, stopped)
    write_json(out / "sweep.json", {**_load_json(out / "sweep.json"),
                                    "last": {"runs": summary.n_runs, "ran": summary.ran, "skipped": summary.skipped,
                                             "failed": summary.failed, "stopped": summary.stopped,
                                             "wall_time_s": summary.wall_time_s, "interrupted": interrupted,
                                             "ended": _time.strftime("%Y-%m-%dT%H:%M:%S%z")}})
    return summary


def _resume(dirs: list[Path], overrides: list[dict], retry_failed: bool) -> tuple[dict[int, dict], list[tuple[int, bool]]]:
    """What is done already: (rows of the runs done, keyed by index; tasks (index, simulate?)).
    StudyError if a run directory holds a run of another sweep."""
    rows: dict[int, dict] = {}
    tasks: list[tuple[int, bool]] = []
    for i, (d, ov) in enumerate(zip(dirs, overrides)):
        info = _load_json(d / "params.json")
        if isinstance(info, dict) and info.get("overrides") != json_normal(ov):
            raise StudyError(f"'{d}' holds a run with other parameters ({info.get('overrides')}) than this sweep's run "
                             f"{i} ({json_normal(ov)})", "a different sweep is in that directory: choose another one")
        if d.exists() and not isinstance(info, dict) and (d / "meta.json").exists():
            meta = _load_json(d / "meta.json")
            inner = meta.get("meta", {}) if isinstance(meta, dict) else {}
            inner = inner if isinstance(inner, dict) else {}
            prev = json_normal(inner.get("params", {}))
            prev = prev if isinstance(prev, dict) else {}
            if inner.get("sweep_index") != i or any(prev.get(k) != v for k, v in json_normal(ov).items()):
                raise StudyError(f"'{d}' holds a run of another sweep", "choose another sweep directory")
        row = _load_json(d / "row.json")
        if isinstance(row, dict) and (row.get("status") in DONE or not retry_failed):
            rows[i] = row
        elif status_kind(_end_status(d)) in DONE and not (isinstance(row, dict)
                                                          and str(row.get("reason", "")).startswith("build")):
            tasks.append((i, False))  # the simulation is done: only its row is missing (or postprocess to redo)
        else:
            tasks.append((i, True))
    return rows, tasks
