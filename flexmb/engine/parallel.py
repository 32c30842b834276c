"""How many threads the element and joint passes take (issue 14).

Passes over many independent items (the beams' per-element forces and matrices,
elements/beam/kernels.py; the joints on ground in forward kinematics, engine/kinematics.py) split
them into one contiguous slice per numba thread from PARALLEL_MIN items on. Each item's values go
into a place of its own and are summed in item order afterwards, so a result is the same bit for
bit on any number of threads (tests/test_beam_threads.py). numba takes one thread per core by
default (NUMBA_NUM_THREADS sets it); sweep and companion workers run one (flexmb.app.executors).

numba's threads come from Intel TBB (the ``tbb`` wheel, a dependency) rather than GNU OpenMP: TBB's
workers wait a short while for the next pass before they sleep, so the three passes of an evaluation
do not each pay for waking them. Measured on the falling 1000-element link, 2 cores, ms per step
(benchmarks/results/2026-11-26-cholmod_floor.md): in process, six interleaved rounds, median 4.55
with OpenMP, 3.84 with TBB (ratio 0.85); with one other busy process 5.2-5.7 against 5.4-6.4; the
benchmark, 3.04 against 3.56. pip puts libtbb.so.12 in the environment's lib/ folder, which the
dynamic loader does not search: importing flexmb loads it from there (:func:`_load_tbb`), so numba's
default choice (TBB first, then OpenMP) finds it. NUMBA_THREADING_LAYER chooses another layer;
:func:`threading_layer` says which one runs (``flexmb info``, the benchmarks). TBB is fork-safe,
GNU OpenMP is not.

With OpenMP (NUMBA_THREADING_LAYER=omp, or no TBB) the threads sleep between two passes instead of
spinning: importing flexmb sets OMP_WAIT_POLICY to PASSIVE unless it is set (OpenMP reads it when
libgomp loads, which CHOLMOD's import does). Measured on the falling 1000-element link, 2 cores:
3.6 ms per step spinning (libgomp's default), 4.0 sleeping and 5.0 on one thread on a quiet machine;
with one other busy process, 10.4 spinning (the spinning threads take each other's core), 5.2
sleeping and 5.3 on one thread (benchmarks/results/2026-11-23-cholmod_floor.md). A short spin
(GOMP_SPINCOUNT 30000, a tenth of libgomp's default): 3.7 against 4.5 ms quiet, 12.5 against 4.9 ms
with one busy process.
"""

from __future__ import annotations

import ctypes
import os
import sys

import numba

__all__ = ["PARALLEL_MIN", "TBB_LIBRARY", "threading_layer", "threads_for", "WAIT_POLICY"]

#: the OpenMP wait policy of this process (set to PASSIVE when flexmb is imported, unless given)
WAIT_POLICY = os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def _load_tbb() -> str | None:
    """Load libtbb.so.12 of this Python environment (pip's ``tbb``: ``<prefix>/lib``) into the
    process, visible to libraries loaded later (numba's TBB layer links to it by name). Returns its
    path, or None where there is none (numba then takes OpenMP) or NUMBA_THREADING_LAYER asks for
    another layer."""
    if not sys.platform.startswith("linux") or os.environ.get("NUMBA_THREADING_LAYER", "default") not in ("default", "tbb"):
        return None
    for d in dict.fromkeys((sys.prefix, sys.base_prefix)):
        path = os.path.join(d, "lib", "libtbb.so.12")
        if os.path.exists(path):
            try:
                ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
            except OSError:
                return None
            return path
    return None


#: the TBB library loaded for numba's threads (None: numba takes OpenMP or what NUMBA_THREADING_LAYER says)
TBB_LIBRARY = _load_tbb()


def threading_layer() -> str:
    """The threading layer of numba's passes: "tbb", "omp" or "workqueue" once a pass has run on
    several threads (numba.threading_layer()), before that the one numba will load."""
    try:
        return numba.threading_layer()
    except ValueError:  # no pass on several threads yet
        chosen = os.environ.get("NUMBA_THREADING_LAYER", "default")
        return chosen if chosen != "default" else ("tbb" if TBB_LIBRARY else "omp")


#: items from which a pass is split over numba's threads: below, waking the waiting threads and
#: moving the data between the cores cost more than the second core saves. Measured on the falling
#: link, 2 cores, TBB, ms per step on 1 / 2 threads (three runs each, interleaved): 100 elements 0.58 /
#: 0.48-0.64, 200: 0.98-1.00 / 0.85-1.15, 300: 1.41-1.45 / 1.16-1.62, 400: 1.86-2.22 / 1.50-1.76, 600:
#: 2.94-3.20 / 2.04-2.55 (with GNU OpenMP's sleeping threads the break-even was 500-600 elements)
PARALLEL_MIN = 250


def threads_for(n: int) -> int:
    """The ``threads`` argument of a pass over n items: numba's thread count
    (numba.get_num_threads(); NUMBA_NUM_THREADS) from PARALLEL_MIN items on, else 1."""
    return numba.get_num_threads() if n >= PARALLEL_MIN else 1
