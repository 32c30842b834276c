"""Benchmark: does the follower load's rotation tangent help Newton? (issue 34, docs/motion_forces.md §8).

What it measures
----------------
A follower load (``add_load(..., follower=True)``, eq. (M19)) is F = (R f(t), R m(t)), R the node's rotation.
Its derivative by a small rotation θ of the node in global axes (R -> exp([θ]×) R, the coordinates of (M9)) is

    ∂(R f)/∂θ = -[R f]×,      ∂(R m)/∂θ = -[R m]×                                                (FT1)

so K = -∂F/∂(x, θ) has [R f]× in the force rows against the rotation columns and [R m]× in the moment rows,
nothing else. flexmb's iteration matrix takes only symmetric blocks (M12); the follower load enters none today.
Four variants of each model, same motion:

* ``none``: today's ``follower=True`` (no tangent: Newton is a quasi-Newton iteration on it);
* ``zero``: the same load written as a load of the motion ``F(t, x, R, v, w)`` with a zero tangent (the same
  Newton iteration as ``none``: a check that the two forms are one);
* ``sym``: the load of the motion with the tangent (FT1): its symmetric part ½ (E + Eᵀ), E = β' K, enters the
  iteration matrix by (M12) (what an implementation in elements/loads.py would do);
* ``full``: the Python Newton loop with the whole Jacobian of the step's residual by the accelerations, by
  central differences, solved by a dense LU (``scipy.linalg.lu_factor``): Newton with the exact, unsymmetric
  tangent, the bound on what any tangent of the load can give (not a solver flexmb can use: Cholesky only).

Models: ``cantilever`` (a clamped steel strip, 8 beam elements, a follower tip force normal to the tip ramped
smoothly over 1 s to bend it about 50°, held to 1.5 s), ``offset`` (the same strip with a rigid arm 0.2 m long
fixed to its tip, the follower force at the arm's end), ``pendulum`` (a rigid double pendulum under gravity with
a follower thrust on its second link: benchmarks/motion_load_models.py's, the O(n) tree factor for ``none``).
Each is run with ``advance`` (halving where Newton fails) at each ``--dt``; reported: Newton iterations and
factorizations per step, sub-steps beyond the steps (halvings), the process time per step (median of
``--repeats`` runs; ``full`` is the Python loop with n residuals per factorization: its time is not a cost),
and the tip rotation at the end. ``--check`` compares (FT1) with the complex step of the load and with central
differences of the step's residual (the follower's Jacobian minus that of a fixed load of the same value: β' Bᵀ K B
with B the node's rows of the velocity transformation).

How to run it
-------------
    python benchmarks/follower_tangent.py --check
    python benchmarks/follower_tangent.py --dt 1e-3 1e-2 --markdown
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import scipy.linalg

import flexmb as fm

SECTION = fm.BeamSection(E=2.1e11, G=8.1e10, A=1e-4, Iy=1e-9, Iz=1e-9, J=2e-9, rho=7800.0)
EI = 2.1e11 * 1e-9
LENGTH, N_EL, RAMP, T_END = 1.0, 8, 1.0, 1.5
P_TIP = 1.9 * EI / LENGTH**2  # a follower tip force normal to the tip: about 50° of tip rotation
P_ARM, ARM = 1.5 * EI / LENGTH**2, 0.2  # the force at the end of the rigid arm
MODELS = ("cantilever", "offset", "pendulum")
VARIANTS = ("none", "zero", "sym", "full")


def ramp(t: float) -> float:
    """0 -> 1 smoothly over RAMP seconds (½ (1 - cos π t / RAMP)), then 1."""
    return 0.5 * (1.0 - math.cos(math.pi * t / RAMP)) if t < RAMP else 1.0


def _add_follower(mb: fm.ModelBuilder, name: str, node: str, fy, variant: str) -> None:
    """A follower force (0, fy(t), 0) in the axes of ``node``: ``follower=True`` (variant ``none``, ``full``) or as
    a load of the motion R (0, fy, 0) with a zero tangent (``zero``) or the tangent (FT1) (``sym``)."""
    if variant in ("none", "full"):
        mb.add_load(name, node, force=lambda t: np.array([0.0, fy(t), 0.0]), follower=True)
        return

    def load(t, x, R, v, w):
        p = fy(t)
        return np.array([R[0, 1] * p, R[1, 1] * p, R[2, 1] * p])

    def tangent(t, x, R, v, w):
        T = np.zeros((3, 12))
        if variant == "sym":  # ∂(R f)/∂θ = -[R f]× (FT1)
            p = fy(t)
            F0, F1, F2 = R[0, 1] * p, R[1, 1] * p, R[2, 1] * p
            T[0, 4], T[0, 5] = F2, -F1
            T[1, 3], T[1, 5] = -F2, F0
            T[2, 3], T[2, 4] = F1, -F0
        return T

    mb.add_load(name, node, load, tangent=tangent)


def cantilever(variant: str, offset: bool = False) -> fm.Model:
    """The clamped strip (x from 0 to LENGTH, bending in the x-y plane) with its follower tip force, or with the
    force at the end of a rigid arm fixed to the tip (``offset``)."""
    mb = fm.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    nodes = mb.add_flexible_link("strip", (0.0, 0.0, 0.0), (LENGTH, 0.0, 0.0), N_EL, SECTION, damping=2e-3)
    mb.add_joint("clamp", "fixed", "ground", nodes[0])
    tip = nodes[-1]
    if offset:
        mb.add_node("arm", position=(LENGTH + ARM, 0.0, 0.0))
        mb.add_body("arm", node="arm", mass=0.02, inertia=np.eye(3) * 1e-6)
        mb.add_joint("weld", "fixed", tip, "arm")
        tip = "arm"
    p = P_ARM if offset else P_TIP
    _add_follower(mb, "push", tip, lambda t: p * (0.5 * (1.0 - math.cos(math.pi * t / RAMP)) if t < RAMP else 1.0),
                  variant)
    return mb.compile()


def _pendulum_links() -> fm.ModelBuilder:
    """The double pendulum's two links and joints under gravity, without its load."""
    mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    for k, name in enumerate(("a", "b")):
        mb.add_node(name, position=(0.5 * k, 0.0, 0.0))
        mb.add_body(name, node=name, mass=1.0, com=(0.25, 0.0, 0.0), inertia=np.diag([1e-3, 0.02, 0.02]))
    mb.add_joint("j1", "revolute", "ground", "a", axis=(0.0, 0.0, 1.0))
    mb.add_joint("j2", "revolute", "a", "b", point=(0.5, 0.0, 0.0), axis=(0.0, 0.0, 1.0), q0=0.4)
    return mb


