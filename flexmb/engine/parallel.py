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
"""

from __future__ import annotations

import os

import numba

__all__ = ["PARALLEL_MIN", "threads_for", "WAIT_POLICY"]

#: the OpenMP wait policy of this process (set to PASSIVE when flexmb is imported, unless given)
WAIT_POLICY = os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

#: items from which a pass is split over numba's threads; below, a parallel launch (about 10 µs)
#: costs more than it saves
PARALLEL_MIN = 256


def threads_for(n: int) -> int:
    """The ``threads`` argument of a pass over n items: numba's thread count
    (numba.get_num_threads(); NUMBA_NUM_THREADS) from PARALLEL_MIN items on, else 1."""
    return numba.get_num_threads() if n >= PARALLEL_MIN else 1
