"""How many threads the element and joint passes take (issue 14).

Passes over many independent items (the beams' per-element forces and matrices,
elements/beam/kernels.py; the joints on ground in forward kinematics, engine/kinematics.py) split
them into one contiguous slice per numba thread from PARALLEL_MIN items on. Each item's values go
into a place of its own and are summed in item order afterwards, so a result is the same bit for
bit on any number of threads (tests/test_beam_threads.py). numba takes one thread per core by
default (NUMBA_NUM_THREADS sets it); sweep and companion workers run one (flexmb.app.executors).

Between two passes the threads sleep instead of spinning: importing flexmb sets OMP_WAIT_POLICY to
PASSIVE unless it is set (OpenMP reads it when libgomp loads, which CHOLMOD's import does). Measured
on the falling 1000-element link, 2 cores: 3.6 ms per step spinning (libgomp's default), 4.0 sleeping and 5.0 on one
thread on a quiet machine; with one other busy process, 10.4 spinning (the spinning threads take
each other's core), 5.2 sleeping and 5.3 on one thread (benchmarks/results/2026-11-23-cholmod_floor.md).
A short spin (GOMP_SPINCOUNT 30000, a tenth of libgomp's default) was measured too: 3.7 against 4.5 ms quiet,
12.5 against 4.9 ms with one busy process, so the threads keep sleeping.
"""

from __future__ import annotations

import os

import numba

__all__ = ["PARALLEL_MIN", "threads_for", "WAIT_POLICY"]

#: the OpenMP wait policy of this process (set to PASSIVE when flexmb is imported, unless given)
WAIT_POLICY = os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

#: items from which a pass is split over numba's threads: below, waking the sleeping threads and
#: moving the data between the cores cost more than the second core saves. Measured on the falling
#: link, 2 cores, ms per step on 1 / 2 threads: 256 elements 1.42 / 1.62, 400: 2.04 / 2.34, 500:
#: 2.65-2.89 / 2.71-3.20, 600: 3.01 / 2.74, 800: 4.16 / 3.87, 1000: 5.58 / 4.18
PARALLEL_MIN = 600


def threads_for(n: int) -> int:
    """The ``threads`` argument of a pass over n items: numba's thread count
    (numba.get_num_threads(); NUMBA_NUM_THREADS) from PARALLEL_MIN items on, else 1."""
    return numba.get_num_threads() if n >= PARALLEL_MIN else 1
