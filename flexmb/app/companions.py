"""Companion runs: further runs of a case that its postprocess compares with (a twin without
damping, another mesh, a softer cut), started on a spare core while the main run runs.

A case file may define ``companions(params) -> dict[str, dict]``: a label for each companion
and the parameter overrides that make it, applied on top of the run's parameters (so
``--param t_end=2`` shortens the companions too). :func:`flexmb.app.run.run_case` starts them
when the case's postprocess will run:

* on worker processes (forked where that is safe, else spawned; one BLAS thread each; ended
  with this process, see flexmb.app.executors) when this process may use two cores or
  more: one worker fewer than the cores, so the main run keeps one; the worker then also writes
  the main run's ParaView files and plots while this process runs the postprocess
  (flexmb.app.run);
* else one after the other in this process, after the main run.

Each companion is built, given the case's monitor and simulated with the run settings of its
parameters, without an output folder: its result comes back in memory, as a run the
postprocess made itself would. The postprocess receives them as ``companions={label:
Companion(model, result, params)}`` when its signature takes ``companions``; the model is
built again in this process (models hold the user's functions, which do not cross processes).
A companion that cannot be built or run gives a :class:`~flexmb.errors.CaseCodeError` naming
its label and overrides, which run_case reports as the postprocess's failure.
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
import multiprocessing
import os
import re
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numba

from flexmb.app.casefile import Case, load_case, resolve_params
from flexmb.app.executors import _one_thread_per_worker, _stop_workers, _watch_parent, local_workers
from flexmb.errors import CaseCodeError, CaseError
from flexmb.model import Model
from flexmb.results.result import Result

__all__ = ["Companion", "CompanionResults", "Companions", "companion_params", "run_companion"]

log = logging.getLogger("flexmb")
_LABEL = re.compile(r"^[A-Za-z0-9_.\-]+$")


@dataclass(frozen=True)
class Companion:
    """One companion run: its model, its result and its resolved parameters."""

    model: Model
    result: Result
    params: dict[str, Any]


def companion_params(case: Case, params: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Label -> resolved parameters of every companion of ``case`` for the run's ``params``
    ({} when the case defines none); CaseError when ``companions()`` returns something else
    than labels with parameter overrides, CaseCodeError when it raises."""
    f = getattr(case.module, "companions", None)
    if f is None:
        return {}
    try:
        specs = f(dict(params))
    except Exception as exc:
        raise CaseCodeError(f"case '{case.name}': companions() failed: {type(exc).__name__}: {exc}", "companions",
                            exc) from exc
    if not isinstance(specs, Mapping):
        raise CaseError(f"case '{case.name}': companions() returned {type(specs).__name__}, not a dict",
                        "return {label: {parameter: value, ...}, ...}")
    out = {}
    for label, overrides in specs.items():
        if not (isinstance(label, str) and _LABEL.match(label)):
            raise CaseError(f"case '{case.name}': companion label {label!r} is not a plain name",
                            "use letters, digits, '_', '.', '-'")
        if not isinstance(overrides, Mapping):
            raise CaseError(f"case '{case.name}': companion '{label}' has {type(overrides).__name__} overrides, not a dict",
                            "return {label: {parameter: value, ...}, ...}")
        try:
            out[label] = resolve_params(case, {**params, **overrides})
        except CaseError as exc:
            raise CaseError(f"case '{case.name}': companion '{label}': {exc.args[0]}", exc.hint) from None
    return out


def run_companion(case_path: str, params: dict[str, Any]) -> Result | str:
    """Build and simulate one companion (the task of a worker process): its Result, or the text
    of the exception that stopped it (exceptions with arguments of their own do not always cross
    processes)."""
    from flexmb.solvers.simulate import simulate  # the worker imports the solver only here

    try:
        case = load_case(case_path)
        model = case.build(params)
        callback = case.monitor(model, params)
        return simulate(model, **case.settings(params).as_dict(), callback=callback)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"


def _start_method() -> str:
    """``fork`` where it is safe and the platform's default (Linux, Python < 3.12, no other Python
    thread running; run_case starts the companions before it builds or factorizes anything), so a
    companion starts at once with flexmb already imported; else ``spawn`` (a new interpreter, which
    first imports flexmb: about 1.5 s)."""
    if sys.platform.startswith("linux") and sys.version_info < (3, 12) and threading.active_count() == 1:
        return "fork"
    return "spawn"


