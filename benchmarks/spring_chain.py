"""Benchmark: a 100-link pendulum chain stiffened by point-to-point spring-dampers between
neighbouring links, against the same chain stiffened by joint spring-dampers (issue 34).

What it measures
----------------
The chain of benchmarks/chain_fall.py (N uniform rods of 0.1 m and 0.1 kg, revolute joints about
global z, the first pinned at the origin, horizontal at rest, gravity -y) in two variants:

* ``tsda``: at every joint but the first, a spring-damper (ModelBuilder.add_spring_damper,
  docs/spring_damper.md) from the point (-a, h) of the previous link to the point (+a, h) of the
  next one (relative to the joint; a = 0.03 m, h = 0.02 m): for small joint angles it is a
  rotational spring of stiffness k h² and damping c h² about the joint, plus the lever terms of
  large angles; the N - 1 spring-dampers close no loop of joints but couple neighbouring links;
* ``joint``: the same stiffness and damping as joint springs (add_joint_spring: k h², c h² on
  every joint but the first): a pure tree, the O(n) tree factor.

A spring-damper's two forces are an internal pair, so its tangent acts on the joints of the tree
path between its nodes only (docs/spring_damper.md §7): here the one joint between the two
neighbouring links, a block on that joint's diagonal like a joint spring's, so ``tsda`` keeps the
O(n) tree factor and its compiled step and run (S17). Each variant runs on the linear solver
``auto`` chooses and on the dense factor (``dense``: each step's whole Newton loop in one compiled
call; M̄ of a chain is full, N² entries) for a like-for-like Newton loop (the tree step's convergence
test and its position tangent are its own). For each: the wall and CPU time per step of ``simulate``
(fixed steps ``--dt`` to ``--t-end``, rho_inf 0.9, an output row every 10 steps), Newton iterations
and factorizations per step, the Newton path ``flexmb info`` names, the linear solver, and the tip's position at the end (the two
models are the same only for small angles: the difference shows how far the motion took them
apart). Warm-up runs on both linear solvers compile numba's kernels first (not timed). Measured, not a timed test.

How to run it
-------------
    python benchmarks/spring_chain.py                  # N = 100, 1 s, dt 1e-3
    python benchmarks/spring_chain.py --n 30 --t-end 0.2 --markdown

Options: ``--n`` (links, default 100), ``--t-end`` (default 1.0 s), ``--dt`` (default 1e-3 s),
``--k`` (spring-damper stiffness, default 2000 N/m), ``--c`` (its damping, default 2 N s/m),
``--markdown`` (a markdown table).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import flexmb as fm
from flexmb.solvers.generalized_alpha import GeneralizedAlpha

LINK_LENGTH, LINK_MASS, GRAVITY = 0.1, 0.1, 9.81
ARM_A, ARM_H = 0.03, 0.02  # the spring-damper's points: ∓a along the links, h above them [m]


def chain(n: int, variant: str, k: float, c: float) -> fm.Model:
    """The chain of the module docstring, ``variant`` ``"tsda"`` or ``"joint"``."""
    L, m = LINK_LENGTH, LINK_MASS
    mb = fm.ModelBuilder(gravity=(0.0, -GRAVITY, 0.0))
    inertia = np.diag([0.0, m * L**2 / 12.0, m * L**2 / 12.0])
    parent = "ground"
    for i in range(n):
        node = f"n{i}"
        mb.add_node(node, (i * L, 0.0, 0.0))
        mb.add_body(f"link{i}", node, m, (0.5 * L, 0.0, 0.0), inertia)
        mb.add_joint(f"j{i}", "revolute", parent, node, point=(i * L, 0.0, 0.0), axis=(0.0, 0.0, 1.0))
        if i and variant == "tsda":
            x = i * L
            mb.add_spring_damper(f"sd{i}", parent, node, stiffness=k, damping=c, point_a=(x - ARM_A, ARM_H, 0.0),
                                 point_b=(x + ARM_A, ARM_H, 0.0))
        elif i:
            mb.add_joint_spring(f"j{i}", k * ARM_H**2, c * ARM_H**2)
        parent = node
    return mb.compile()


def measure(n: int, variant: str, t_end: float, dt: float, k: float, c: float, solver: str = "auto") -> dict:
    """One timed run of ``variant`` on the linear solver ``solver``: its numbers (module docstring)."""
    model = chain(n, variant, k, c)
    integ = GeneralizedAlpha(model, rho_inf=0.9, linear_solver=solver)
    path = integ.describe_solver()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    res = fm.simulate(model, t_end, dt, rho_inf=0.9, output_every=10, linear_solver=solver)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    steps = max(int(res.stats.get("steps", 0)), 1)
    return {"variant": f"{variant} ({solver})", "status": res.status, "steps": steps, "ms_per_step": 1e3 * wall / steps,
            "cpu_ms_per_step": 1e3 * cpu / steps, "newton_per_step": res.stats.get("newton_iterations", 0.0) / steps,
            "factorizations_per_step": res.stats.get("factorizations", 0.0) / steps, "path": path,
            "tip": res.x[-1, -1] + res.R[-1, -1] @ np.array([LINK_LENGTH, 0.0, 0.0])}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=100)
    p.add_argument("--t-end", type=float, default=1.0)
    p.add_argument("--dt", type=float, default=1e-3)
    p.add_argument("--k", type=float, default=2000.0)
    p.add_argument("--c", type=float, default=2.0)
    p.add_argument("--markdown", action="store_true")
    a = p.parse_args()
    t0 = time.perf_counter()
    for variant in ("tsda", "joint"):  # warm-up: numba's kernels compiled or loaded from the cache, on both paths
        for solver in ("auto", "dense"):
            fm.simulate(chain(3, variant, a.k, a.c), 5 * a.dt, a.dt, rho_inf=0.9, linear_solver=solver)
    print(f"warm-up {time.perf_counter() - t0:.1f} s; N = {a.n}, t_end = {a.t_end} s, dt = {a.dt} s, k = {a.k} N/m, "
          f"c = {a.c} N s/m (joint springs k h² = {a.k * ARM_H**2:g} N m/rad, c h² = {a.c * ARM_H**2:g} N m s/rad)")
    rows = [measure(a.n, v, a.t_end, a.dt, a.k, a.c, s) for v, s in (("tsda", "auto"), ("tsda", "dense"), ("joint", "auto"),
                                                               ("joint", "dense"))]
    head = ["variant", "status", "steps", "ms/step", "CPU ms/step", "Newton/step", "factorizations/step", "tip x, y [m]"]
    table = [[r["variant"], r["status"], str(r["steps"]), f"{r['ms_per_step']:.3g}", f"{r['cpu_ms_per_step']:.3g}",
              f"{r['newton_per_step']:.3g}", f"{r['factorizations_per_step']:.3g}",
              f"{r['tip'][0]:.5f}, {r['tip'][1]:.5f}"] for r in rows]
    if a.markdown:
        print("| " + " | ".join(head) + " |\n|" + "|".join("---" for _ in head) + "|")
        for row in table:
            print("| " + " | ".join(row) + " |")
    else:
        for row in [head] + table:
            print("  ".join(f"{c:>14}" for c in row))
    for r in rows:
        print(f"{r['variant']}: {r['path']}")
    print(f"tip distance between the variants: {np.linalg.norm(rows[0]['tip'] - rows[-1]['tip']):.3g} m")


if __name__ == "__main__":
    main()
