"""Falling rigid chain: time per step against the number of links and its growth exponent (issue 14).

The chain of benchmarks/chain_fall.py (N uniform rods 0.1 m, 0.1 kg, revolute joints about z, pinned at
the origin, horizontal at rest, gravity along -y; flexmb joint coordinates), h = 1e-3 s, rho_inf =
0.9, rtol = 1e-10 (chain_fall.py's settings), output at the ends only (--output-every K for a row every
K steps), for N = 100, 300, 1000 links, each run in its own subprocess after a JIT warm-up, median of
--repeats. The growth exponent p of ms/step ~ N^p is fitted by least squares over all N (and given
between neighbouring N): p = 1 is the goal of a tree factorization that does not fill in; the dense
M-bar of joint coordinates gives up to p = 3 once the factorization dominates.

--blas takes a comma list (system, reference, openblas): one table column set per BLAS, so the
OpenBLAS gain on the long chain is seen in the same run.

Run (from the repository root):

    python benchmarks/chain_scaling.py                                  # 100, 300, 1000 links; 1 s
    python benchmarks/chain_scaling.py --blas reference,openblas
    python benchmarks/chain_scaling.py --n 10,30,100 --t-end 0.05 --repeats 1 --results-dir /tmp/x   # quick check
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import benchlib as bl

RHO_INF, RTOL = 0.9, 1e-10


def run(n: int, t_end: float, dt: float, every: int) -> dict:
    import flexmb as fm
    from flexmb.engine.linalg import blas_info

    warm = bl.fm_warm_up(fm, dt)
    base = bl.peak_mb()
    model = bl.fm_chain(fm, n)
    cpu0 = time.process_time()
    res = fm.simulate(model, t_end, dt, rho_inf=RHO_INF, rtol=RTOL, output_every=every or int(round(t_end / dt)))
    out = bl.fm_step_numbers(res, dt, time.process_time() - cpu0)
    steps = bl.stat(res.stats, "steps", 0.0)
    for k in ("assembly", "factorization", "solve"):
        v = bl.stat(res.stats, f"time_{k}")
        out[f"{k}_ms_per_step"] = 1e3 * v / steps if v is not None and steps else None
    out.update({"dof": getattr(model, "n_u", None), "peak_mb": bl.peak_mb(), "base_mb": base, "warmup_s": warm,
                "blas": blas_info()})
    return out


def fit_exponent(ns: list[int], ms: list[float]) -> float | None:
    """Least-squares slope of log(ms) against log(N)."""
    pts = [(math.log(n), math.log(m)) for n, m in zip(ns, ms) if m and m > 0]
    if len(pts) < 2:
        return None
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    return sum((x - mx) * (y - my) for x, y in pts) / sxx if sxx > 0 else None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    bl.run_options(p, "100,300,1000", "chain lengths, comma-separated")
    p.add_argument("--output-every", type=int, default=0, help="a row every K steps (default 0: at the ends only)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    bl.common_options(p, max_minutes=30.0)
    p.set_defaults(blas="system")
    for a in p._actions:  # --blas takes a comma list here
        if a.dest == "blas":
            a.choices, a.help = None, "comma list of system, reference, openblas (default system)"
    args = p.parse_args(argv)
    ns = [int(v) for v in args.n.split(",") if v.strip()]
    if args.worker:
        bl.emit(run(ns[0], args.t_end, args.dt, args.output_every))
        return 0

    budget = 60.0 * args.max_minutes
    blas_list = [b.strip() for b in args.blas.split(",") if b.strip()]
    lines, fits, loaded = [], [], set()
    for b in blas_list:
        env = bl.worker_env(b, args.threads)
        got = []
        for n in ns:
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--n", str(n), "--t-end", repr(args.t_end),
                   "--dt", repr(args.dt), "--output-every", str(args.output_every)]
            runs = bl.repeat(lambda cmd=cmd, env=env: bl.run_worker(cmd, env, budget), args.repeats, f"--blas {b} N={n}")
            r = bl.median_runs(runs)
            got.append(r)
        for i, (n, r) in enumerate(zip(ns, got)):
            local = None
            if i and bl.ok(r) and bl.ok(got[i - 1]):
                local = fit_exponent([ns[i - 1], n], [got[i - 1]["ms_per_step"], r["ms_per_step"]])
            sp = r.get("ms_spread")
            lines.append([b, bl.blas_short(r.get("blas", "–")), n, r.get("status", "?")[:60], bl.fmt(r.get("ms_per_step"), ".4g"),
                          f"{sp[0]:.3g}–{sp[1]:.3g}" if sp else "–", bl.fmt(r.get("cpu_ms_per_step"), ".4g"),
                          bl.fmt(r.get("newton_per_step"), ".2f"), bl.fmt(r.get("jac_per_step"), ".2f"),
                          " / ".join(bl.fmt(r.get(f"{k}_ms_per_step"), ".3g") for k in ("assembly", "factorization", "solve")),
                          bl.fmt(local, ".2f"), bl.fmt(r.get("peak_mb"), ".0f"), bl.fmt(r.get("load_before"), ".2f")])
        loaded.update({f"* --blas {b}: {r['blas']}" for r in got if r.get("blas")})
        done = [(n, r["ms_per_step"]) for n, r in zip(ns, got) if bl.ok(r)]
        fits.append(f"* --blas {b}: ms/step ~ N^p with p = {bl.fmt(fit_exponent(*zip(*done)) if len(done) > 1 else None, '.2f')} "
                    f"(least squares over N = {', '.join(str(n) for n, _ in done) or 'none'})")
    text = "\n".join([
        f"# Falling rigid chain: time per step against N ({time.strftime('%Y-%m-%d %H:%M')})",
        "",
        f"benchmarks/chain_fall.py's chain; h = {args.dt:g} s, ρ∞ = {RHO_INF}, rtol = {RTOL:g}, t_end = {args.t_end:g} s, "
        + ("output at the ends only" if not args.output_every else f"output every {args.output_every} steps") + ".",
        "",
        f"Host: {bl.host_line()}",
        f"Command: `{bl.command_line()}`; median of {args.repeats} run(s), each in its own process; "
        f"{args.threads} BLAS thread(s).",
        "",
        bl.table(["--blas", "BLAS loaded", "N links", "status", "ms/step", "(min–max)", "CPU ms/step", "Newton it/step",
                  "factorizations/step", "split ms/step: assembly / factorization / solve", "exponent from previous N",
                  "peak MB", "load"], lines),
        "",
        "Growth exponent:",
        *fits,
        "",
        "BLAS loaded (flexmb.engine.linalg.blas_info in the workers):",
        *sorted(loaded),
    ]) + "\n"
    return bl.publish("chain_scaling", text, args.results_dir, args.json, lines)


if __name__ == "__main__":
    sys.exit(main())