def pendulum(variant: str) -> fm.Model:
    """A rigid double pendulum (benchmarks/motion_load_models.py's follower_pendulum) under gravity, its second
    link pushed by a follower thrust (0, 2 + cos 2t, 0) in its own axes."""
    mb = _pendulum_links()
    _add_follower(mb, "thrust", "b", lambda t: 2.0 + math.cos(2.0 * t), variant)
    return mb.compile()


def build(name: str, variant: str) -> fm.Model:
    """The model ``name`` (module docstring) with its follower load in the form of ``variant``."""
    if name == "pendulum":
        return pendulum(variant)
    return cantilever(variant, offset=name == "offset")


def _trial_state(integ, b, udot: np.ndarray):
    """The step's iterate at the accelerations ``udot``: the state of (G2)-(G4) with the drives applied (the Python
    loop's _python_iterate)."""
    from flexmb.solvers.tree_step import _update

    st = b.st
    n_u = st.u.size
    a1, hdq, u1 = np.empty(n_u), np.empty(n_u), np.empty(n_u)
    _update(st.udot, udot, b.a, st.u, integ.am, integ.af, integ.gamma, integ.beta, b.h, a1, hdq, u1)
    st1 = integ._trial(st, hdq, u1, udot.copy(), b.t1)
    st1.apply_drives(integ.model, b.t1)
    return st1


def _residual_function(integ, b):
    """udot -> the residual of eq. (1) on the free coordinates at the step's iterate of accelerations udot."""

    def res(udot: np.ndarray) -> np.ndarray:
        st1 = _trial_state(integ, b, udot)
        return integ._evaluate(st1).residual(st1.udot)[integ.free]

    return res


def jacobian(res, udot: np.ndarray, free: np.ndarray) -> np.ndarray:
    """∂r/∂u̇ on the free coordinates by central differences, step 1e-6 max(1, |u̇_j|)."""
    J = np.empty((free.size, free.size))
    for k, j in enumerate(free):
        h = 1e-6 * max(1.0, abs(udot[j]))
        up, um = udot.copy(), udot.copy()
        up[j] += h
        um[j] -= h
        J[:, k] = (res(up) - res(um)) / (2 * h)
    return J


