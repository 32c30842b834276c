"""Where the memory of a closed-loop run goes (issue 38): the IFToMM A02 N-four-bar of
benchmarks/peer_loops.py, resident memory after each phase of one process.

Phases, in order, each in the same process (one thread): the interpreter; numpy; scipy.sparse and
scipy.linalg; numba; scikit-sparse's CHOLMOD; flexmb's own import; with --trivial-kernel 1, numba's
code generator started by compiling one trivial function (what any kernel compiled in the process
costs; a run whose kernels all come from numba's cache compiles none); flexmb's kernels loaded from
numba's cache by a 5-step run of the N = 1 model of the same cut kind (the compiled Newton step and
run of the loop's families; with --warm-chain-beam also benchmarks/benchlib's fm_warm_up: a 2-link
chain and a 2-element beam, as peer_loops.py does first); the N-window model built; the run
(``fm.simulate(model, t_end, dt, output_every=every)``, rows kept in memory, flexmb's default), with
its process time per step. Per phase: the resident set (/proc/self/statm) and the peak so far
(ru_maxrss), in MB. The run is also measured once more under tracemalloc (Python and numpy
allocations only, not numba's code): its peak and what is still held with the result alive.
--jit-cache 0 loads the kernels as numba does, parsing each one's LLVM IR (flexmb/engine/jit_cache.py,
docs/memory.md §3): the before of issue 38's change.

Run (from the repository root):

    python benchmarks/loop_memory.py                       # N = 40 bushings k = 1e9, 20 s, output every 10 steps
    python benchmarks/loop_memory.py --cut rigid --t-end 5
    python benchmarks/loop_memory.py --n 10 --t-end 1 --results-dir /tmp/x   # quick check
    python benchmarks/loop_memory.py --jit-cache 0                            # numba's own loading
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1024**2


def phases(n: int, cut: str, k: float, t_end: float, dt: float, every: int, chain_beam: bool, trivial: bool,
           jit_cache: bool) -> list[tuple[str, float, float]]:
    """(phase, resident MB, peak MB so far) after each phase of the module docstring; the run's phase also
    gives its process ms per step (in its name)."""
    out = [("interpreter", _rss_mb(), bl.peak_mb())]

    def mark(name: str) -> None:
        out.append((name, _rss_mb(), bl.peak_mb()))

    import numpy  # noqa: F401

    mark("+ numpy")
    import scipy.linalg  # noqa: F401
    import scipy.sparse  # noqa: F401

    mark("+ scipy.sparse, scipy.linalg")
    import numba

    mark("+ numba")
    import sksparse.cholmod  # noqa: F401

    mark("+ scikit-sparse CHOLMOD")
    import flexmb as fm

    if not jit_cache:
        from flexmb.engine import jit_cache as jc

        jc.uninstall()
    mark("+ import flexmb")
    if trivial:
        numba.njit(lambda x: x + 1.0)(1.0)
        mark("+ numba's code generator started (one trivial kernel)")
    if chain_beam:
        bl.fm_warm_up(fm, dt)
        mark("+ fm_warm_up (2-link chain, 2-element beam)")
    from peer_loops import fm_n_four_bar

    fm.simulate(fm_n_four_bar(fm, 1, cut, k), 5 * dt, dt)
    mark(f"+ flexmb's kernels for the loop (N = 1 {cut} model, 5 steps)")
    model = fm_n_four_bar(fm, n, cut, k)
    mark(f"+ model N = {n} built")
    cpu = time.process_time()
    res = fm.simulate(model, t_end, dt, output_every=every)
    ms = (time.process_time() - cpu) * 1e3 / max(res.t[-1] / dt, 1)
    mark(f"+ run {t_end:g} s, {res.t.size} rows kept ({res.status.split(':')[0]}, {ms:.3f} ms/step CPU)")
    del res
    import gc
    import tracemalloc

    gc.collect()
    tracemalloc.start()
    res = fm.simulate(model, t_end, dt, output_every=every)
    peak = tracemalloc.get_traced_memory()[1]
    gc.collect()
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    rows = sum(v.nbytes for v in vars(res).values() if hasattr(v, "nbytes") and v.ndim and v.shape[0] == res.t.size)
    out.append(("tracemalloc of the same run: peak / held with the result / the result's rows",
                peak / 2**20, held / 2**20))
    out.append(("", rows / 2**20, rows / max(res.t.size, 1) / 1024))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=40)
    p.add_argument("--cut", default="elastic", choices=("elastic", "rigid"))
    p.add_argument("--k", type=float, default=1e9)
    p.add_argument("--t-end", type=float, default=20.0)
    p.add_argument("--dt", type=float, default=1e-3)
    p.add_argument("--every", type=int, default=10, help="output every this many steps (default 10, as peer_loops.py)")
    p.add_argument("--warm-chain-beam", type=int, default=0, help="1: also benchlib.fm_warm_up before the loop's kernels")
    p.add_argument("--json", default=None, help="also write the phases to this JSON file")
    p.add_argument("--trivial-kernel", type=int, default=0, help="1: compile one trivial kernel after the imports")
    p.add_argument("--jit-cache", type=int, default=1, help="0: load cached kernels as numba does (parsing their IR)")
    p.add_argument("--results-dir", default=None)
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    rows = phases(args.n, args.cut, args.k, args.t_end, args.dt, args.every, bool(args.warm_chain_beam),
                  bool(args.trivial_kernel), bool(args.jit_cache))
    table, prev = [], 0.0
    for name, rss, peak in rows[:-2]:
        table.append([name, f"{rss:.1f}", f"{rss - prev:+.1f}", f"{peak:.1f}"])
        prev = rss
    (_, tpeak, theld), (_, rows_mb, row_kb) = rows[-2:]
    text = "\n".join([
        f"# Memory of a closed-loop run: N = {args.n} four-bar, {args.cut} cuts, {args.t_end:g} s "
        f"({time.strftime('%Y-%m-%d %H:%M')})",
        "",
        bl.host_line(),
        f"Command: `{bl.command_line()}`; {time.perf_counter() - t0:.0f} s.",
        "",
        bl.table(["phase", "resident MB", "change MB", "peak MB (ru_maxrss)"], table),
        "",
        f"The run under tracemalloc (Python and numpy allocations): peak {tpeak:.1f} MB, held with the result "
        f"alive {theld:.1f} MB; the result's rows {rows_mb:.1f} MB ({row_kb:.1f} kB a row).",
    ]) + "\n"
    data = {"phases": rows[:-2], "tracemalloc": rows[-2:]}
    return bl.publish(f"loop_memory-{args.cut}", text, args.results_dir, args.json, data)


if __name__ == "__main__":
    sys.exit(main())
