"""Parameter studies: sweeps of a case file over a grid, a list of runs or random samples, run
on local worker processes (default) or on a Dask distributed cluster, resumable.

    from flexmb.app.study import sweep, read_table
    s = sweep("cases/four_bar_rigid_limit.py", grid={"EA": [1e5, 1e6, 1e7]}, out_dir="runs/ea")
    tab = read_table(s.table)              # dict of columns: numpy arrays (numbers) or lists (text)

A sweep directory holds

* ``sweep.json`` — the case file, the fixed parameters, every run's parameter overrides, the
  chosen outputs and the counts of the last invocation (runs, ran, failed, skipped);
* ``run_0000``, ``run_0001``, … — one per run, numbered in the order of the run list (a grid
  is expanded with the first name varying slowest): the run's streamed result directory
  (``flexmb.load(DIR)``, see flexmb.results.rundir), the case's postprocess files, ``params.json``
  (the overrides and the resolved parameters) and ``row.json`` (its row of the table, written
  last, atomically);
* ``summary.csv`` — one row per run: the varied parameters, how the run ended (``status``:
  finished / failed / error, and ``reason``), generic outputs (wall time, steps, Newton
  iterations, final time, energy-balance error, peak axial force and where), the case's
  postprocess summary and the chosen ``outputs``. Rewritten after every run.

Resume: calling the same sweep again (or ``flexmb sweep`` with the same arguments) skips every
run whose ``row.json`` records an outcome (a finished run, or a failure unless
``retry_failed``); a run whose result says ``finished`` but whose row is missing (killed during
postprocess) gets its row from the result files without simulating again; any other run
(killed mid-way: no end record) is simulated again from the start. A run directory holding
other parameters than the run asks for stops the sweep (a different sweep in the same place).

Failures never stop the sweep: a bad parameter value or a build() that raises is an
``error``, a Newton failure a ``failed`` run (its result up to the failure is kept); both are
in the table with their reason.

Execution: local worker processes (``concurrent.futures.ProcessPoolExecutor``, spawned, one
per core by default, ``workers=0`` runs in this process), or any Dask ``Client`` (``client=``)
or scheduler address (``scheduler="tcp://host:8786"``): ``client.submit`` + ``as_completed``,
no scheduler of our own. Workers on other machines need flexmb installed and the case file and
the sweep directory at the same path (a shared file system): they write the run directories.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import csv
import fnmatch
import io
import itertools
import json
import math
import multiprocessing
import os
import shutil
import sys
import threading
import time as _time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from flexmb.app.progress import _clock
from flexmb.errors import FlexmbError

__all__ = ["StudyError", "SweepSummary", "sweep", "read_table", "expand_grid", "sample_runs", "run_one"]

SWEEP_FORMAT = "flexmb-sweep"
GENERIC_COLUMNS = ("status", "reason", "wall_time_s", "steps", "newton_iterations", "final_time_s",
                   "energy_balance_error_J", "peak_axial_force_N", "peak_axial_force_element")
TIMING_COLUMNS = ("wall_time_s",)  # the only columns that differ between two runs of the same sweep


class StudyError(FlexmbError, ValueError):
    """A sweep that cannot start: bad specification, unknown parameter name, a sweep directory
    holding another sweep, a missing optional dependency. ``hint`` says what to do."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.hint = hint


@dataclass
class SweepSummary:
    """What a sweep did: ``n_runs`` in its list, ``ran`` simulated now, ``skipped`` (found
    done on disk), ``failed`` (status failed or error, whether run now or before), the table
    path, the rows (dicts, in run order) and the wall time of this invocation."""

    out_dir: Path
    table: Path
    n_runs: int
    ran: int
    skipped: int
    failed: int
    wall_time_s: float
    rows: list[dict] = field(default_factory=list)
    interrupted: bool = False

    def line(self) -> str:
        """One line: how many ran, failed, were skipped."""
        return (f"{self.n_runs} runs: {self.ran} ran, {self.skipped} skipped (done before), {self.failed} failed"
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
_CASES: dict[str, Any] = {}


def _case(path: str):
    from flexmb.app.casefile import load_case

    if path not in _CASES:
        _CASES[path] = load_case(path)
    return _CASES[path]


def _json_normal(obj: Any) -> Any:
    """``obj`` as it reads back from JSON (tuples -> lists, numpy scalars -> numbers)."""
    from flexmb.results.result import _jsonable

    return json.loads(json.dumps(obj, default=_jsonable))


def _write_json(path: Path, obj: Any) -> None:
    from flexmb.results.result import _jsonable

    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(obj, indent=1, default=_jsonable), encoding="utf-8")
    os.replace(tmp, path)


