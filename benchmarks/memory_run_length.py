"""Peak memory against run length: a 4000-element link for 1, 10 and 100 s, output every step, streamed
to disk (issue 14). Goal: flat in run length and <= 400 MB.

The falling Zahariev link of benchmarks/peer_beam_fall.py (3-D co-rotational beam, N = --n elements,
h = 1e-3 s, rho_inf = 0.8, flexmb's default rtol) runs with ``fm.simulate(..., output_every=K,
out=DIR)`` (K = --output-every, default 1: a row every step), one subprocess per run length, after
a JIT warm-up. Per run: status, steps, ms per step (wall), peak resident memory of the process
(ru_maxrss), its value before the model was built and after it was built, the resident memory
sampled during the run (every --sample-seconds by a thread reading /proc/self/statm) at 25, 50, 75
and 100 % of the run, the rows the returned in-memory result holds, and the bytes written to DIR.

Disk: a row of the 4000-element link is large (all node poses, twists, element forces, ...). A short
probe run measures the bytes per row first; a length whose output would not fit in the free space
of --out-dir (less 2 GB) is skipped and reported as such (use a larger --output-every or another
--out-dir). DIR is deleted after each run unless --keep. Memory: a run whose resident memory passes
--max-rss-mb (default 8000 MB, a third of this 24 GB machine shared by several people) is stopped
(the sampler interrupts it; simulate closes DIR) and reported as such.

A row of the 4000-element link is about 1.8 MB on disk: 100 s with a row every step is 176 GB,
more than this machine's disk; the issue's table is measured with ``--output-every 10`` (17.6 GB
for 100 s, still a row every 10 ms), which changes the rows written, not the memory the run
needs (the recorder's block is bounded by rows and bytes, flexmb.solvers.recorder).
simulate keeps no row in memory with ``out=`` (keep="none") and returns the result read lazily
from DIR: "rows in memory" counts the rows a Result holds in memory (0 for such a lazy one).

Run (from the repository root):

    python benchmarks/memory_run_length.py --output-every 10             # 1, 10, 100 s (about 2 h)
    python benchmarks/memory_run_length.py --lengths 1,10                # about 12 min
    python benchmarks/memory_run_length.py --n 400 --lengths 0.01,0.05 --results-dir /tmp/x   # quick check
"""

from __future__ import annotations

import _thread
import argparse
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import benchlib as bl
from peer_beam_fall import RHO_INF, fm_link

MARGIN_BYTES = 2 * 1024**3


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1024**2


