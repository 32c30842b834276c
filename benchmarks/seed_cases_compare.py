"""Wall and process time of seed cases under two checkouts of flexmb, measured alternately in one session.

Each checkout is a directory holding the repository and its own virtual environment (``<dir>/.venv``,
flexmb installed editable from ``<dir>``). For every repeat and every case, each checkout runs
``flexmb run <dir>/cases/<case>.py --out TMP --quiet`` in its own process (simulation, run
directory, ParaView files, plots, the case's postprocess and summary: what a user waits for), the
checkouts one after the other (their order swapped every repeat), so both see the same load of the
shared machine. Measured per run with ``os.wait4``: exit code, wall time and process time (user +
system of the process and the processes it waited for: a case's companion runs are included). The
machine is shared, so the process time is the number to compare; the wall time is given beside it.
Each case's first run per checkout warms numba's cache and is not counted. Prints a Markdown table of
the minimum (and median) over the repeats.

Run (from the repository root):

    python benchmarks/seed_cases_compare.py BEFORE_DIR AFTER_DIR --repeats 3 \\
        --cases zahariev_six_link,change_point_four_bar,bennett_linkage,attia_3rrr,zhao_stewart_platform
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run_once(checkout: Path, case: str, tmp: Path) -> tuple[int, float, float]:
    """(exit code, wall [s], process time [s]) of ``flexmb run`` of ``case`` in ``checkout``."""
    out = tmp / f"{checkout.name}-{case}"
    cmd = [str(checkout / ".venv" / "bin" / "flexmb"), "run", str(checkout / "cases" / f"{case}.py"), "--out", str(out),
           "--overwrite", "--quiet"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=str(tmp))
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    return os.waitstatus_to_exitcode(status), wall, ru.ru_utime + ru.ru_stime


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    ap.add_argument("--cases", required=True, help="comma-separated case file stems")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--warmed", default="", help="comma-separated cases whose numba cache is warm in both checkouts "
                    "(no warm-up run)")
    a = ap.parse_args(argv)
    checkouts = [a.before.resolve(), a.after.resolve()]
    cases = [c.strip() for c in a.cases.split(",") if c.strip()]
    times: dict[tuple[str, int], list[tuple[float, float]]] = {}
    codes: dict[tuple[str, int], set[int]] = {}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        warmed = {c.strip() for c in a.warmed.split(",")}
        for case in cases:
            for c in checkouts:  # warm-up: numba's cache of each checkout
                if case not in warmed:
                    run_once(c, case, tmp)
        for rep in range(a.repeats):
            for case in cases:
                order = list(enumerate(checkouts))[:: 1 if rep % 2 == 0 else -1]
                for k, c in order:
                    code, wall, cpu = run_once(c, case, tmp)
                    times.setdefault((case, k), []).append((wall, cpu))
                    codes.setdefault((case, k), set()).add(code)
                    print(f"# {case} {c.name} rep {rep}: exit {code}, wall {wall:.2f} s, process {cpu:.2f} s",
                          file=sys.stderr, flush=True)
    print(f"load average at the end: {os.getloadavg()[0]:.2f}; {a.repeats} repeats, min (median) over them\n")
    print("| case | before: process s | after: process s | ratio (process) | before: wall s | after: wall s | exit codes |")
    print("|---|---|---|---|---|---|---|")
    for case in cases:
        b, f = times[(case, 0)], times[(case, 1)]

        def fmt(v: list[tuple[float, float]], i: int) -> str:
            xs = [t[i] for t in v]
            return f"{min(xs):.2f} ({statistics.median(xs):.2f})"

        ratio = min(t[1] for t in b) / min(t[1] for t in f)
        print(f"| {case} | {fmt(b, 1)} | {fmt(f, 1)} | {ratio:.2f}x | {fmt(b, 0)} | {fmt(f, 0)} | "
              f"{sorted(codes[(case, 0)])} / {sorted(codes[(case, 1)])} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