def _integrator(model: fm.Model, variant: str):
    """The integrator of ``variant``: the default paths, or for ``full`` the Python Newton loop whose factor is the
    dense LU of the residual's Jacobian (:func:`jacobian`) at the iterate where flexmb would factorize S."""
    from flexmb.solvers import generalized_alpha as ga
    from flexmb.solvers.element_step import ElementStep
    from flexmb.solvers.tree_step import TreeStep

    if variant != "full":
        return ga.GeneralizedAlpha(model)
    saved = ElementStep.__dict__["applies"], TreeStep.__dict__["applies"]
    ElementStep.applies = staticmethod(lambda model, asm, cholmod: False)
    TreeStep.applies = staticmethod(lambda model, asm: False)
    try:
        integ = ga.GeneralizedAlpha(model, linear_solver="dense")
    finally:
        ElementStep.applies, TreeStep.applies = saved
    begun = {}

    def factorize(ev, gp, bp, st=None):
        if st is None:  # the mass solve of the start (M̄ u̇ = Q): flexmb's own
            return ga.GeneralizedAlpha._factorize(integ, ev, gp, bp, st)
        integ._lu = scipy.linalg.lu_factor(jacobian(_residual_function(integ, begun["b"]), st.udot, integ.free))
        integ.chol.n_factorize += 1
        integ._factor_key = (gp, bp)

    def solve(r):
        if getattr(integ, "_lu", None) is None or integ._factor_key == (0.0, 0.0):
            return ga.GeneralizedAlpha._solve(integ, r)
        return scipy.linalg.lu_solve(integ._lu, r)

    original = ga.newton_step

    def newton_step(it, b):
        begun["b"] = b
        it._lu = None
        return original(it, b)

    integ._factorize, integ._solve = factorize, solve
    ga.newton_step = newton_step  # this process runs one integrator at a time (restored by run())
    integ._restore = (ga, original)
    return integ


def _tip_angle(integ, st) -> float:
    """The rotation [deg] about z of the model's last node (the loaded node: the strip's tip, the arm, link b)."""
    R = integ.asm.evaluate(st).kin.R[-1]
    return math.degrees(math.atan2(R[1, 0], R[0, 0]))


def run(name: str, variant: str, dt: float, repeats: int) -> dict:
    """One model and variant at step ``dt`` over [0, T_END] (``repeats`` times, the time per step their median):
    Newton iterations and factorizations per step, the halvings, the tip rotation at the end."""
    from flexmb.solvers.initial import relaxed_start

    model = build(name, variant)
    n = int(round(T_END / dt))
    ms = []
    for _ in range(repeats if variant != "full" else 1):
        integ = _integrator(model, variant)
        try:
            st, _ = integ.initial_acceleration(relaxed_start(model)[0])
            a = st.udot.copy()
            integ.substeps = 0
            it = fac0 = 0
            fac0 = integ.chol.n_factorize if integ.chol is not None else 0
            t0 = time.process_time()
            for k in range(n):
                st, a, _, info = integ.advance(st, a, dt, (k + 1) * dt)
                it += info.iterations
            ms.append(1e3 * (time.process_time() - t0) / n)
            fac = (integ.chol.n_factorize if integ.chol is not None else 0) - fac0
        except fm.SolverError as exc:
            return dict(model=name, variant=variant, dt=dt, failed=str(exc).splitlines()[0][:120])
        finally:
            if hasattr(integ, "_restore"):
                ga, original = integ._restore
                ga.newton_step = original
    path = integ.step_path().split(" (")[0][:40] if variant != "full" else "Python loop, dense LU of dr/du̇"
    return dict(model=name, variant=variant, dt=dt, it=it / n, fac=fac / n, halvings=integ.substeps - n,
                ms=float(np.median(ms)), angle=_tip_angle(integ, st), path=path)


