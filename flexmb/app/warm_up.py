"""Compile flexmb's numba kernels once, so that a first run does not (``python -m flexmb.app.warm_up``;
scripts/setup.sh runs it).

The kernels are compiled on first use and cached on disk next to their modules (numba's
``cache=True``); on a fresh install that first use costs one to two minutes on 2 cores (the compiled
Newton loop of rigid trees, flexmb/solvers/tree_step.py, alone 20-30 s, and again inside the
compiled run of many steps, flexmb/solvers/tree_run.py). This module runs a few steps of small
models that pass through every compiled path: a rigid tree with a ball joint, a spring and a drive
(the compiled step and run), the same tree on CHOLMOD (the Python step), a flexible
link (beam kernels, the compiled Newton loop of small beam models on the dense factor and of long
links on the band factor, flexmb/engine/band_cholesky.py, and, on CHOLMOD, the compiled Newton
iterates of larger ones, flexmb/solvers/element_step.py) and a
four-bar closed by a bushing (elastic cut) watched by a singularity monitor (the rigid loop-closure
Jacobian of flexmb.analysis.monitors, as the seed cases' monitors and postprocesses use it), with
error-controlled steps once; the four-bar closed by a rigid cut with spring-dampers, one of them a
force law (compiled with numba, flexmb/solvers/law_step.py), and again with a law numba does not
compile (the Newton loop in Python); the bushing's four-bar pushed by a prescribed-length actuator (its
kernels in the compiled Newton loop and iterates, flexmb/solvers/actuator_step.py, and in the Python
loop); and the rotation kernels that only users call (flexmb.rotations).

Every kernel compiled with ``cache=True`` is compiled here (:func:`kernels` lists them), and a seed
case of cases/ compiles nothing more (tests/test_warm_up.py). That matters beyond the minute it saves:
a companion worker (flexmb.app.companions) that compiles would also have to agree with its parent on
numba's thread count.
"""

from __future__ import annotations

import importlib
import pkgutil
import time

import numpy as np
from numba.core.dispatcher import Dispatcher

import flexmb as fm
import flexmb.elements
from flexmb import rotations

__all__ = ["kernels", "warm_up", "main"]


def kernels() -> dict[str, Dispatcher]:
    """Every numba kernel of flexmb (its elements included) by its dotted name, importing every module."""
    out = {}
    for pkg in (fm, flexmb.elements):
        for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
            mod = importlib.import_module(info.name)
            for name, obj in vars(mod).items():
                if isinstance(obj, Dispatcher) and obj.py_func.__module__ == mod.__name__:
                    out[f"{mod.__name__}.{name}"] = obj
    return out


_POINTS = [(0.0, 0.0, 0.0), (0.0, 1.0, 0.0), (1.0, 1.0, 0.0), (1.0, 0.0, 0.0)]


class _Gain:
    """A number a force law reads from a Python object: numba does not compile that law."""

    k = 10.0


_GAIN = _Gain()


