"""The same parameter sweep timed in this process, on local worker processes and on a Dask
LocalCluster (issue 7).

The sweep: ``cases/four_bar_rigid_limit.py`` over a grid of EA values (``--runs`` of them,
log-spaced 1e5…1e9 N), each run ``--t-end`` s at the case's dt, no postprocess. Three
executions, each into a fresh sweep directory:

* ``serial``: ``workers=0``, every run in this process, one after the other (warm: a first
  run beforehand loads the compiled kernels);
* ``local``: ``workers=N`` spawned worker processes (``concurrent.futures``), including their
  start-up (imports, loading the compiled kernels);
* ``dask``: a ``dask.distributed.LocalCluster`` of N single-threaded worker processes on
  loopback; the time counts the sweep only, started on a cluster whose workers have already
  imported flexmb (cluster start-up is printed apart).

The results of the three are checked to be identical (bit for bit) before the times are
printed, with the mean wall time of one simulation inside its worker (if it grows with the
number of workers, the cores are shared with other work). The machine's load average is
printed too: other work on it slows every execution.

Run:  python benchmarks/sweep_backends.py [--runs 8] [--t-end 0.2] [--workers 2]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

import flexmb as fm
from flexmb.app.study import read_table, run_one, sweep

CASE = Path(__file__).resolve().parents[1] / "cases" / "four_bar_rigid_limit.py"


def _warm_worker() -> str:
    import flexmb.solvers.simulate  # noqa: F401

    return "ok"


def main() -> None:
    """Time the three executions and print a table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--t-end", type=float, default=0.2)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    grid = {"EA": [float(v) for v in np.logspace(5, 9, args.runs)]}
    params = {"t_end": args.t_end}
    times: dict[str, float] = {}
    per_run: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        run_one(str(CASE), 0, {"t_end": 0.01}, str(tmp / "warm"), postprocess=False)  # load kernels here
        for name, kw in (("serial", {"workers": 0}), ("local", {"workers": args.workers})):
            t0 = time.perf_counter()
            sweep(CASE, grid=grid, params=params, out_dir=tmp / name, postprocess=False, progress=False, **kw)
            times[name] = time.perf_counter() - t0
        from distributed import Client, LocalCluster

        t0 = time.perf_counter()
        with LocalCluster(n_workers=args.workers, threads_per_worker=1, host="127.0.0.1", dashboard_address=None) as cl, \
                Client(cl) as client:
            client.run(_warm_worker)
            t_cluster = time.perf_counter() - t0
            t0 = time.perf_counter()
            sweep(CASE, grid=grid, params=params, out_dir=tmp / "dask", client=client, postprocess=False, progress=False)
            times["dask"] = time.perf_counter() - t0
        for name in times:
            per_run[name] = float(np.mean(read_table(tmp / name)["wall_time_s"]))
        for i in range(args.runs):
            ref = fm.load(tmp / "serial" / f"run_{i:04d}")
            for name in ("local", "dask"):
                other = fm.load(tmp / name / f"run_{i:04d}")
                assert np.array_equal(ref.q, other.q) and np.array_equal(ref.element_forces, other.element_forces), (name, i)
    load = os.getloadavg()
    print(f"{args.runs} runs of {CASE.name}, t_end = {args.t_end} s each; {args.workers} workers; "
          f"load average {load[0]:.2f} {load[1]:.2f}; results identical across executions")
    for name, t in times.items():
        print(f"  {name:7s} {t:7.2f} s   ({t / args.runs:.2f} s per run; speed-up vs serial {times['serial'] / t:.2f}; "
              f"one simulation takes {per_run[name]:.2f} s inside its worker)")
    print(f"  (Dask LocalCluster start-up and worker warm-up: {t_cluster:.2f} s, not counted above)")


if __name__ == "__main__":
    main()
