"""Benchmark: loads of the motion f(t, x, R, v, w) and follower loads in the compiled steps (docs/motion_forces.md §8).

What it measures
----------------
The models of tests/test_motion_load_compiled.py, each with its Newton loop in Python and compiled:

* ``drag``: a rod on a pin with a tip body on a second pin, the tip under a quadratic drag -c |v| v;
* ``pd``: a body on a free joint held by a PD position controller (force and moment, a moving target);
* ``pd_sampled``: the same controller sampled every 10 ms (held wrench, no tangent);
* ``follower_beam``: a damped 4-element strip on a pin with a joint spring, a follower force and moment at
  its tip;
* ``follower_tree``: a rigid double pendulum with a follower thrust (the O(n) tree factor's compiled step).

``python``: the compiled step switched off (ElementStep.applies / TreeStep.applies False: the Python Newton
loop, what the models took before); ``compiled``: the default path (flexmb/solvers/motion_load_step.py). Each
takes ``--steps`` steps of ``--dt`` through ``GeneralizedAlpha.step`` (one process; both integrators made first
and warmed up by five steps, which loads or compiles the kernels); the time per step is the process time (not
wall time: the machine is shared) of a run; the variants are interleaved (python, compiled, python, ...), each
continuing its own motion, and the median of ``--repeats`` runs reported. Both must take the same Newton
iterations (the compiled step is the Python step bit for bit): the report prints them. Measured, not a timed
test.

How to run it
-------------
    python benchmarks/motion_load_compiled.py                       # 5 x 500 steps of 1 ms per variant
    python benchmarks/motion_load_compiled.py --steps 500 --markdown
"""

from __future__ import annotations

import argparse
import time

import numpy as np

G = 9.81
SECTION = dict(E=2.1e11, G=8.1e10, A=1e-4, Iy=1e-9, Iz=1e-9, J=2e-9, rho=7800.0)
MODELS = ("drag", "pd", "pd_sampled", "follower_beam", "follower_tree")


def build(name: str):
    """The model ``name`` of the module docstring (those of tests/test_motion_load_compiled.py)."""
    import flexmb as fm

    if name == "drag":
        mb = fm.ModelBuilder(gravity=(0.0, -G, 0.0))
        mb.add_node("rod", position=(0.0, 0.0, 0.0))
        mb.add_body("rod", node="rod", mass=1.0, com=(0.5, 0.0, 0.0), inertia=np.diag([1e-4, 1 / 12, 1 / 12]))
        mb.add_joint("pin", "revolute", "ground", "rod", axis=(0.0, 0.0, 1.0))
        mb.add_node("tip", position=(1.0, 0.0, 0.0))
        mb.add_body("tip", node="tip", mass=0.2, com=(0.0, 0.0, 0.0), inertia=np.eye(3) * 1e-4)
        mb.add_joint("wrist", "revolute", "rod", "tip", point=(1.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0), q0=0.3)
        mb.add_load("drag", "tip", lambda t, x, R, v, w: -0.8 * np.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2] + 1e-12) * v)
    elif name in ("pd", "pd_sampled"):
        mb = fm.ModelBuilder(gravity=(0.0, 0.0, -G))
        mb.add_node("b", position=(0.2, 0.1, 1.0))
        mb.add_body("b", node="b", mass=0.5, com=(0.02, 0.0, 0.0), inertia=np.diag([2e-3, 3e-3, 4e-3]))
        mb.add_joint("j", "free", "ground", "b", u0=(0.3, -0.2, 0.1, 1.0, -2.0, 0.5))

        def pd(t, x, R, v, w):
            target = np.array([0.2 + 0.1 * np.sin(3.0 * t), 0.1, 1.0 - 0.05 * t])
            return np.concatenate((-400.0 * (x - target) - 6.0 * v, -0.05 * w))

        mb.add_load("pd", "b", pd, period=0.01 if name == "pd_sampled" else None)
    elif name == "follower_beam":
        mb = fm.ModelBuilder(gravity=(0.0, -G, 0.0))
        nodes = mb.add_flexible_link("link", (0.0, 0.0, 0.0), (0.5, 0.0, 0.0), 4, fm.BeamSection(**SECTION), damping=1e-4)
        mb.add_joint("pin", "revolute", "ground", nodes[0], axis=(0.0, 0.0, 1.0))
        mb.add_joint_spring("pin", stiffness=2.0, damping=0.01)
        mb.add_load("push", nodes[-1], force=lambda t: np.array([0.0, -0.3 * (1.0 + np.sin(4.0 * t)), 0.05]),
                    moment=(0.0, 0.0, 0.002), follower=True)
    else:
        mb = fm.ModelBuilder(gravity=(0.0, -G, 0.0))
        for k, nm in enumerate(("a", "b")):
            mb.add_node(nm, position=(0.5 * k, 0.0, 0.0))
            mb.add_body(nm, node=nm, mass=1.0, com=(0.25, 0.0, 0.0), inertia=np.diag([1e-3, 0.02, 0.02]))
        mb.add_joint("j1", "revolute", "ground", "a", axis=(0.0, 0.0, 1.0))
        mb.add_joint("j2", "revolute", "a", "b", point=(0.5, 0.0, 0.0), axis=(0.0, 0.0, 1.0), q0=0.4)
        mb.add_load("thrust", "b", force=lambda t: np.array([0.0, 2.0 + np.cos(2.0 * t), 0.0]), follower=True)
    return mb.compile()