def _loop(cut: str, force_law: bool = False, compiled: bool = True, extra: str = ""):
    """A four-bar of three links on revolute joints, its loop closed at a fixed node by a bushing or a
    rigid cut (``cut`` "bushing" or "rigid"); ``force_law``: with a linear spring-damper and one with a
    force law on its coupler (compiled with numba into the compiled step: flexmb/solvers/law_step.py;
    ``compiled`` False: a law numba does not compile, the Newton loop in Python, with the kernels'
    signatures of that path, as models of families not compiled take it); ``extra``: "friction" (bearing
    friction on the crank: the compiled step's kernels) or "actuator" (a prescribed-length actuator beside
    the crank: flexmb/solvers/actuator_step.py in the compiled step)."""
    pts = _POINTS
    mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    for i in range(3):
        mb.add_node(f"l{i}", position=pts[i])
        mb.add_body(f"b{i}", node=f"l{i}", mass=1.0, com=tuple(0.5 * (np.array(pts[i + 1]) - pts[i])),
                    inertia=np.diag([0.1, 0.1, 0.1]))
        mb.add_joint(f"j{i}", "revolute", parent="ground" if i == 0 else f"l{i - 1}", child=f"l{i}", point=pts[i],
                     axis=(0, 0, 1))
    mb.add_node("g", position=pts[3])
    mb.add_joint("jg", "fixed", parent="ground", child="g")
    if cut == "bushing":
        mb.add_bushing("cut", "l2", "g", stiffness=[1e7] * 6, point=pts[3], free_rotation="z")
    else:
        mb.add_rigid_cut("cut", "l2", "g", point=pts[3], free_rotation="z")
    if force_law:
        mb.add_spring_damper("sd", "ground", "l1", stiffness=10.0, damping=0.1, point_a=(0.5, 2.0, 0.0), point_b=pts[1])
        mb.add_spring_damper("law", "ground", "l1", point_a=(0.5, 2.0, 0.0), point_b=pts[1],
                             force_law=(lambda length, rate, t: 10.0 * (length - 1.0) + 0.1 * rate) if compiled
                             else (lambda length, rate, t: _GAIN.k * (length - 1.0) + 0.1 * rate))
    if extra == "friction":
        mb.add_joint_friction("j0", mu=0.1, pin_radius=0.01)
    elif extra == "actuator":
        d0 = float(np.linalg.norm(np.array(pts[1]) - (0.5, 2.0, 0.0)))
        mb.add_actuator("cyl", "ground", "l1", point_a=(0.5, 2.0, 0.0), point_b=pts[1],
                        length=lambda t: d0 + 0.01 * np.sin(t))
    return mb.compile()


def _models() -> list:
    models = []
    mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    for i, (joint, kw) in enumerate((("revolute", {"axis": (0, 0, 1)}), ("spherical", {}), ("prismatic", {"axis": (1, 0, 0)}))):
        mb.add_node(f"n{i}", position=(float(i), 0.0, 0.0))
        mb.add_body(f"b{i}", node=f"n{i}", mass=1.0, com=(0.5, 0.0, 0.0), inertia=np.diag([0.01, 0.1, 0.1]))
        mb.add_joint(f"j{i}", joint, parent="ground" if i == 0 else f"n{i - 1}", child=f"n{i}", point=(float(i), 0, 0), **kw)
    mb.add_drive("j0", lambda t: 0.1 * t)
    mb.add_joint_spring("j2", stiffness=10.0, damping=0.1)
    models.append(mb.compile())
    sec = fm.BeamSection(0.7e11, 0.7e11 / 2.6, 4e-4, 2e-7, 2e-7, 4e-7, 3000.0)
    mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    nodes = mb.add_flexible_link("link", (0.0, 0.0, 0.0), (2.0, 0.0, 0.0), 2, sec)
    mb.add_joint("pin", "revolute", "ground", nodes[0], axis=(0.0, 0.0, 1.0))
    models.append(mb.compile())
    models.append(_loop("bushing"))
    # the same loop closed by a rigid cut (the compiled steps' augmented Lagrangian), and closed through a beam
    # coupler by a rigid cut (the projections in their own metric)
    models.append(_loop("rigid"))
    pts = _POINTS
    mb = fm.ModelBuilder()  # no gravity: the stiff coupler starts relaxed (a sag would be a transient dt misses)
    mb.add_node("crank", position=pts[0])
    mb.add_body("crank", node="crank", mass=1.0, com=(0.0, 0.5, 0.0), inertia=np.diag([0.1, 0.1, 0.1]))
    mb.add_joint("O", "revolute", parent="ground", child="crank", point=pts[0], axis=(0, 0, 1))
    nodes = mb.add_flexible_link("coupler", pts[1], pts[2], 2, sec)
    mb.add_joint("A", "revolute", parent="crank", child=nodes[0], point=pts[1], axis=(0, 0, 1))
    mb.add_node("rocker", position=pts[3])
    mb.add_body("rocker", node="rocker", mass=1.0, com=(0.0, 0.5, 0.0), inertia=np.diag([0.1, 0.1, 0.1]))
    mb.add_joint("D", "revolute", parent="ground", child="rocker", point=pts[3], axis=(0, 0, 1))
    mb.add_rigid_cut("B", nodes[-1], "rocker", point=pts[2], free_rotation="z")
    mb.add_drive("O", lambda t: t**3)  # from rest: the free nodes of the coupler start at rest too
    models.append(mb.compile())
    return models