def _scalar(v: Any) -> Any:
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return float(v)
    if isinstance(v, str):
        return v
    return repr(v)


def _generic_outputs(res) -> dict[str, Any]:
    """Outputs every run gets: statistics, final time, energy balance error, peak axial force."""
    s = res.stats
    out: dict[str, Any] = {"wall_time_s": float(s.get("wall_time", float("nan"))), "steps": int(s.get("steps", 0)),
                           "newton_iterations": int(s.get("newton_iterations", 0)),
                           "final_time_s": float(res.t[-1]) if res.t.size else float("nan")}
    e = res.total_energy
    ok = np.isfinite(e)
    out["energy_balance_error_J"] = float(np.abs(e[ok] - e[ok][0]).max()) if ok.any() else float("nan")
    f = res.element_forces
    if f.size:
        n = np.abs(f[:, :, 0])
        n = np.where(np.isfinite(n), n, -1.0)
        _, k = np.unravel_index(int(np.argmax(n)), n.shape)
        out["peak_axial_force_N"] = float(n[:, k].max())
        out["peak_axial_force_element"] = res.element_names[k]
    else:
        out["peak_axial_force_N"], out["peak_axial_force_element"] = float("nan"), ""
    return out


def _named_outputs(res, model, params: dict, outputs: Sequence[Any]) -> dict[str, Any]:
    """The chosen outputs: ``"node:NAME"`` final position (columns NAME.x/.y/.z), ``"coordinate:NAME"``
    final value, ``"peak_force:PATTERN"`` peak |axial force| over the beam elements matching the
    glob PATTERN, a bare name (node, coordinate or element pattern, found in that order), or a
    callable ``f(result, model, params) -> dict``."""
    out: dict[str, Any] = {}
    for spec in outputs:
        if callable(spec):
            out.update({str(k): _scalar(v) for k, v in dict(spec(res, model, params)).items()})
            continue
        kind, _, name = str(spec).partition(":")
        if not name:
            kind, name = ("node" if spec in res.node_names else "coordinate" if spec in res.coordinate_names
                          else "peak_force"), str(spec)
        if kind == "node":
            x = res.node_position(name)[-1]
            out.update({f"{name}.{a}": float(v) for a, v in zip("xyz", x)})
        elif kind == "coordinate":
            out[name] = float(res.coordinate(name)[-1])
        elif kind == "peak_force":
            idx = [i for i, e in enumerate(res.element_names) if fnmatch.fnmatchcase(e, name)]
            if not idx:
                raise KeyError(f"output '{spec}': no node, coordinate or beam element matches '{name}'")
            out[f"peak_N[{name}]"] = float(np.nanmax(np.abs(res.element_forces[:, idx, 0]))) if res.t.size else float("nan")
        else:
            raise KeyError(f"output '{spec}': unknown kind '{kind}' (node:, coordinate:, peak_force:)")
    return out


def _clear_run_dir(d: Path) -> None:
    """Remove an unfinished run directory of this sweep (only flexmb's own files)."""
    from flexmb.results.rundir import is_run_dir

    if not d.exists():
        return
    ours = {"params.json", "row.json", "meta.json", "end.json"}

    def own(name: str) -> bool:  # also a chunk or a temporary file a killed run left half-written
        return name in ours or name.startswith("chunk_") or (name.startswith(".") and name.endswith(".tmp"))

    if is_run_dir(d) or all(own(f.name) for f in d.iterdir()):
        shutil.rmtree(d)
    else:
        raise StudyError(f"'{d}' holds files that are not a flexmb run; it is not deleted",
                         "move it away or choose another sweep directory")


