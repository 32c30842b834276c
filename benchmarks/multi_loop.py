"""Benchmark: a multi-loop linkage through repeated singular configurations, elastic-damped cuts
against rigid-limit cuts (issue 12, "Benchmark"; docs/loops.md §1).

What it measures
----------------
N = 4 parallelogram loops side by side in the x-y plane (ground pivots O_i = (i L, 0, 0), L = 1 m;
cranks of r = 0.4 m about z; couplers of length L joining crank tips j-1 and j; uniform 1 kg rods;
gravity -y). Loop j is cut where coupler j meets crank j's tip, by

* ``elastic``: a revolute bushing (free rotation z) of stiffness k on the translations and k L² on the
  two tilts, damping left to flexmb (the default: ζ = 0.5 per local mode, flexmb.builder.cut_defaults),
  started preloaded (flexmb.analysis.rigid.preloaded_state);
* ``rigid``: ModelBuilder.add_rigid_cut (augmented Lagrangian, closure tolerance 1e-10 m).

Crank 0 is driven from θ_s = π/2 by θ = θ_s + W/2 (t - T/π sin(πt/T)) (t < T), θ_s + W (t - T/2) after,
W = 4π rad/s, T = 0.25 s: all links are horizontal (singular) whenever θ = kπ, every 0.25 s from
t = 0.25 s, 10 passages in t_end = 2.6 s. The exact rigid position of crank 4's tip is
P = (N L + r cos θ, r sin θ, 0). Per run: status, max |tip - P| over the run and at t_end, the spread
of the crank angles (a branch flip shows as ≈ π), Newton iterations and factorizations per step, wall
and CPU ms per step (median of ``--repeats``, each run in its own process), dt = ``--dt``,
ρ∞ = ``--rho-inf`` (default 1.0: no numerical dissipation, only the cuts' damping holds the loops).

How to run it
-------------
    python benchmarks/multi_loop.py --k 1e7 1e8 1e9 1e10 --repeats 3

Closing note (measured for docs/loops.md §1 at dt = 1e-3, ρ∞ = 1, on a shared 2-core machine): the
elastic-damped error falls like k^-1/2 (3.65e-3, 1.11e-3, 3.36e-4 m for k = 1e7, 1e8, 1e9), the same
at every passage; undamped cuts drift (1.3e-2 m at 1e9) or flip branch (1e7). One worker run each
on branch `cuts` (single runs on a busy machine, so the times are indicative only): elastic k = 1e9,
0.6 s: max error 3.36e-4 m, 2.67 Newton it/step, 1.0 factorization/step, 2.9 ms/step; rigid-limit,
2.6 s (10 passages): max error 3.0e-6 m, error at t_end 1.5e-14 m, crank spread 8.1e-6 rad, peak cut
force 4.7e3 N (the weights along the loops' extra mobility at each passage, which a rigid loop must
carry), 2.22 Newton it/step, 1.11 factorizations/step, 10.5 ms/step (the projections and the
extra evaluations after each step cost more than the iterations they save on this 9-body model).
Run the script for the full table on your machine; the tests never time anything.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

N, L, R, M = 4, 1.0, 0.4, 1.0
W, T, THETA_S = 4 * np.pi, 0.25, np.pi / 2


def drive_angle(t: float) -> float:
    return W / 2 * (t - T / np.pi * np.sin(np.pi * t / T)) if t < T else W * (t - T / 2)


def build(fm, cut: str, k: float):
    """The chain (module docstring) with ``cut`` "elastic" (stiffness k, default damping) or "rigid"."""
    e = np.array([np.cos(THETA_S), np.sin(THETA_S), 0.0])
    z = (0.0, 0.0, 1.0)

    def rod(length, d):
        d = np.asarray(d, float) / np.linalg.norm(d)
        return M * length**2 / 12 * (np.eye(3) - np.outer(d, d))

    mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    tips = [np.array([i * L, 0.0, 0.0]) + R * e for i in range(N + 1)]
    for i in range(N + 1):
        mb.add_node(f"crank{i}", tips[i])
        mb.add_body(f"crank{i}", f"crank{i}", M, -R / 2 * e, rod(R, e))
        mb.add_joint(f"O{i}", "revolute", "ground", f"crank{i}", point=(i * L, 0.0, 0.0), axis=z)
    for j in range(1, N + 1):
        mb.add_node(f"coupler{j}", tips[j - 1])
        mb.add_body(f"coupler{j}", f"coupler{j}", M, (L / 2, 0.0, 0.0), rod(L, (1, 0, 0)))
        mb.add_joint(f"A{j}", "revolute", f"crank{j - 1}", f"coupler{j}", point=tips[j - 1], axis=z)
    for j in range(1, N + 1):
        if cut == "rigid":
            mb.add_rigid_cut(f"cut{j}", f"coupler{j}", f"crank{j}", point=tips[j], free_rotation="z")
        else:
            mb.add_bushing(f"cut{j}", f"coupler{j}", f"crank{j}", stiffness=[k, k, k, k * L**2, k * L**2, 0.0],
                           point=tips[j], free_rotation="z")
    q = np.vectorize(drive_angle)
    qd = np.vectorize(lambda t: W / 2 * (1 - np.cos(np.pi * t / T)) if t < T else W)
    qdd = np.vectorize(lambda t: W / 2 * np.pi / T * np.sin(np.pi * t / T) if t < T else 0.0)
    mb.add_drive("O0", lambda t: float(q(np.real(t))), lambda t: float(qd(np.real(t))), lambda t: float(qdd(np.real(t))))
    return mb.compile()


def worker(cut: str, k: float, dt: float, t_end: float, rho_inf: float) -> dict:
    import flexmb as fm
    from flexmb.analysis.rigid import preloaded_state

    bl.fm_warm_up(fm, dt)
    model = build(fm, cut, k)
    state = preloaded_state(model) if cut == "elastic" else None
    c0 = time.process_time()
    res = fm.simulate(model, t_end, dt, rho_inf=rho_inf, state=state)
    out = bl.fm_step_numbers(res, dt, time.process_time() - c0)
    th = THETA_S + np.array([drive_angle(t) for t in res.t])
    exact = np.stack([N * L + R * np.cos(th), R * np.sin(th), 0 * th], -1)
    err = np.linalg.norm(res.x[:, model.node_names.index(f"crank{N}")] - exact, axis=1)
    ang = np.stack([res.coordinate(f"O{i}.q") for i in range(N + 1)], 1)
    out.update(err_max=float(err.max()) if err.size else None, err_end=float(err[-1]) if err.size else None,
               spread=float(np.abs(np.angle(np.exp(1j * (ang - ang[:, :1])))).max()) if err.size else None,
               peak_cut_N=float(np.linalg.norm(res.cut_forces_global[:, :, :3], axis=-1).max()) if err.size else None)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--k", type=float, nargs="+", default=[1e7, 1e8, 1e9, 1e10], help="elastic cut stiffnesses [N/m]")
    p.add_argument("--dt", type=float, default=1e-3)
    p.add_argument("--t-end", type=float, default=2.6)
    p.add_argument("--rho-inf", type=float, default=1.0)
    p.add_argument("--worker", nargs=2, metavar=("CUT", "K"), help=argparse.SUPPRESS)
    bl.common_options(p)
    a = p.parse_args()
    if a.worker:
        bl.emit(worker(a.worker[0], float(a.worker[1]), a.dt, a.t_end, a.rho_inf))
        return
    env = bl.worker_env(a.blas, a.threads, a.numba_threads)
    rows = []
    for cut, k in [("elastic", k) for k in a.k] + [("rigid", 0.0)]:
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", cut, repr(k), "--dt", repr(a.dt), "--t-end",
               repr(a.t_end), "--rho-inf", repr(a.rho_inf)]
        r = bl.median_runs(bl.repeat(lambda cmd=cmd: bl.run_worker(cmd, env, 60 * a.max_minutes), a.repeats,
                                     f"{cut} k={k:g}"))
        rows.append([cut, bl.fmt(k) if cut == "elastic" else "–", r.get("status"), bl.fmt(r.get("err_max")),
                     bl.fmt(r.get("err_end")), bl.fmt(r.get("spread")), bl.fmt(r.get("peak_cut_N")),
                     bl.fmt(r.get("newton_per_step")), bl.fmt(r.get("jac_per_step")), bl.fmt(r.get("ms_per_step")),
                     bl.fmt(r.get("cpu_ms_per_step")), str(r.get("repeats"))])
    head = ["cut", "k [N/m]", "status", "max tip error [m]", "error at t_end [m]", "crank spread [rad]", "peak |F| cut [N]",
            "Newton it/step", "factorizations/step", "ms/step (wall)", "ms/step (CPU)", "repeats"]
    text = (f"# multi_loop: 4-loop parallelogram chain, 10 singular passages\n\n{bl.host_line()}\n\ncommit "
            f"{bl.git_commit()}; dt = {a.dt:g} s, t_end = {a.t_end:g} s, rho_inf = {a.rho_inf:g}\n\n"
            f"`{bl.command_line()}`\n\n{bl.table(head, rows)}\n")
    print(text)
    print(bl.write_results("multi_loop", text, a.results_dir), file=sys.stderr)


if __name__ == "__main__":
    main()
