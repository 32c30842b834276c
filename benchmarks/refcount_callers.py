"""Which compiled functions take and drop the array references of a running flexmb process (issue 38).

numba counts references to every array it passes: a call that takes a tuple of arrays, and every read of a tuple's
field, increments (``NRT_incref``) and later decrements (``NRT_decref``) the count of each array in it, an atomic
instruction each. ``perf record -p PID`` shows the two functions as two hot addresses in JIT code; this script, run
inside gdb attached to the process, says who calls them: it stops at ``NRT_incref`` about every hundredth call
(a random skip of 0-200 calls), notes the three callers above it (numba's mangled names shortened to module.function)
and prints the most frequent chains with their counts. gdb names numba's functions because numba registers its
JIT code with gdb.

    python benchmarks/step_regression.py --worker --repeats 50 --cases rigid_cut_four_bar_N10 &   # a long run
    gdb -p $! -batch -x benchmarks/refcount_callers.py

Each stop costs gdb some tens of microseconds, so the process runs slower while sampled; the counts are shares of
the reference counting, not of the time (benchmarks/results/2026-11-29-refcounts.md used it).
"""

import collections
import random
import re

import gdb  # only inside gdb

SAMPLES = 1500
MAX_SKIP = 200


def short(name: str | None) -> str:
    """module.function of a numba mangled name (_ZN6flexmb7solvers11element_run11element_runB...)."""
    if name is None:
        return "?"
    m = re.match(r"_ZN((?:\d+[A-Za-z_][A-Za-z0-9_]*?)+)B\d", name)
    if not m:
        return name[:40]
    s, parts, i = m.group(1), [], 0
    while i < len(s):
        j = i
        while s[j].isdigit():
            j += 1
        n = int(s[i:j])
        parts.append(s[j:j + n])
        i = j + n
    return ".".join(parts[-2:])


def main() -> None:
    """Sample SAMPLES stops at NRT_incref and print the caller chains by count."""
    counts: collections.Counter = collections.Counter()
    gdb.execute("set pagination off")
    gdb.execute("set confirm off")
    bp = gdb.Breakpoint("NRT_incref")
    for _ in range(SAMPLES):
        bp.ignore_count = random.randint(0, MAX_SKIP)
        gdb.execute("continue", to_string=True)
        frame, names = gdb.newest_frame(), []
        for _ in range(3):
            frame = frame.older()
            if frame is None:
                break
            names.append(short(frame.name()))
        counts[" < ".join(names)] += 1
    bp.delete()
    for chain, n in counts.most_common(40):
        print(n, chain)
    gdb.execute("detach")


main()