def run_one(case_path: str, index: int, overrides: dict[str, Any], run_dir: str, outputs: Sequence[Any] = (),
            postprocess: bool = True, simulate_run: bool = True) -> dict[str, Any]:
    """Run one parameter set of a sweep (the task a worker executes) and return its table row.

    Loads the case, resolves ``overrides`` against its DEFAULTS, builds, simulates with the
    result streamed to ``run_dir`` (``simulate_run=False``: reuse the finished result there),
    runs the case's postprocess into ``run_dir`` and the chosen ``outputs``, writes
    ``params.json`` and ``row.json`` there. Never raises for a bad run: a bad parameter or a
    build()/postprocess() exception gives ``status`` "error", a Newton failure "failed", each
    with its ``reason``."""
    from flexmb.app.casefile import CaseError, resolve_params
    from flexmb.results.result import load
    from flexmb.results.rundir import RunWriter
    from flexmb.solvers.simulate import simulate

    d = Path(run_dir)
    row: dict[str, Any] = {"run": d.name, "status": "error", "reason": ""}
    info: dict[str, Any] = {"index": index, "case": case_path, "overrides": _json_normal(overrides), "params": None}
    case = _case(case_path)
    if simulate_run:
        _clear_run_dir(d)
    try:
        params = resolve_params(case, overrides)
        info["params"] = params
    except CaseError as exc:
        row["reason"] = f"bad parameter: {exc}"
        return _finish(d, info, row)
    try:
        model = case.build(params)
    except Exception as exc:
        row["reason"] = f"build() failed: {type(exc).__name__}: {exc}"
        return _finish(d, info, row)
    if simulate_run:
        writer = RunWriter(d, meta={"case": case_path, "case_name": case.name, "title": case.title, "params": params,
                                    "sweep_index": index})
        try:
            simulate(model, params["t_end"], params["dt"], rho_inf=params.get("rho_inf", 0.9),
                     output_every=params.get("output_every", 1), out=writer)
        except Exception as exc:  # e.g. SolverError before the first step; the run directory records it
            row.update(status="failed", reason=f"{type(exc).__name__}: {exc}")
            if not writer.opened:
                return _finish(d, info, row)
    res = load(d)  # what is on disk is what the user gets
    if res.status == "finished":
        row.update(status="finished", reason="")
    elif res.status.startswith("failed"):
        row.update(status="failed", reason=res.status.partition(": ")[2] or res.status)
    else:
        row.update(status="error", reason=res.status)
    row.update(_generic_outputs(res))
    if row["status"] == "finished":
        try:
            if postprocess:
                row.update({str(k): _scalar(v) for k, v in case.postprocess(res, model, params, d).items()})
            row.update(_named_outputs(res, model, params, outputs))
        except Exception as exc:
            row.update(status="error", reason=f"postprocess failed: {type(exc).__name__}: {exc}")
    return _finish(d, info, row)


def _finish(d: Path, info: dict, row: dict) -> dict:
    d.mkdir(parents=True, exist_ok=True)
    _write_json(d / "params.json", info)
    _write_json(d / "row.json", row)
    return row


def _watch_parent(parent: int) -> None:
    """Worker-process initializer: exit when the sweep's process dies (SIGKILL leaves no one
    to stop the pool), so no orphan keeps writing into the sweep directory."""

    def watch() -> None:
        while True:
            if os.getppid() != parent:
                os._exit(1)
            _time.sleep(0.2)

    threading.Thread(target=watch, daemon=True, name="flexmb-parent-watch").start()


# ------------------------------------------------------------------------------ the table
def _columns(rows: list[dict], varied: list[str]) -> list[str]:
    cols = ["run", *varied, *GENERIC_COLUMNS]
    for r in rows:
        cols += [k for k in r if k not in cols]
    return cols


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return repr(v)  # shortest exact round trip
    if isinstance(v, (list, tuple, dict)):
        return json.dumps(v)
    return str(v)


def write_table(path: Path, rows: list[dict], varied: list[str]) -> Path:
    """Write ``rows`` (dicts) as CSV with the parameter columns ``varied`` first (atomic)."""
    cols = _columns(rows, varied)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    for r in rows:
        w.writerow([_cell(r.get(c)) for c in cols])
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(buf.getvalue(), encoding="utf-8")
    os.replace(tmp, path)
    return path


def _column(cells: list[str]) -> np.ndarray | list:
    if all(c == "" for c in cells):
        return list(cells)
    if all(c in ("True", "False") for c in cells):
        return np.array([c == "True" for c in cells])
    try:
        return np.array([int(c) for c in cells], dtype=np.int64)
    except ValueError:
        pass
    try:
        return np.array([float(c) if c != "" else np.nan for c in cells], dtype=float)
    except ValueError:
        return list(cells)


