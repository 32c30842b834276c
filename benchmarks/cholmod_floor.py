"""Per-step cost of flexmb over the CHOLMOD floor on the falling Zahariev link (issue 14).

The floor of an implicit step on a given sparsity pattern: one CHOLMOD numeric factorization plus
two solves (the fewest a Newton step that refactorizes can do). Goal: flexmb's time per step
<= 3 x the floor at N = 1000 and 10000 beam elements.

Per N, two subprocesses:

* ``run``: flexmb integrates the link of benchmarks/peer_beam_fall.py (N elements, 3-D co-rotational
  beam, pin about z, 2 m long or --length m, h = 1e-3 s, rho_inf = 0.8, rtol 1e-10, output at the ends
  only) for --t-end s
  after a JIT warm-up (benchlib.fm_warm_up, with its threaded beam); ms per step (wall, CPU), Newton
  iterations and factorizations per step, and flexmb's own time split (assembly / factorization /
  solve, where ``result.stats`` has it).
* ``floor``: the same model runs 3 steps on CHOLMOD (``linear_solver="cholmod"``: by default flexmb
  factorizes this banded matrix with its own band factor, engine/band_cholesky.py, which the floor
  does not measure) while ``sksparse.cholmod.analyze`` hands out recording factors
  (benchlib.capture_cholmod): the last matrix factorized is the run's iteration matrix, on the
  pattern and with the CHOLMOD mode flexmb's CHOLMOD path uses. It is then analysed once and factorized
  --timing-repeats times, each followed by two solves; the median of (factorization + 2 solves) is
  the floor, with factorization and solve medians beside it.

Ratio = flexmb ms per step / floor ms. Median of --repeats for both; the runs' spread is printed beside the
median (on a shared VM it can exceed the distance to the goal). Each run is followed at once by its floor, and
the paired ratio (the median of run_k / floor_k, with its range) compares the two in the same phase of the
machine. flexmb's ms per step is its wall time over the
steps, the run's one-time set-up included (symbolic analysis, patterns, start); the steady ms per step leaves it
out, as the floor leaves out the analysis: the run's wall time minus that of a short run (a tenth of it, at least
20 steps) on a fresh model in the same worker, over the difference in steps (set-up ms: what is left of the short
run).

Run (from the repository root):

    python benchmarks/cholmod_floor.py                          # N = 1000, 10000; 1 s; 3 repeats
    python benchmarks/cholmod_floor.py --n 100 --t-end 0.05 --repeats 1 --results-dir /tmp/x   # quick check
    python benchmarks/cholmod_floor.py --n 10000 --length 20   # N = 10000 without the short elements (2.0 it/step)
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import benchlib as bl
from peer_beam_fall import LENGTH, RHO_INF, fm_link


def run_flexmb(n: int, t_end: float, dt: float, rtol: float, length: float = LENGTH, solver: str = "auto") -> dict:
    import flexmb as fm

    warm = bl.fm_warm_up(fm, dt, threaded=True)
    model, _ = fm_link(fm, n, length)
    cpu0 = time.process_time()
    res = fm.simulate(model, t_end, dt, rho_inf=RHO_INF, rtol=rtol, output_every=int(round(t_end / dt)),
                      linear_solver=solver)
    out = bl.fm_step_numbers(res, dt, time.process_time() - cpu0)
    out["factor"] = ("band" if bl.stat(res.stats, "band_solver", 0.0) else "dense" if bl.stat(res.stats, "dense_solver", 0.0)
                     else "CHOLMOD")
    s, steps = res.stats, bl.stat(res.stats, "steps", 0.0)
    for k in ("assembly", "factorization", "solve", "compiled_step"):
        v = bl.stat(s, f"time_{k}")
        out[f"{k}_ms_per_step"] = 1e3 * v / steps if v is not None and steps else None
    out.update({"dof": getattr(model, "n_u", None), "peak_mb": bl.peak_mb(), "warmup_s": warm,
                "fac_per_step_run": bl.stat(s, "factorizations", 0.0) / steps if steps else None})
    # the steady per-step cost: this run minus a short one on a fresh model (the one-time set-up, e.g. the
    # symbolic analysis and the patterns, cancels; the floor leaves the analysis out too)
    model, _ = fm_link(fm, n, length)
    short = max(20, int(round(0.1 * t_end / dt)))
    if short * 2 <= steps:
        res_s = fm.simulate(model, short * dt, dt, rho_inf=RHO_INF, rtol=rtol, output_every=short, linear_solver=solver)
        ws, ss = bl.stat(res_s.stats, "wall_time"), bl.stat(res_s.stats, "steps", 0.0)
        wl = bl.stat(s, "wall_time")
        if ws is not None and wl is not None and steps > ss:
            out["steady_ms_per_step"] = 1e3 * (wl - ws) / (steps - ss)
            out["setup_ms"] = 1e3 * ws - out["steady_ms_per_step"] * ss
    return out


def run_floor(n: int, dt: float, rtol: float, repeats: int, length: float = LENGTH) -> dict:
    import flexmb as fm

    model, _ = fm_link(fm, n, length)
    log = bl.CholmodLog()
    with bl.capture_cholmod(log):
        fm.simulate(model, 3 * dt, dt, rho_inf=RHO_INF, rtol=rtol, output_every=3, linear_solver="cholmod")
    out = bl.time_factor_and_solves(log.matrix, mode=log.mode or "auto", solves=2, repeats=repeats)
    out.update({"status": "finished", "ms_per_step": out["floor_ms"], "captured_factorizations": log.factorizations,
                "captured_solves": log.solves})
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    bl.run_options(p, "1000,10000")
    p.add_argument("--rtol", type=float, default=1e-10)
    p.add_argument("--length", type=float, default=LENGTH,
                   help="link length in m (default: the issue's 2 m link; 20 m gives N = 10000 elements of 2e-3 m)")
    p.add_argument("--timing-repeats", type=int, default=20, help="factorizations timed for the floor (median)")
    p.add_argument("--linear-solver", default="auto", choices=("auto", "band", "cholmod"),
                   help="flexmb's linear_solver in the run (default auto: the band factor for this link)")
    p.add_argument("--worker", choices=("run", "floor"), help=argparse.SUPPRESS)
    bl.common_options(p, max_minutes=20.0)
    args = p.parse_args(argv)
    ns = [int(v) for v in args.n.split(",") if v.strip()]
    if args.worker == "run":
        bl.emit(run_flexmb(ns[0], args.t_end, args.dt, args.rtol, args.length, args.linear_solver))
        return 0
    if args.worker == "floor":
        bl.emit(run_floor(ns[0], args.dt, args.rtol, args.timing_repeats, args.length))
        return 0

    env = bl.worker_env(args.blas, args.threads, args.numba_threads)
    blas = bl.blas_of_child(env)
    budget = 60.0 * args.max_minutes
    rows = []
    for n in ns:
        base = [sys.executable, os.path.abspath(__file__), "--n", str(n), "--t-end", repr(args.t_end), "--dt", repr(args.dt),
                "--rtol", repr(args.rtol), "--length", repr(args.length), "--timing-repeats", str(args.timing_repeats),
                "--linear-solver", args.linear_solver]
        # each run is followed at once by its floor (a pair shares the machine's phase); medians over the repeats
        runs, floors = [], []
        for k in range(args.repeats):
            runs += bl.repeat(lambda base=base: bl.run_worker(base + ["--worker", "run"], env, budget), 1,
                              f"N={n} flexmb run {k + 1}/{args.repeats}")
            floors += bl.repeat(lambda base=base: bl.run_worker(base + ["--worker", "floor"], env, budget), 1,
                                f"N={n} CHOLMOD floor {k + 1}/{args.repeats}")
            if not (bl.ok(runs[-1]) and bl.ok(floors[-1])):
                break
        pairs = [r["ms_per_step"] / f["floor_ms"] for r, f in zip(runs, floors) if bl.ok(r) and bl.ok(f)]
        run, floor = bl.median_runs(runs), bl.median_runs(floors)
        ratio = (run["ms_per_step"] / floor["floor_ms"] if bl.ok(run) and bl.ok(floor) else None)
        paired = (statistics.median(pairs), min(pairs), max(pairs)) if pairs else None
        steady = run.get("steady_ms_per_step")
        steady_ratio = steady / floor["floor_ms"] if steady is not None and bl.ok(floor) else None
        spread = run.get("ms_spread")
        rows.append([n, bl.fmt(run.get("dof"), ".0f"), run.get("status", "?")[:60], str(run.get("factor", "–")),
                     bl.fmt(run.get("ms_per_step"), ".4g"),
                     "–" if not spread else f"{spread[0]:.4g}–{spread[1]:.4g}", bl.fmt(run.get("cpu_ms_per_step"), ".4g"),
                     bl.fmt(run.get("newton_per_step"), ".2f"),
                     bl.fmt(run.get("fac_per_step_run"), ".2f"),
                     " / ".join(bl.fmt(run.get(f"{k}_ms_per_step"), ".3g")
                                for k in ("assembly", "factorization", "solve", "compiled_step")),
                     floor.get("status", "?")[:60] if not bl.ok(floor) else bl.fmt(floor.get("floor_ms"), ".4g"),
                     f"{bl.fmt(floor.get('factor_ms'), '.3g')} / {bl.fmt(floor.get('solve_ms'), '.3g')}",
                     f"{bl.fmt(floor.get('nnz_A'), '.0f')} / {bl.fmt(floor.get('nnz_L'), '.0f')}", str(floor.get("mode", "–")),
                     bl.fmt(ratio, ".2f"), "–" if paired is None else f"{paired[0]:.2f} ({paired[1]:.2f}–{paired[2]:.2f})",
                     bl.fmt(steady, ".4g"), bl.fmt(run.get("setup_ms"), ".0f"),
                     bl.fmt(steady_ratio, ".2f"), bl.fmt(run.get("peak_mb"), ".0f"), bl.fmt(run.get("load_before"), ".2f")])
    text = "\n".join([
        f"# flexmb per step over the CHOLMOD floor, falling Zahariev link ({time.strftime('%Y-%m-%d %H:%M')})",
        "",
        f"Link {args.length:g} m long. h = {args.dt:g} s, ρ∞ = {RHO_INF}, rtol = {args.rtol:g}, t_end = {args.t_end:g} s, "
        f"output at the ends only. Floor = "
        f"one CHOLMOD numeric factorization + two solves of the run's own iteration matrix (captured from flexmb on "
        f"CHOLMOD, same pattern and CHOLMOD mode), median of {args.timing_repeats}. flexmb's run: linear_solver="
        f"{args.linear_solver!r}.",
        "",
        f"Host: {bl.host_line()}",
        f"BLAS of the workers (--blas {args.blas}, {args.threads} thread(s)): {blas}",
        f"{bl.numba_threads_line(args.numba_threads)}",
        f"Command: `{bl.command_line()}`; median of {args.repeats} run(s), each in its own process.",
        "",
        bl.table(["N", "DOF", "status", "flexmb's factor", "flexmb ms/step", "runs' min–max ms/step", "CPU ms/step",
                  "Newton it/step", "factorizations/step",
                  "flexmb split ms/step: assembly / factorization / solve / compiled Newton loops", "floor ms",
                  "factor / solve ms",
                  "nnz(A) / nnz(L)", "CHOLMOD mode", "flexmb ÷ floor", "paired ÷ floor (min–max)", "steady ms/step", "set-up ms",
                  "steady ÷ floor", "peak MB", "load"], rows),
    ]) + "\n"
    return bl.publish("cholmod_floor", text, args.results_dir, args.json, rows)


if __name__ == "__main__":
    sys.exit(main())
