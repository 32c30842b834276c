"""Benchmark: loads of the motion f(t, x, R, v, w) and follower loads in the compiled steps (docs/motion_forces.md §8).

What it measures
----------------
The models of benchmarks/motion_load_models.py (those tests/test_motion_load_compiled.py checks), each with its
Newton loop in Python and compiled:

* ``drag``: a rod on a pin with a tip body on a second pin, the tip under a quadratic drag -c |v| v;
* ``pd``: a body on a free joint held by a PD position controller (force and moment, a moving target);
* ``pd_sampled``: the same controller sampled every 10 ms (held wrench, no tangent);
* ``follower_beam``: a damped 4-element strip on a pin with a joint spring, a follower force and moment at
  its tip, a fixed force on its middle node;
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

MODELS = ("drag", "pd", "pd_sampled", "follower_beam", "follower_tree")


def build(name: str):
    """The model ``name`` of the module docstring (benchmarks/motion_load_models.py, which the tests check)."""
    import motion_load_models as mlm

    builders = dict(drag=mlm.drag_pendulum, pd=mlm.pd_body, pd_sampled=lambda: mlm.pd_body(0.01),
                    follower_beam=mlm.follower_beam, follower_tree=mlm.follower_pendulum)
    return builders[name]()


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