def read_table(path: str | Path) -> dict[str, np.ndarray | list]:
    """Read a sweep's ``summary.csv`` (or a sweep directory) without pandas: a dict column ->
    numpy array (int64 if every cell is an integer, bool for True/False, float with NaN for
    empty cells) or a list of str (text columns such as ``status``, ``reason``, ``run``, and
    columns with no value at all)."""
    p = Path(path)
    if p.is_dir():
        p = p / "summary.csv"
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise StudyError(f"cannot read the sweep table '{p}': {exc.strerror}",
                         "give a summary.csv or a sweep directory") from None
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        raise StudyError(f"'{p}' is empty", "give the summary.csv written by a sweep")
    head, body = rows[0], rows[1:]
    return {c: _column([r[i] if i < len(r) else "" for r in body]) for i, c in enumerate(head)}


# ------------------------------------------------------------------------------ progress
class SweepProgress:
    """Progress of a whole sweep on stderr: runs done / total (``done`` and ``skipped`` found
    on disk, ``failed`` among them), failures, elapsed, time left (elapsed time per run
    simulated so far, times the runs left: the workers' parallelism is in it)."""

    def __init__(self, total: int, done: int, skipped: int, failed: int = 0, stream: TextIO | None = None) -> None:
        self.total, self.done, self.failed = total, done, failed
        self.ran = 0
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._start = _time.monotonic()
        self._skipped = skipped

    def line(self) -> str:
        """The current status line."""
        el = _time.monotonic() - self._start
        left = self.total - self.done
        eta = el / self.ran * left if self.ran else float("inf")
        if left == 0:
            eta = 0.0
        return (f"sweep: {self.done}/{self.total} runs done ({self._skipped} skipped, {self.failed} failed)  "
                f"elapsed {_clock(el)}  left {_clock(eta)}")

    def update(self, row: dict, simulated: bool) -> None:
        """Account for one finished task."""
        self.done += 1
        self.ran += int(simulated)
        if row.get("status") != "finished":
            self.failed += 1
            self._write(f"{row.get('run')}: {row.get('status')}: {row.get('reason')}")
        self._write(self.line(), redraw=True)

    def _write(self, text: str, redraw: bool = False) -> None:
        try:
            if self.tty:
                self.stream.write(("\r" if redraw else "\r\x1b[K") + text + ("" if redraw else "\n"))
            else:
                self.stream.write(text + "\n")
            self.stream.flush()
        except (OSError, ValueError):
            pass

    def close(self) -> None:
        """End the progress line."""
        if self.tty:
            self._write("")


# ------------------------------------------------------------------------------ the sweep
def _load_json(p: Path) -> Any:
    try:
        return json.loads(p.read_text())
    except (OSError, ValueError):
        return None


def _end_status(d: Path) -> str | None:
    end = _load_json(d / "end.json")
    return end.get("status") if isinstance(end, dict) else None


def _local_workers(workers: int | None) -> int:
    if workers is not None:
        return int(workers)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


_ONE_THREAD = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


@contextlib.contextmanager
def _one_thread_per_worker():
    """While worker processes are spawned: one BLAS/OpenMP thread each (as Dask's nanny does),
    so N workers on N cores do not oversubscribe them; variables the user set are kept."""
    added = [k for k in _ONE_THREAD if k not in os.environ]
    for k in added:
        os.environ[k] = "1"
    try:
        yield
    finally:
        for k in added:
            os.environ.pop(k, None)


def _stop_workers(pool: cf.ProcessPoolExecutor) -> None:
    """Terminate the worker processes of ``pool`` (Ctrl-C: do not finish the queued runs)."""
    terminate = getattr(pool, "terminate_workers", None)  # Python >= 3.14
    if terminate is not None:
        terminate()
        return
    for proc in list((getattr(pool, "_processes", None) or {}).values()):
        try:
            proc.terminate()
        except (OSError, ValueError):
            pass


def _require_dask(scheduler: str) -> None:
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise StudyError(f"a Dask scheduler ({scheduler}) was given but dask.distributed is not installed",
                         "pip install 'flexmb[cluster]' (dask[distributed]), or leave out --scheduler to run on "
                         "local processes") from None


def _dask_client(scheduler: str):
    from distributed import Client

    try:
        return Client(scheduler, timeout=20)
    except (OSError, TimeoutError) as exc:
        raise StudyError(f"cannot connect to the Dask scheduler at {scheduler}: {exc}",
                         "start one (dask scheduler; dask worker ADDRESS) or check the address") from None