def check(name: str) -> None:
    """(FT1) against the complex step of the load of the motion (M10) and against the residual: at a state of the
    ramp, the Jacobian of the step's residual with the follower load minus that with a fixed load of the same value
    is β' Bᵀ K B (K of (FT1) on the loaded node), B the node's rows of the velocity transformation."""
    import copy

    from flexmb.solvers.initial import relaxed_start
    from flexmb.solvers.newton_loop import begin_step

    model = build(name, "none")
    integ = _integrator(model, "none")
    st, _ = integ.initial_acceleration(relaxed_start(model)[0])
    a = st.udot.copy()
    dt = 1e-2
    for k in range(int(0.6 / dt)):
        st, a, _, _ = integ.advance(st, a, dt, (k + 1) * dt)
    b = begin_step(integ, st, a, dt, st.t + dt)
    st1 = _trial_state(integ, b, st.udot)  # the step's first iterate: the point of the Jacobians
    kin = integ.asm.evaluate(st1).kin
    data = build(name, "sym").elements["motion_load"]
    node, ld = int(data.node[0]), data.load[0]
    args = (kin.x[node] + model.origin, kin.R[node], kin.V[node, :3], kin.V[node, 3:])
    T_given = ld.tangent(st1.t, *args)
    ld_cs = copy.copy(ld)
    ld_cs.tangent_function = None
    T_cs = ld_cs.tangent(st1.t, *args)
    print(f"{name}: |T(FT1) - T(complex step)| = {np.abs(T_given - T_cs).max():.2e} (|T| = {np.abs(T_cs).max():.3g})")
    # the residual: the follower (variant none) against a fixed load of the follower's value at the iterate
    fixed = _fixed_model(name, ld.value(st1.t, *args))
    jac = {}
    for label, mdl in (("follower", model), ("fixed", fixed)):
        it2 = _integrator(mdl, "none")
        jac[label] = jacobian(_residual_function(it2, begin_step(it2, st, a, dt, st.t + dt)), st.udot, it2.free)
    B = kin.B().toarray()[6 * node:6 * node + 6][:, integ.free]
    K = np.zeros((6, 6))
    K[:3, 3:] = -T_given[:3, 3:6]
    predicted = b.bp * B.T @ K @ B
    diff = jac["follower"] - jac["fixed"]
    print(f"{name}: |J_follower - J_fixed - β' Bᵀ K B| = {np.abs(diff - predicted).max():.2e} "
          f"(|β' Bᵀ K B| = {np.abs(predicted).max():.3g}, its symmetric part {np.abs(predicted + predicted.T).max() / 2:.3g};"
          f" |J| = {np.abs(jac['follower']).max():.3g})")


def _fixed_model(name: str, F: np.ndarray) -> fm.Model:
    """The model ``name`` with its follower load replaced by a fixed (global) force F."""
    if name == "pendulum":
        mb = _pendulum_links()
        mb.add_load("thrust", "b", force=tuple(F[:3]))
        return mb.compile()
    mb = fm.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    nodes = mb.add_flexible_link("strip", (0.0, 0.0, 0.0), (LENGTH, 0.0, 0.0), N_EL, SECTION, damping=2e-3)
    mb.add_joint("clamp", "fixed", "ground", nodes[0])
    tip = nodes[-1]
    if name == "offset":
        mb.add_node("arm", position=(LENGTH + ARM, 0.0, 0.0))
        mb.add_body("arm", node="arm", mass=0.02, inertia=np.eye(3) * 1e-6)
        mb.add_joint("weld", "fixed", tip, "arm")
        tip = "arm"
    mb.add_load("push", tip, force=tuple(F[:3]))
    return mb.compile()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", nargs="*", default=list(MODELS))
    p.add_argument("--variants", nargs="*", default=list(VARIANTS))
    p.add_argument("--dt", nargs="*", type=float, default=[1e-3, 1e-2])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--check", action="store_true", help="check (FT1) against the complex step and the residual")
    p.add_argument("--markdown", action="store_true")
    args = p.parse_args()
    if args.check:
        for name in args.models:
            check(name)
        return
    head = "| model | dt | variant | Newton it./step | factorizations/step | halvings | ms/step | tip angle [deg] | path |"
    print(head if args.markdown else head.replace("|", " "))
    if args.markdown:
        print("|---" * 9 + "|")
    for name in args.models:
        for dt in args.dt:
            for variant in args.variants:
                r = run(name, variant, dt, args.repeats)
                if "failed" in r:
                    line = f"| {name} | {dt:g} | {variant} | failed: {r['failed']} | | | | | |"
                else:
                    line = (f"| {name} | {dt:g} | {variant} | {r['it']:.3f} | {r['fac']:.3f} | {r['halvings']} | "
                            f"{r['ms']:.3f} | {r['angle']:.2f} | {r['path']} |")
                print(line if args.markdown else line.replace("|", " "), flush=True)


if __name__ == "__main__":
    main()
