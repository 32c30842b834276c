"""Wall time of every seed case, run as a user runs it, beside the time cases/README.md states (issue 14).

Each case runs standalone, ``python cases/<file>.py --out TMP/<name> --quiet`` (the same as ``flexmb run``:
simulation, run directory, ParaView files, plots, the case's postprocess and summary), in its own
process, one after the other. Measured: exit code (0 ok; 1 run failed/incomplete; see ``flexmb run
--help``), wall time, CPU time (user + system) and peak resident memory of that process (``os.wait4``;
the worker processes a study starts are not included in its CPU and memory). The "before" column
is the run time in the case table of cases/README.md (measured on the shared machine, ±30 %);
goal: the six-link case (``zahariev_six_link.py``) >= 5 x faster. The run directories are deleted
afterwards unless --keep; each case's output goes to TMP/<name>.log.

Run (from the repository root):

    python benchmarks/seed_cases.py                      # every case file except the studies (~8 min today)
    python benchmarks/seed_cases.py --cases all          # with the two studies
    python benchmarks/seed_cases.py --cases zahariev_six_link,four_bar_rigid_limit
    python benchmarks/seed_cases.py --t-end 0.05 --cases four_bar_rigid_limit --results-dir /tmp/x   # quick check

(--t-end shortens each case's simulated time: only to check this script, the times then mean nothing.)
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import benchlib as bl

CASES = bl.REPO / "cases"


def case_files(spec: str) -> list[Path]:
    files = sorted(p for p in CASES.glob("*.py") if not p.name.startswith("_"))
    if spec == "all":
        return files
    if spec == "default":
        return [p for p in files if not p.name.startswith("study_")]
    wanted = [s.strip().removesuffix(".py") for s in spec.split(",") if s.strip()]
    missing = [w for w in wanted if not (CASES / f"{w}.py").exists()]
    if missing:
        raise SystemExit(f"--cases: no cases/{missing[0]}.py; the case files are: {', '.join(p.stem for p in files)}")
    return [CASES / f"{w}.py" for w in wanted]


def readme_times() -> dict[str, str]:
    """The run-time column of cases/README.md's table, by case file stem."""
    out = {}
    try:
        text = (CASES / "README.md").read_text()
    except OSError:
        return out
    for line in text.splitlines():
        m = re.match(r"^\| `([a-z0-9_]+)\.py`", line)
        if m:
            out[m.group(1)] = line.rstrip().rstrip("|").rsplit("|", 1)[-1].strip()
    return out


def run_case(path: Path, out_dir: Path, log: Path, env: dict, timeout_s: float, t_end: float | None) -> dict:
    cmd = [sys.executable, str(path), "--out", str(out_dir)]
    if not path.name.startswith("study_"):
        cmd.append("--quiet")
    if t_end:
        cmd += ["--t-end", repr(t_end)]
    load = os.getloadavg()[0]
    with open(log, "w") as f:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, cwd=str(bl.REPO))
        timer = threading.Timer(timeout_s, proc.kill)
        timer.start()
        try:
            _, status, ru = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    rc = proc.returncode
    state = ("ok" if rc == 0 else f"killed at the time limit ({timeout_s:.0f} s)" if rc == -9 else f"exit code {rc}")
    return {"status": state, "wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime, "peak_mb": ru.ru_maxrss / 1024.0,
            "load_before": load, "log": str(log)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", default="default", help="'default' (all but the studies), 'all', or comma-separated names")
    p.add_argument("--t-end", type=float, default=None, help="override each case's simulated time (script check only)")
    p.add_argument("--out-dir", default=None, help="where run directories and logs go (default: a temporary folder)")
    p.add_argument("--keep", action="store_true", help="keep the run directories")
    bl.common_options(p, repeats=1, max_minutes=20.0)
    args = p.parse_args(argv)
    files = case_files(args.cases)
    before = readme_times()
    env = bl.worker_env(args.blas, args.threads, args.numba_threads)
    blas = bl.blas_of_child(env)
    base = Path(args.out_dir) if args.out_dir else Path(tempfile.mkdtemp(prefix="flexmb-seed-cases-"))
    base.mkdir(parents=True, exist_ok=True)
    rows = []
    try:
        for path in files:
            runs = []
            for k in range(args.repeats):
                out_dir = base / f"{path.stem}-{k}"
                r = run_case(path, out_dir, base / f"{path.stem}-{k}.log", env, 60.0 * args.max_minutes, args.t_end)
                runs.append(r)
                print(f"  {path.stem} [{k + 1}/{args.repeats}]: {r['status']}, {r['wall_s']:.1f} s wall, {r['cpu_s']:.1f} s CPU, "
                      f"{r['peak_mb']:.0f} MB (load {r['load_before']:.2f})", file=sys.stderr, flush=True)
                if not args.keep:
                    shutil.rmtree(out_dir, ignore_errors=True)
                if r["status"] != "ok":
                    break
            ok_runs = [r for r in runs if r["status"] == "ok"] or runs
            walls = sorted(r["wall_s"] for r in ok_runs)
            med = walls[(len(walls) - 1) // 2]
            r = next(r for r in ok_runs if r["wall_s"] == med)
            rows.append([f"`{path.name}`", r["status"], f"{r['wall_s']:.1f}", f"{r['cpu_s']:.1f}", f"{r['peak_mb']:.0f}",
                         before.get(path.stem, "–"), f"{r['load_before']:.2f}"])
    finally:
        if not args.keep and not args.out_dir:
            logs = [p_ for p_ in base.glob("*.log")]
            failed = any(row[1] != "ok" for row in rows)
            if not failed:
                shutil.rmtree(base, ignore_errors=True)
            elif logs:
                print(f"logs kept in {base}", file=sys.stderr)
    text = "\n".join([
        f"# Seed cases: wall time of the standalone runs ({time.strftime('%Y-%m-%d %H:%M')})",
        "",
        "Each case: `python cases/<file>.py --out DIR --quiet` in its own process (simulation, run directory, ParaView "
        "files, plots, postprocess); " + (f"**--t-end {args.t_end:g}: shortened, a check of the script only**; "
                                          if args.t_end else "the case's defaults; ")
        + f"median of {args.repeats} run(s). CPU and peak MB: that process (os.wait4), without a study's workers.",
        "",
        f"Host: {bl.host_line()}",
        f"{bl.numba_threads_line(args.numba_threads)}",
        f"BLAS (--blas {args.blas}, {args.threads} thread(s)): {blas}",
        f"Command: `{bl.command_line()}`",
        "",
        bl.table(["case", "status", "wall s", "CPU s", "peak MB", "before: cases/README.md", "load"], rows),
    ]) + "\n"
    return bl.publish("seed_cases", text, args.results_dir)


if __name__ == "__main__":
    sys.exit(main())
