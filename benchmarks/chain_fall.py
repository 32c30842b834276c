"""Benchmark: a serial chain of N rigid links falling under gravity.

What it measures
----------------
N identical rigid links (0.1 m, 0.1 kg, uniform rod: inertia about the centre of mass
diag(0, mL²/12, mL²/12) in node axes, rod along node x) are joined by revolute joints about
global z; the first link is pinned to the ground at the origin. The chain starts horizontal
(along +x) at rest and falls under gravity (-y) for ``--t-end`` seconds with the
generalized-α integrator (rho_inf = 0.9) at step ``--dt``. For every N it reports

* the wall time of ``simulate`` and the time per step, and the process CPU time per step (which
  other jobs on a shared machine disturb far less than the wall time),
* Newton iterations per step (mean and maximum) and factorizations per step,
* the share of the wall time spent in assembly, factorization and solve
  (``res.stats``); "other" is the rest (step bookkeeping and recording outputs),
* ``res.status`` and the number of steps actually completed (counted by the step callback),
  and the number of step attempts, so that step halvings after Newton failures show up
  (attempts > steps completed).

A failed run (``res.status`` starting with "failed") is reported in the table; it does not
stop the benchmark.

How to run it
-------------
    python benchmarks/chain_fall.py --n 10 100 --markdown
    python benchmarks/chain_fall.py --n 1000 --t-end 0.02 --markdown

Options: ``--n`` (list of chain lengths, default 10 100 1000), ``--t-end`` (default 1.0 s),
``--dt`` (default 1e-3 s), ``--markdown`` (print a markdown table instead of plain text).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import benchlib as bl
import numpy as np
import scipy

import flexmb as fm
from flexmb.engine.linalg import BACKEND
from flexmb.solvers import generalized_alpha as integrators
from flexmb.solvers.simulate import simulate

LINK_LENGTH = 0.1  # m
LINK_MASS = 0.1  # kg
GRAVITY = 9.81  # m/s², along -y
RHO_INF = 0.9
RTOL = 1e-10  # simulate's default Newton tolerance, passed explicitly so the report is exact


def build_chain(n: int):
    """Serial chain of ``n`` uniform rods, horizontal along +x, revolute joints about z (benchlib.fm_chain)."""
    return bl.fm_chain(fm, n, LINK_LENGTH, LINK_MASS, GRAVITY)


class _AttemptCounter:
    """Counts calls of GeneralizedAlpha.step (one per step attempt, failed attempts and
    sub-steps after a halving included) without changing what it does."""

    def __init__(self) -> None:
        self.calls = 0
        self._orig = None

    def __enter__(self) -> _AttemptCounter:
        self._orig = orig = integrators.GeneralizedAlpha.step
        counter = self

        def step(self_, *args, **kwargs):
            counter.calls += 1
            return orig(self_, *args, **kwargs)

        integrators.GeneralizedAlpha.step = step
        return self

    def __exit__(self, *exc) -> None:
        integrators.GeneralizedAlpha.step = self._orig


def run_one(n: int, t_end: float, dt: float) -> dict:
    t0 = time.perf_counter()
    model = build_chain(n)
    t_build = time.perf_counter() - t0
    n_steps = int(round(t_end / dt))
    done = {"steps": 0, "last_print": time.perf_counter()}

    def progress(st, ev) -> None:
        done["steps"] += 1
        now = time.perf_counter()
        if now - done["last_print"] > 30.0:
            done["last_print"] = now
            print(f"    N = {n}: step {done['steps']}/{n_steps}, t = {st.t:.4g} s", flush=True)

    cpu0 = time.process_time()
    with _AttemptCounter() as attempts:
        res = simulate(model, t_end=t_end, dt=dt, rho_inf=RHO_INF, rtol=RTOL, callback=progress)
    cpu = time.process_time() - cpu0
    s = res.stats
    steps = done["steps"]
    its = np.asarray(res.newton_iterations[1:], dtype=float)  # index 0 is the initial state
    wall = s["wall_time"]
    parts = {k: s.get(f"time_{k}", float("nan")) for k in ("assembly", "factorization", "solve")}
    other = wall - sum(parts.values())
    tip = res.x[-1, -1] + res.R[-1, -1] @ np.array([LINK_LENGTH, 0.0, 0.0])
    return {
        "n": n, "n_u": model.n_u, "status": res.status, "steps": steps, "steps_planned": n_steps,
        "stats_steps": int(s["steps"]), "attempts": attempts.calls, "t_reached": float(res.t[-1]),
        "build": t_build, "wall": wall, "per_step": wall / steps if steps else float("nan"),
        "cpu": cpu, "cpu_per_step": cpu / steps if steps else float("nan"),
        "it_mean": float(s["newton_iterations"]) / steps if steps else float("nan"),
        "it_max": int(its.max()) if its.size else 0,
        "fac_per_step": float(s["factorizations"]) / steps if steps else float("nan"),
        "symbolic": int(s.get("symbolic_analyses", 0)), "modified_newton": int(s.get("modified_newton_steps", 0)),
        "share": {k: v / wall for k, v in parts.items()} | {"other": other / wall},
        "tip_y": float(tip[1]),
    }


def _status_cell(r: dict) -> str:
    st = r["status"]
    return st if len(st) <= 60 else st[:57] + "..."


def _num(x: float) -> str:
    return "-" if not np.isfinite(x) else f"{x:.2f}"


def print_table(rows: list[dict], markdown: bool) -> None:
    head = ["N", "n_u", "status", "steps done", "step attempts", "wall [s]", "per step [ms]", "CPU per step [ms]",
            "Newton it/step (max)",
            "fact./step", "assembly", "factorization", "solve", "other"]
    lines = []
    for r in rows:
        sh = r["share"]
        lines.append([
            str(r["n"]), str(r["n_u"]), _status_cell(r), f"{r['steps']}/{r['steps_planned']}", str(r["attempts"]),
            f"{r['wall']:.2f}", _num(1e3 * r["per_step"]), _num(1e3 * r["cpu_per_step"]), f"{_num(r['it_mean'])} ({r['it_max']})",
            _num(r["fac_per_step"]), f"{100 * sh['assembly']:.1f} %", f"{100 * sh['factorization']:.1f} %",
            f"{100 * sh['solve']:.1f} %", f"{100 * sh['other']:.1f} %",
        ])
    if markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "|".join("---:" if i != 2 else "---" for i in range(len(head))) + "|")
        for ln in lines:
            print("| " + " | ".join(ln) + " |")
    else:
        w = [max(len(h), *(len(ln[i]) for ln in lines)) for i, h in enumerate(head)]
        print("  ".join(h.rjust(w[i]) for i, h in enumerate(head)))
        for ln in lines:
            print("  ".join(c.rjust(w[i]) for i, c in enumerate(ln)))


def machine() -> str:
    try:
        nproc_avail = len(os.sched_getaffinity(0))
    except AttributeError:
        nproc_avail = os.cpu_count()
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return (f"nproc {nproc_avail} (os.cpu_count {os.cpu_count()}), CPU {cpu}; python {platform.python_version()}, "
            f"numpy {np.__version__}, scipy {scipy.__version__}, linear solver {BACKEND}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Serial chain of N rigid links falling under gravity: solver timing.")
    ap.add_argument("--n", type=int, nargs="+", default=[10, 100, 1000], help="chain lengths (default: 10 100 1000)")
    ap.add_argument("--t-end", type=float, default=1.0, help="simulated time in s (default 1.0)")
    ap.add_argument("--dt", type=float, default=1e-3, help="time step in s (default 1e-3)")
    ap.add_argument("--markdown", action="store_true", help="print the results as a markdown table")
    args = ap.parse_args(argv)
    if any(n < 1 for n in args.n):
        ap.error("--n: chain lengths must be >= 1")

    print(f"chain_fall: links {LINK_LENGTH} m, {LINK_MASS} kg, g = {GRAVITY} m/s² along -y, revolute about z, "
          "start horizontal at rest")
    print(f"settings: t_end = {args.t_end} s, dt = {args.dt:g} s, rho_inf = {RHO_INF}, rtol = {RTOL:g}, "
          "output_every = 1")
    print(f"machine: {machine()}")
    print(f"command: {' '.join([os.path.basename(sys.executable)] + sys.argv)}", flush=True)

    rows = []
    for n in args.n:
        print(f"  N = {n}: building and running {int(round(args.t_end / args.dt))} steps ...", flush=True)
        r = run_one(n, args.t_end, args.dt)
        rows.append(r)
        print(f"  N = {n}: status {r['status']!r}; {r['steps']} of {r['steps_planned']} steps completed "
              f"(stats['steps'] = {r['stats_steps']}, step attempts {r['attempts']}), t reached {r['t_reached']:.6g} s; "
              f"wall {r['wall']:.2f} s ({1e3 * r['per_step']:.2f} ms/step), model build {r['build']:.2f} s; "
              f"Newton {r['it_mean']:.2f}/step (max {r['it_max']}), {r['fac_per_step']:.2f} factorizations/step, "
              f"{r['symbolic']} symbolic analyses, {r['modified_newton']} modified-Newton steps; "
              f"chain tip y = {r['tip_y']:.4g} m", flush=True)
    print()
    print_table(rows, args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