def _dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def run(n: int, t_end: float, dt: float, every: int, out_dir: str, sample_s: float, max_rss_mb: float) -> dict:
    import flexmb as fm

    warm = bl.fm_warm_up(fm, dt, threaded=True)
    before_model = bl.peak_mb()
    model, _ = fm_link(fm, n)
    after_model = _rss_mb()
    samples: list[tuple[float, float]] = []
    stop = threading.Event()
    over: list[float] = []

    def sampler() -> None:
        t0 = time.perf_counter()
        while not stop.wait(sample_s):
            samples.append((time.perf_counter() - t0, _rss_mb()))
            if samples[-1][1] > max_rss_mb and not over:
                over.append(samples[-1][0])
                _thread.interrupt_main()  # KeyboardInterrupt in simulate: it closes the run directory and re-raises

    th = threading.Thread(target=sampler, daemon=True)
    th.start()
    t0 = time.perf_counter()
    try:
        res = fm.simulate(model, t_end, dt, rho_inf=RHO_INF, output_every=every, out=out_dir)
    except KeyboardInterrupt:
        if not over:
            raise
        res = None
    wall = time.perf_counter() - t0
    stop.set()
    th.join()
    if res is None:
        out = {"status": f"stopped: resident memory passed --max-rss-mb {max_rss_mb:g} after {over[0]:.0f} s of the run"}
    else:
        out = bl.fm_step_numbers(res, dt, 0.0)
        out.pop("cpu_ms_per_step", None)
        # a lazy Result (read from DIR when used) holds only its output times in memory
        out["rows_in_memory"] = 0 if res.source is not None else int(len(res.t))
        out["rows_on_disk"] = int(len(res.t))
    at = {}
    for q in (0.25, 0.5, 0.75, 1.0):
        near = [rss for (t, rss) in samples if t <= q * wall + 1e-9]
        at[f"rss_{int(q * 100)}"] = near[-1] if near else None
    out.update({"peak_mb": bl.peak_mb(), "before_model_mb": before_model, "after_model_mb": after_model,
                "bytes_on_disk": _dir_bytes(Path(out_dir)), "wall_s": wall,
                "warmup_s": warm, "samples": len(samples), **at})
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=4000, help="beam elements (default 4000)")
    p.add_argument("--lengths", default="1,10,100", help="simulated seconds, comma-separated (default 1,10,100)")
    p.add_argument("--dt", type=float, default=1e-3)
    p.add_argument("--output-every", type=int, default=1, help="a row every K steps (default 1)")
    p.add_argument("--out-dir", default=tempfile.gettempdir(), help="where the run directories go (default: temp)")
    p.add_argument("--keep", action="store_true", help="keep the run directories")
    p.add_argument("--sample-seconds", type=float, default=1.0)
    p.add_argument("--max-rss-mb", type=float, default=8000.0,
                   help="stop a run whose resident memory passes this (default 8000: a third of this machine)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--run-dir", default="", help=argparse.SUPPRESS)
    bl.common_options(p, repeats=1, max_minutes=240.0)
    args = p.parse_args(argv)
    lengths = [float(v) for v in args.lengths.split(",") if v.strip()]
    if args.worker:
        bl.emit(run(args.n, lengths[0], args.dt, args.output_every, args.run_dir, args.sample_seconds, args.max_rss_mb))
        return 0

    env = bl.worker_env(args.blas, args.threads, args.numba_threads)
    budget = 60.0 * args.max_minutes
    base = Path(args.out_dir)
    base.mkdir(parents=True, exist_ok=True)

    def worker(t_end: float, prefix: str = "flexmb-mem-") -> dict:
        tmp = Path(tempfile.mkdtemp(prefix=prefix, dir=base))
        run_dir = tmp / "run"
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--n", str(args.n), "--lengths", repr(t_end),
               "--dt", repr(args.dt), "--output-every", str(args.output_every), "--run-dir", str(run_dir),
               "--sample-seconds", repr(args.sample_seconds), "--max-rss-mb", repr(args.max_rss_mb)]
        try:
            return bl.run_worker(cmd, env, budget)
        finally:
            if not args.keep:
                shutil.rmtree(tmp, ignore_errors=True)

    probe_steps = 10 * args.output_every
    probe = worker(probe_steps * args.dt, "flexmb-mem-probe-")
    if not bl.ok(probe):
        print(f"memory_run_length: the probe run failed: {probe.get('status')}", file=sys.stderr)
        return 1
    rows_probe = probe["rows_on_disk"]
    bytes_per_row = probe["bytes_on_disk"] / max(rows_probe, 1)
    print(f"probe: {rows_probe} rows, {probe['bytes_on_disk'] / 1e6:.1f} MB on disk -> {bytes_per_row / 1e6:.2f} MB per row",
          file=sys.stderr)

    rows = []
    for t_end in lengths:
        n_rows = int(round(t_end / args.dt)) // args.output_every + 1
        need = n_rows * bytes_per_row
        free = shutil.disk_usage(base).free
        if need > free - MARGIN_BYTES:
            r = {"status": f"skipped: needs {need / 1e9:.0f} GB in {base}, {free / 1e9:.0f} GB free "
                           f"(use --output-every or --out-dir)", "t_end": t_end, "need_gb": need / 1e9}
        else:
            runs = bl.repeat(lambda t_end=t_end: worker(t_end), args.repeats, f"{t_end:g} s")
            r = bl.median_runs(runs)
        r["t_end"], r["need_gb"] = t_end, need / 1e9
        rows.append(r)

    lines = [[f"{r['t_end']:g}", r.get("status", "?")[:90], bl.fmt(r.get("steps"), ".0f"), bl.fmt(r.get("ms_per_step"), ".4g"),
              bl.fmt(r.get("peak_mb"), ".0f"), bl.fmt(r.get("before_model_mb"), ".0f"), bl.fmt(r.get("after_model_mb"), ".0f"),
              " / ".join(bl.fmt(r.get(f"rss_{q}"), ".0f") for q in (25, 50, 75, 100)),
              bl.fmt(r.get("rows_in_memory"), ".0f"),
              bl.fmt(r["bytes_on_disk"] / 1e9 if "bytes_on_disk" in r else None, ".3g"), bl.fmt(r.get("need_gb"), ".3g"),
              bl.fmt(r.get("load_before"), ".2f")] for r in rows]
    text = "\n".join([
        f"# Peak memory against run length, {args.n}-element link, output every {args.output_every} step(s) streamed to "
        f"disk ({time.strftime('%Y-%m-%d %H:%M')})",
        "",
        f"Falling Zahariev link (benchmarks/peer_beam_fall.py), h = {args.dt:g} s, ρ∞ = {RHO_INF}, flexmb's default rtol; "
        f"`fm.simulate(..., output_every={args.output_every}, out=DIR)`; one process per run; DIR in {base} "
        f"({'kept' if args.keep else 'deleted after the run'}). Probe: {bytes_per_row / 1e6:.2f} MB per row on disk.",
        "",
        f"Host: {bl.host_line()}",
        f"{bl.numba_threads_line(args.numba_threads)}",
        f"Command: `{bl.command_line()}`",
        "",
        bl.table(["t_end s", "status", "steps", "ms/step", "peak MB (ru_maxrss)", "MB before model", "RSS after model MB",
                  f"RSS at 25/50/75/100 % of the run MB (sampled every {args.sample_seconds:g} s)", "rows in memory",
                  "GB on disk", "GB expected", "load"], lines),
    ]) + "\n"
    return bl.publish("memory_run_length", text, args.results_dir, args.json, rows)


if __name__ == "__main__":
    sys.exit(main())