def _integrator(model, variant: str):
    """The integrator of ``variant``: ``python`` made with the compiled steps refused (their ``applies`` False while
    it is made: the Python Newton loop), ``compiled`` the default."""
    from flexmb.solvers.element_step import ElementStep
    from flexmb.solvers.generalized_alpha import GeneralizedAlpha
    from flexmb.solvers.tree_step import TreeStep

    if variant == "compiled":
        return GeneralizedAlpha(model)
    saved = ElementStep.__dict__["applies"], TreeStep.__dict__["applies"]
    ElementStep.applies = staticmethod(lambda model, asm, cholmod: False)
    TreeStep.applies = staticmethod(lambda model, asm: False)
    try:
        return GeneralizedAlpha(model)
    finally:
        ElementStep.applies, TreeStep.applies = saved


def measure(name: str, steps: int, dt: float, repeats: int) -> list[tuple]:
    """Per variant: (model, variant, median ms/step, min, max, Newton iterations per step, path) over ``repeats``
    interleaved runs of ``steps`` steps each, continuing from the last (process time)."""
    from flexmb.solvers.initial import relaxed_start

    model = build(name)
    runs = {}
    for variant in ("python", "compiled"):
        integ = _integrator(model, variant)
        st, _ = integ.initial_acceleration(relaxed_start(model)[0])
        a = st.udot.copy()
        for _ in range(5):  # warm-up: the kernels loaded or compiled
            st, a, _, _ = integ.step(st, a, dt)
        runs[variant] = [integ, st, a, [], 0]
    for _ in range(repeats):  # interleaved: the machine's load falls on both alike
        for r in runs.values():
            integ, st, a = r[0], r[1], r[2]
            t0 = time.process_time()
            for _ in range(steps):
                st, a, _, info = integ.step(st, a, dt)
                r[4] += info.iterations
            r[3].append(1e3 * (time.process_time() - t0) / steps)
            r[1], r[2] = st, a
    out = []
    for variant, (integ, _, _, ms, it) in runs.items():
        out.append((name, variant, float(np.median(ms)), min(ms), max(ms), it / (steps * repeats),
                    integ.step_path().split(" (")[0][:60]))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", nargs="*", default=list(MODELS))
    p.add_argument("--steps", type=int, default=500)
    p.add_argument("--dt", type=float, default=1e-3)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--markdown", action="store_true")
    args = p.parse_args()
    rows = [row for name in args.models for row in measure(name, args.steps, args.dt, args.repeats)]
    head = "| model | variant | ms/step (median) | min-max | Newton it./step | Newton path |"
    print(head if args.markdown else head.replace("|", " "))
    if args.markdown:
        print("|---" * 6 + "|")
    for name, v, med, lo, hi, it, path in rows:
        line = f"| {name} | {v} | {med:.4f} | {lo:.4f}-{hi:.4f} | {it:.2f} | {path} |"
        print(line if args.markdown else line.replace("|", " "), flush=True)


if __name__ == "__main__":
    main()