def sweep(case: str | Path | Any, grid: Mapping[str, Sequence[Any]] | None = None,
          runs: Sequence[Mapping[str, Any]] | None = None, samples: int | None = None,
          ranges: Mapping[str, Sequence[Any]] | None = None, seed: int = 0, params: Mapping[str, Any] | None = None,
          outputs: Sequence[str | Callable] = (), out_dir: str | Path | None = None, client: Any = None,
          scheduler: str | None = None, workers: int | None = None, resume: bool = True, retry_failed: bool = False,
          postprocess: bool = True, progress: bool | TextIO = True) -> SweepSummary:
    """Run the case file ``case`` (a path or a loaded :class:`flexmb.app.casefile.Case`) for many
    parameter sets and collect a summary table.

    The runs: ``grid`` (name -> values, every combination), ``runs`` (a list of dicts) or
    ``samples`` random sets from ``ranges`` with ``seed`` (see :func:`sample_runs`); exactly one
    of them. ``params``: fixed overrides for every run (like ``flexmb run --param``). Names
    the case does not declare are refused before anything runs; a bad *value* makes that run
    an error. ``outputs``: extra columns (see :func:`run_one`: ``node:NAME``,
    ``coordinate:NAME``, ``peak_force:PATTERN`` or callables). ``out_dir``: the sweep
    directory (default ``runs/<case>_sweep``); an existing one is resumed (``resume=False``
    refuses it). Execution: ``client`` (a ``dask.distributed.Client`` or a
    ``concurrent.futures.Executor``), else ``scheduler`` (a Dask address), else ``workers``
    local processes (default: all cores; 0 = in this process). ``progress``: True (stderr),
    False or a stream. Returns a :class:`SweepSummary`; Ctrl-C stops the sweep after writing
    the table of the runs done (``interrupted``), then raises KeyboardInterrupt."""
    from flexmb.app.casefile import Case, CaseError, load_case

    try:
        cs = case if isinstance(case, Case) else load_case(case)
    except CaseError as exc:
        raise StudyError(str(exc), exc.hint) from exc
    case_path = str(Path(cs.path).resolve())
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
    overrides = [{**base, **p} for p in points]
    if client is None and scheduler is not None:
        _require_dask(scheduler)
    out = Path(out_dir) if out_dir is not None else Path("runs") / f"{cs.name}_sweep"
    outputs = list(outputs)
    spec = {"format": SWEEP_FORMAT, "case": case_path, "case_name": cs.name, "params": _json_normal(base),
            "varied": varied, "runs": _json_normal(overrides),
            "outputs": [o if isinstance(o, str) else getattr(o, "__name__", repr(o)) for o in outputs]}
    old = _load_json(out / "sweep.json")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        if not isinstance(old, dict) or old.get("format") != SWEEP_FORMAT:
            raise StudyError(f"'{out}' exists and is not a flexmb sweep directory", "choose another output directory")
        if not resume:
            raise StudyError(f"sweep directory '{out}' already exists", "resume it (the default) or choose another one")
        if old.get("case") != case_path:
            raise StudyError(f"sweep directory '{out}' holds a sweep of another case ({old.get('case')})",
                             "choose another output directory")
    width = max(4, len(str(len(overrides) - 1)))
    dirs = [out / f"run_{i:0{width}d}" for i in range(len(overrides))]

    # what is done already (resume)
    rows: dict[int, dict] = {}
    tasks: list[tuple[int, bool]] = []  # (index, simulate?)
    for i, (d, ov) in enumerate(zip(dirs, overrides)):
        info = _load_json(d / "params.json")
        if isinstance(info, dict) and info.get("overrides") != _json_normal(ov):
            raise StudyError(f"'{d}' holds a run with other parameters ({info.get('overrides')}) than this sweep's run "
                             f"{i} ({_json_normal(ov)})", "a different sweep is in that directory: choose another one")
        if d.exists() and not isinstance(info, dict) and (d / "meta.json").exists():
            meta = _load_json(d / "meta.json") or {}
            prev = _json_normal(meta.get("meta", {}).get("params", {}))
            if meta.get("meta", {}).get("sweep_index") != i or any(prev.get(k) != v for k, v in _json_normal(ov).items()):
                raise StudyError(f"'{d}' holds a run of another sweep", "choose another sweep directory")
        row = _load_json(d / "row.json")
        if isinstance(row, dict) and (row.get("status") == "finished" or not retry_failed):
            rows[i] = row
        elif _end_status(d) == "finished" and not (isinstance(row, dict) and row.get("reason", "").startswith("build")):
            tasks.append((i, False))  # the simulation is done: only its row is missing (or postprocess to redo)
        else:
            tasks.append((i, True))
    out.mkdir(parents=True, exist_ok=True)
    _write_json(out / "sweep.json", {**spec, "created": (old or {}).get("created") or _time.strftime("%Y-%m-%dT%H:%M:%S%z")})
    table = out / "summary.csv"
    skipped = len(rows) + sum(1 for _, sim in tasks if not sim)
    stream = sys.stderr if progress is True else (progress or None)
    failed0 = sum(1 for r in rows.values() if r.get("status") != "finished")
    bar = SweepProgress(len(overrides), len(rows), skipped, failed0, stream) if stream else None
    if bar and tasks:
        bar._write(bar.line(), redraw=True)

    def with_params(i: int, row: dict) -> dict:
        return {"run": dirs[i].name, **{k: points[i][k] for k in varied if k in points[i]}, **row}

    rows = {i: with_params(i, r) for i, r in rows.items()}

    def record(i: int, row: dict, simulated: bool) -> None:
        rows[i] = with_params(i, row)
        write_table(table, [rows[k] for k in sorted(rows)], varied)
        if bar:
            bar.update(row, simulated)

    wall0 = _time.perf_counter()
    write_table(table, [rows[k] for k in sorted(rows)], varied)
    interrupted = False
    own_client = own_pool = None
    futures: dict = {}
    try:
        if not tasks:
            pass
        elif client is None and scheduler is None and _local_workers(workers) == 0:
            for i, sim in tasks:
                record(i, run_one(case_path, i, overrides[i], str(dirs[i]), outputs, postprocess, sim), sim)
        else:
            if client is None and scheduler is not None:
                client = own_client = _dask_client(scheduler)
            if client is None:
                n = max(1, min(_local_workers(workers), len(tasks)))
                client = own_pool = cf.ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("spawn"),
                                                           initializer=_watch_parent, initargs=(os.getpid(),))
            if isinstance(client, cf.Executor):
                with _one_thread_per_worker() if own_pool is not None else contextlib.nullcontext():
                    futures = {client.submit(run_one, case_path, i, overrides[i], str(dirs[i]), outputs, postprocess, sim):
                               (i, sim) for i, sim in tasks}  # the pool spawns its processes on these submits
                done_iter = cf.as_completed(futures)
            else:
                from distributed import as_completed

                tag = uuid.uuid4().hex[:8]
                futures = {client.submit(run_one, case_path, i, overrides[i], str(dirs[i]), outputs, postprocess, sim,
                                         key=f"flexmb-{cs.name}-{dirs[i].name}-{tag}", pure=False): (i, sim)
                           for i, sim in tasks}
                done_iter = as_completed(list(futures))
            for fut in done_iter:
                i, sim = futures[fut]
                try:
                    row = fut.result()
                except KeyboardInterrupt:
                    raise
                except Exception as exc:  # the worker died or the cluster lost the task: no row.json, redone on resume
                    row = {"run": dirs[i].name, "status": "error", "reason": f"lost: {type(exc).__name__}: {exc}"}
                record(i, row, sim)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        if own_pool is not None:
            if interrupted:  # let the runs under way close their files (Ctrl-C reached them too), then stop them
                for fut in futures:
                    fut.cancel()
                cf.wait([f for f in futures if not f.done()], timeout=2.0)
                _stop_workers(own_pool)
            own_pool.shutdown(wait=True, cancel_futures=True)
        if interrupted and futures and client is not None and not isinstance(client, cf.Executor):
            try:
                client.cancel(list(futures))  # Dask: drop the queued tasks of this sweep
            except Exception:  # the cluster may be gone already
                pass
        if own_client is not None:
            own_client.close()
        if bar:
            bar.close()
    ordered = [rows[k] for k in sorted(rows)]
    write_table(table, ordered, varied)
    failed = sum(1 for r in ordered if r.get("status") != "finished")
    ran = sum(1 for i, sim in tasks if sim and i in rows)
    summary = SweepSummary(out, table, len(overrides), ran, skipped, failed, _time.perf_counter() - wall0, ordered, interrupted)
    _write_json(out / "sweep.json", {**_load_json(out / "sweep.json"),
                                     "last": {"runs": summary.n_runs, "ran": summary.ran, "skipped": summary.skipped,
                                              "failed": summary.failed, "wall_time_s": summary.wall_time_s,
                                              "interrupted": interrupted, "ended": _time.strftime("%Y-%m-%dT%H:%M:%S%z")}})
    if interrupted:
        raise KeyboardInterrupt
    return summary