def _forked_worker(parent: int) -> None:
    """Initializer of a forked worker: exit with the parent (flexmb.app.executors), one BLAS thread
    and one numba thread (the beams' passes, elements/beam/kernels.py), as a spawned worker gets
    from its environment. The worker's numba was imported by the parent and has read its thread
    count (NUMBA_NUM_THREADS or the cores), and may have launched its threads: the worker takes one
    of them with numba.set_num_threads and leaves NUMBA_NUM_THREADS as numba read it (numba refuses
    a compilation once its threads run and the variable says another count; the parent does not add
    it for a fork, flexmb.app.executors). The BLAS and OpenMP variables are read only when their
    libraries load, which the parent has done: one_blas_thread sets the loaded ones."""
    from flexmb.engine.linalg import one_blas_thread  # CHOLMOD's module: the worker needs it anyway

    _watch_parent(parent)
    if "NUMBA_NUM_THREADS" not in os.environ:  # a count the user set is kept, as for a spawned worker
        numba.set_num_threads(1)
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(k, "1")
    one_blas_thread()


class Companions:
    """The companion runs of one run of ``case`` (label -> resolved parameters): :meth:`start`
    them, take their :meth:`results` when the postprocess needs them, :meth:`cancel` them when
    it will not run."""

    def __init__(self, case: Case, runs: Mapping[str, dict[str, Any]], workers: int | None = None,
                 base: Mapping[str, Any] | None = None) -> None:
        self.case, self.runs = case, dict(runs)
        self.base = dict(case.defaults if base is None else base)  # the main run's parameters
        cores = local_workers(workers)
        self.workers = min(len(self.runs), cores - 1) if workers is None else min(len(self.runs), int(workers))
        self._pool: cf.ProcessPoolExecutor | None = None
        self._futures: dict[str, cf.Future] = {}

    def describe(self) -> str:
        """Which companions run where (for the log)."""
        where = (f"on {self.workers} worker process{'es' if self.workers > 1 else ''} while the main run runs"
                 if self.workers > 0 else "in this process after the main run (one core)")
        runs = ", ".join(f"{label} ({self.changed(label)})" for label in self.runs)
        return f"companion runs {runs} of case '{self.case.name}' {where}"

    def changed(self, label: str) -> str:
        """The parameters by which companion ``label`` differs from the main run, as ``name=value, ...``."""
        p = self.runs[label]
        diff = [f"{k}={v!r}" for k, v in p.items() if k not in self.base or self.base[k] != v]
        return ", ".join(diff) or "the same parameters"

    def start(self) -> None:
        """Submit every companion to the worker processes (none: they run in :meth:`results`)."""
        if not self.runs:
            return
        log.info("%s", self.describe())
        if self.workers <= 0:
            return
        method = _start_method()
        self._pool = cf.ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context(method),
                                            initializer=_forked_worker if method == "fork" else _watch_parent,
                                            initargs=(os.getpid(),))
        with _one_thread_per_worker(numba_threads=method != "fork"):  # a forked worker: _forked_worker
            self._futures = {label: self._pool.submit(run_companion, str(self.case.path), p)
                             for label, p in self.runs.items()}

    def submit(self, fn, *args) -> cf.Future | None:
        """Run ``fn(*args)`` on the companions' worker after them (e.g. the main run's ParaView files
        and plots while this process runs the postprocess); None without a worker."""
        return self._pool.submit(fn, *args) if self._pool is not None else None

    def results(self) -> CompanionResults:
        """The companions as a mapping label -> :class:`Companion` that waits for a companion
        when the postprocess first asks for it (so it can work on the main run meanwhile)."""
        return CompanionResults(self)

    def get(self, label: str) -> Companion:
        """The companion ``label``: waits for its worker (or runs it here), builds its model; a
        CaseCodeError names it if it failed to build or run."""
        p = self.runs[label]
        fut = self._futures.get(label)
        try:
            res = fut.result() if fut is not None else run_companion(str(self.case.path), p)
        except Exception as exc:  # the worker process died
            res = f"{type(exc).__name__}: {exc}"
        if isinstance(res, str):
            raise CaseCodeError(f"case '{self.case.name}': companion run '{label}' ({self.changed(label)}) failed: {res}",
                                "companions", RuntimeError(res))
        try:
            model = self.case.build(p)
        except Exception as exc:
            msg = f"case '{self.case.name}': companion '{label}': build() failed: {type(exc).__name__}: {exc}"
            raise CaseCodeError(msg, "companions", exc) from exc
        return Companion(model, res, p)

    def cancel(self) -> None:
        """Stop the workers (the postprocess will not run)."""
        if self._pool is not None:
            _stop_workers(self._pool)
        self.close()

    def close(self) -> None:
        """Shut the worker pool down (idempotent)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


class CompanionResults(Mapping):
    """Label -> :class:`Companion` of a :class:`Companions`, each taken (waited for) when first asked."""

    def __init__(self, comps: Companions) -> None:
        self._comps = comps
        self._done: dict[str, Companion] = {}

    def __getitem__(self, label: str) -> Companion:
        if label not in self._done:
            self._done[label] = self._comps.get(label)
        return self._done[label]

    def __iter__(self):
        return iter(self._comps.runs)

    def __len__(self) -> int:
        return len(self._comps.runs)
