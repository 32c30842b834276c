"""Where a sweep's runs execute: in this process, on local worker processes
(``concurrent.futures.ProcessPoolExecutor``, spawned, one per core by default) or on a Dask
cluster (a ``distributed.Client``, or a scheduler address: ``client.submit`` +
``as_completed``, no scheduler of our own). :func:`run_tasks` is the one loop over them; the
sweep (flexmb.app.study) only says what to run and what to do with each row.

Local workers get one BLAS/OpenMP thread each (as Dask's nanny does) and exit when the sweep's
process dies (SIGKILL leaves no one to stop the pool). Ctrl-C stops the workers after letting
the runs under way close their files, and cancels the queued Dask tasks.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import multiprocessing
import os
import threading
import time as _time
import uuid
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from flexmb.errors import StudyError

__all__ = ["run_tasks", "local_workers", "require_dask"]


def local_workers(workers: int | None) -> int:
    """The number of local worker processes: ``workers``, or the cores this process may use."""
    if workers is not None:
        return int(workers)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


_ONE_THREAD = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")


@contextlib.contextmanager
def _one_thread_per_worker(numba_threads: bool = True):
    """While worker processes are spawned: one BLAS/OpenMP/numba thread each (as Dask's nanny does),
    so N workers on N cores do not oversubscribe them; variables the user set are kept.

    A spawned worker reads these variables when it imports the libraries, before numba launches any
    thread. ``numba_threads=False`` leaves NUMBA_NUM_THREADS out, for forked workers: their numba
    was imported by this process and has read its count, and a worker whose environment then said
    another count would fail at its first compilation once its threads run ("Cannot set
    NUMBA_NUM_THREADS to a different value once the threads have been launched"; such a worker sets
    its count with numba.set_num_threads, flexmb.app.companions). While NUMBA_NUM_THREADS is changed
    here, numba's compiler lock is held, so no thread of this process compiles (and reloads numba's
    configuration from the environment) in the meantime; never across a fork, which would copy the
    held lock into the worker."""
    keys = _ONE_THREAD if numba_threads else tuple(k for k in _ONE_THREAD if k != "NUMBA_NUM_THREADS")
    added = [k for k in keys if k not in os.environ]
    lock = contextlib.nullcontext()
    if "NUMBA_NUM_THREADS" in added:
        from numba.core.compiler_lock import global_compiler_lock  # numba only where its count is set

        lock = global_compiler_lock
    with lock:
        for k in added:
            os.environ[k] = "1"
        try:
            yield
        finally:
            for k in added:
                os.environ.pop(k, None)


def _watch_parent(parent: int) -> None:
    """Worker-process initializer: exit when the sweep's process dies (SIGKILL leaves no one
    to stop the pool), so no orphan keeps writing into the sweep directory."""

    def watch() -> None:
        while True:
            if os.getppid() != parent:
                os._exit(1)
            _time.sleep(0.2)

    threading.Thread(target=watch, daemon=True, name="flexmb-parent-watch").start()


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


def require_dask(scheduler: str) -> None:
    """StudyError (with what to install) unless dask.distributed can be imported."""
    try:
        import distributed  # noqa: F401  (optional dependency: imported only when a scheduler is given)
    except ImportError:
        raise StudyError(f"a Dask scheduler ({scheduler}) was given but dask.distributed is not installed",
                         "pip install 'flexmb[cluster]' (dask[distributed]), or leave out --scheduler to run on "
                         "local processes") from None


def _dask_client(scheduler: str):
    from distributed import Client  # optional dependency (require_dask checked it)

    try:
        return Client(scheduler, timeout=20)
    except (OSError, TimeoutError) as exc:
        raise StudyError(f"cannot connect to the Dask scheduler at {scheduler}: {exc}",
                         "start one (dask scheduler; dask worker ADDRESS) or check the address") from None


def run_tasks(fn: Callable[..., Any], tasks: Sequence[tuple[Hashable, tuple]], on_done: Callable[[Hashable, Any], None],
              on_lost: Callable[[Hashable, BaseException], None], *, client: Any = None, scheduler: str | None = None,
              workers: int | None = None, label: str = "flexmb") -> bool:
    """Run ``fn(*args)`` for every ``(key, args)`` of ``tasks`` and call ``on_done(key, value)``
    as each completes (in completion order, in this process), ``on_lost(key, exception)`` for a
    task whose worker died or whose cluster lost it.

    Where: ``client`` (a ``distributed.Client`` or a ``concurrent.futures.Executor``), else
    ``scheduler`` (a Dask address), else ``workers`` local processes (default: all cores; 0:
    one after the other in this process, exceptions propagating). ``label`` prefixes the Dask
    task keys. Returns True if Ctrl-C interrupted it (the workers are stopped, the queued
    tasks cancelled), False when every task completed."""
    if not tasks:
        return False
    if client is None and scheduler is None and local_workers(workers) == 0:
        try:
            for key, args in tasks:
                on_done(key, fn(*args))
        except KeyboardInterrupt:
            return True
        return False
    interrupted = False
    own_client = own_pool = None
    futures: dict = {}
    try:
        if client is None and scheduler is not None:
            client = own_client = _dask_client(scheduler)
        if client is None:
            n = max(1, min(local_workers(workers), len(tasks)))
            client = own_pool = cf.ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("spawn"),
                                                       initializer=_watch_parent, initargs=(os.getpid(),))
        if isinstance(client, cf.Executor):
            with _one_thread_per_worker() if own_pool is not None else contextlib.nullcontext():
                futures = {client.submit(fn, *args): key for key, args in tasks}  # the pool spawns its processes here
            done_iter = cf.as_completed(futures)
        else:
            from distributed import as_completed  # optional dependency: only with a Dask client

            tag = uuid.uuid4().hex[:8]
            futures = {client.submit(fn, *args, key=f"{label}-{key}-{tag}", pure=False): key for key, args in tasks}
            done_iter = as_completed(list(futures))
        for fut in done_iter:
            key = futures[fut]
            try:
                value = fut.result()
            except KeyboardInterrupt:
                raise
            except Exception as exc:  # the worker died or the cluster lost the task
                on_lost(key, exc)
                continue
            on_done(key, value)
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
    return interrupted
