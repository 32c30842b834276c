"""Benchmark: the cost of joint forces of the motion f(t, q, u) in the compiled steps (docs/motion_forces.md §6).

What it measures
----------------
A chain of N uniform rods (0.1 m, 0.1 kg) on revolute joints about global z, the first pinned at
the origin, horizontal at rest, gravity -y, with on every joint a PD law tau = -kp q - kd q':

* ``spring``: as joint springs (add_joint_spring(kp, kd)): constants of the compiled step;
* ``compiled``: as joint forces of the motion (add_joint_force(lambda t, q, u: -kp q - kd u)),
  compiled with numba into the compiled step (flexmb/solvers/motion_step.py);
* ``python``: the same forces with the compiled step switched off (the Python Newton loop, what a
  model whose functions do not compile takes).

Each takes ``--steps`` steps of ``--dt`` through ``GeneralizedAlpha.step`` (one compiled call per step;
the springs' many-steps-per-call run of simulate is not used, so the three are alike); the time per
step is the median of ``--repeats`` runs, each in its own process (``--worker``), after a warm-up run
that compiles the kernels. The two PD variants must take the same Newton iterations as the springs
(their tangents are the same): the report prints them. Measured, not a timed test.

How to run it
-------------
    python benchmarks/motion_forces.py                    # N = 1, 10, 50; 2000 steps of 1 ms
    python benchmarks/motion_forces.py --n 10 --steps 500 --markdown
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

KP, KD = 0.5, 0.01  # [N m/rad], [N m s/rad]
L, M = 0.1, 0.1


def chain(n: int, variant: str):
    """The chain of the module docstring for ``variant``."""
    import flexmb as fm

    mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    parent = "ground"
    for i in range(n):
        mb.add_node(f"n{i}", position=(i * L, 0.0, 0.0))
        mb.add_body(f"b{i}", node=f"n{i}", mass=M, com=(L / 2, 0.0, 0.0),
                    inertia=np.diag([1e-6, M * L**2 / 12, M * L**2 / 12]))
        mb.add_joint(f"j{i}", "revolute", parent=parent, child=f"n{i}", point=(i * L, 0.0, 0.0), axis=(0, 0, 1))
        if variant == "spring":
            mb.add_joint_spring(f"j{i}", KP, KD)
        else:
            mb.add_joint_force(f"j{i}", lambda t, q, u: -KP * q - KD * u)
        parent = f"n{i}"
    return mb.compile()


def worker(n: int, variant: str, steps: int, dt: float) -> dict:
    """One timed run (the module docstring): seconds per step, Newton iterations, the Newton path."""
    from flexmb.solvers.generalized_alpha import GeneralizedAlpha

    model = chain(n, variant)
    t0 = time.perf_counter()
    integ = GeneralizedAlpha(model)
    setup = time.perf_counter() - t0
    if variant == "python":
        integ.tree_step = None
    st, _ = integ.initial_acceleration(model.initial_state())
    a = st.udot.copy()
    for _ in range(5):  # the kernels loaded (compiled on the warm-up run)
        st, a, _, _ = integ.step(st, a, dt)
    iterations = 0
    t0 = time.perf_counter()
    for _ in range(steps):
        st, a, _, info = integ.step(st, a, dt)
        iterations += info.iterations
    wall = time.perf_counter() - t0
    return {"us_per_step": 1e6 * wall / steps, "iterations": iterations / steps, "setup_s": setup,
            "path": integ.describe_solver().split("; ", 1)[-1][:90]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, nargs="*", default=[1, 10, 50])
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--dt", type=float, default=1e-3)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--markdown", action="store_true")
    p.add_argument("--worker", nargs=2)
    args = p.parse_args()
    if args.worker:
        print(json.dumps(worker(int(args.worker[0]), args.worker[1], args.steps, args.dt)))
        return

    def run(n: int, variant: str, steps: int) -> dict:
        cmd = [sys.executable, __file__, "--worker", str(n), variant, "--steps", str(steps), "--dt", str(args.dt)]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=os.environ.copy())
        return json.loads(out.stdout.strip().splitlines()[-1])

    for variant in ("spring", "compiled", "python"):
        run(1, variant, 10)  # warm-up: numba compiles and caches the kernels
    rows = []
    for n in args.n:
        for variant in ("spring", "compiled", "python"):
            rs = [run(n, variant, args.steps) for _ in range(args.repeats)]
            us = sorted(r["us_per_step"] for r in rs)
            rows.append((n, variant, us[len(us) // 2], us[0], us[-1], rs[0]["iterations"], rs[0]["setup_s"], rs[0]["path"]))
    head = "| N | variant | us/step (median) | min-max | Newton it./step | GeneralizedAlpha() s | Newton path |"
    print(head if args.markdown else head.replace("|", " "))
    if args.markdown:
        print("|---" * 7 + "|")
    for n, v, med, lo, hi, it, setup, path in rows:
        line = f"| {n} | {v} | {med:.1f} | {lo:.1f}-{hi:.1f} | {it:.2f} | {setup:.2f} | {path} |"
        print(line if args.markdown else line.replace("|", " "))


if __name__ == "__main__":
    main()