def warm_up() -> float:
    """Run a few steps of each model (module docstring); the seconds it took."""
    from flexmb.analysis.monitors import SingularityMonitor  # the analysis end: only warm_up runs it

    t0 = time.perf_counter()
    models = _models()
    for model in models[:2]:
        fm.simulate(model, 5e-3, 1e-3)
    fm.simulate(models[2], 5e-3, 1e-3, callback=SingularityMonitor(models[2]))  # the closure's kernel
    fm.simulate(models[0], 5e-3, 1e-3, linear_solver="cholmod")
    fm.simulate(models[1], 5e-3, 1e-3, linear_solver="cholmod")  # large beam models: CHOLMOD, not the dense factor
    fm.simulate(models[1], 5e-3, 1e-3, linear_solver="band")  # long links: the band factor
    fm.simulate(models[0], 5e-3, "auto")
    for solver in ("auto", "band", "cholmod"):  # loops: the compiled Newton loops (dense, band) and iterates (CHOLMOD)
        fm.simulate(models[2], 5e-3, 1e-3, linear_solver=solver)
        fm.simulate(models[3], 5e-3, 1e-3, linear_solver=solver)
        fm.simulate(models[4], 5e-3, 1e-3, linear_solver=solver)
    fm.simulate(models[3], 2e-2, "auto", output_dt=5e-3)  # dense output of rigid cuts: rows closed between steps
    fm.simulate(_loop("rigid", force_law=True), 5e-3, 1e-3)  # spring-damper force laws (law_step.py)
    fm.simulate(_loop("rigid", force_law=True, compiled=False), 5e-3, 1e-3)  # the Newton loop in Python
    for solver in ("auto", "cholmod"):  # bearing friction in the compiled Newton loop and iterates
        fm.simulate(_loop("bushing", extra="friction"), 5e-3, 1e-3, linear_solver=solver)
    for solver in ("auto", "cholmod"):  # prescribed lengths in the compiled Newton loop and iterates (actuator_step.py)
        fm.simulate(_loop("bushing", extra="actuator"), 5e-3, 1e-3, linear_solver=solver)
    fm.simulate(_loop("bushing", force_law=True, compiled=False, extra="actuator"), 5e-3, 1e-3)  # and in the Python loop
    v, out3, out33 = np.array([0.1, 0.2, 0.3]), np.empty(3), np.empty((3, 3))
    rotations.cross_into(v, v[::-1].copy(), out3)
    rotations.skew_into(v, out33)
    rotations.expm_into(v, out33)
    from flexmb.results.raster import rasterize  # the animation's shapes (flexmb animate)

    rasterize(np.array([[0.0, 0.0], [3.0, 0.0], [0.0, 3.0]]), np.zeros(3), np.array([[0, 1, 2]]), np.array([0.5]),
              np.zeros((4, 4, 4), dtype=np.uint8))
    return time.perf_counter() - t0


def main() -> None:
    """``python -m flexmb.app.warm_up``: compile every kernel (:func:`warm_up`) and say how long it took."""
    print("flexmb: compiling the numba kernels once (cached for later runs) ...", flush=True)
    print(f"flexmb: kernels compiled in {warm_up():.1f} s")


if __name__ == "__main__":
    main()
