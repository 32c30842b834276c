"""Rotational spring-dampers between two arbitrary nodes: the ``"rotational_spring_damper"`` element
family. Its equations, (R1)-(R14), are derived in docs/rotational_spring_damper.md; the arithmetic is in
elements/rotational_spring_damper_kernels.py, which the compiled Newton steps
(flexmb/solvers/element_families.py) call too.

Two kinds of element (``mode``):

* AXIS, a torsion spring-damper about a unit axis e carried by node a: its angle φ is the angle, about e,
  of a reference vector carried by node b against the same vector carried by node a (R1)-(R3), measured
  from the assembly configuration and taken within half a turn of the last accepted step's angle (the
  element state, (R3a): the turns are counted); its rate φ' = g·(ω_b -
  ω_a) (R4)-(R5); the torque T = k (φ - φ0) + c φ' + T0 (R6), or a torque law T = f(φ, φ', t) (R15), acts
  as the moments -g T on node a and g T on node b (R7).
* FREE, an isotropic rotational spring-damper on the relative rotation vector ψ = log(R_b C R_aᵀ) (R8):
  moments ∓(k ψ + c (ω_b - ω_a)) on the two nodes (R10).

Strain energy and dissipated power (R11) are in the energy balance (a torque law's power T φ' counted as
dissipated, as a spring-damper's force law). The blocks of the iteration matrix are (R13) in time steps
(symmetric positive semi-definite), the symmetric part of the complete tangent (R14) for the exact tangent.

As an element family (flexmb.elements): two nodes per element (node a may be ground), a loop edge, blocks
over its two nodes, no mass, internal state: the reference angle of (R3) (column REF, updated by end_step,
(R3a)). Output ``angle_rate_torque`` recorded with the
spring-dampers (Result.spring_dampers after their rows, named by Result.spring_damper_names); drawn as a
line between the two node origins (PointPairDrawing) of cell kind ``rotational_spring_damper``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from flexmb.elements import rotational_spring_damper_kernels as kernels
from flexmb.elements.family import (
    GROUND,
    ElementData,
    FamilyEvaluation,
    NodeTable,
    TwoNodeFamily,
    frozen_arrays,
    listing,
    ordered_sum,
)
from flexmb.elements.spring_damper import PointPairDrawing, finite_law_value, law_derivatives, law_failure, spring_damper_output
from flexmb.errors import ModelError, SolverError

if TYPE_CHECKING:  # type hints only
    from flexmb.engine.kinematics import Kinematics
    from flexmb.model import Model
    from flexmb.state import State

__all__ = ["RotationalSpringDamperSpec", "RotationalSpringDamperData", "RotationalSpringDamperEvaluation",
           "RotationalSpringDampers", "FAMILY", "kernel_arrays", "law_value", "rotational_failure",
           "law_tangent", "degenerate", "perpendicular"]


@dataclass(frozen=True, eq=False)
class RotationalSpringDamperSpec:
    """A rotational spring-damper's record (ModelBuilder.add_rotational_spring_damper): between ``node_a``
    (or ``"ground"``) and ``node_b``; ``axis`` (3,) global at assembly (None: the isotropic element, (R8));
    torque stiffness [N m/rad], damping [N m s/rad], rest angle [rad] from the assembly configuration, preload
    [N m], or ``torque_law(φ, φ', t)`` [N m] with ``torque_law_tangent`` (None: complex steps)."""

    name: str
    node_a: str
    node_b: str
    axis: np.ndarray | None
    stiffness: float
    damping: float
    rest: float = 0.0
    preload: float = 0.0
    torque_law: Any = None
    torque_law_tangent: Any = None


@dataclass(frozen=True, eq=False)
class RotationalSpringDamperData(ElementData):
    """Compiled rotational spring-dampers (``Model.elements["rotational_spring_damper"]``), eq. (R1)-(R10)."""

    a: np.ndarray  # node index of end a, -1 = ground                                            (n_el)
    b: np.ndarray  # node index of end b                                                         (n_el)
    mode: np.ndarray  # kernels.AXIS or kernels.FREE                                             (n_el)
    ea: np.ndarray  # AXIS: the axis e in node a's axes (ground: global) (R1)                   (n_el x 3)
    ua: np.ndarray  # AXIS: the reference vector u ⊥ e in node a's axes (R1)                    (n_el x 3)
    ub: np.ndarray  # AXIS: the same vector in node b's axes (R2)                               (n_el x 3)
    C: np.ndarray  # FREE: R_b0ᵀ R_a0, the relative orientation at assembly (R8)                (n_el x 3 x 3)
    k: np.ndarray  # stiffness [N m/rad]                                                         (n_el)
    c: np.ndarray  # damping [N m s/rad]                                                         (n_el)
    rest: np.ndarray  # AXIS: rest angle φ0 [rad] from the assembly configuration               (n_el)
    T0: np.ndarray  # AXIS: preload, a constant torque [N m]                                     (n_el)
    sa: np.ndarray  # drawing: node a's origin in its axes (0), on ground node b's at assembly [m] (n_el x 3)
    sb: np.ndarray  # drawing: node b's origin (0) [m]                                           (n_el x 3)
    law: tuple = ()  # per element its torque law T(φ, φ', t) [N m] or None (R15)                 (n_el)
    law_tangent: tuple = ()  # per element (∂T/∂φ, ∂T/∂φ')(φ, φ', t) or None: complex steps       (n_el)
    laws: np.ndarray | None = None  # the indices of the elements with a torque law               (n_law)

    def initial_state(self) -> np.ndarray:
        """(n_el, 1): the reference angle REF of (R3) at assembly, the rest angle (the branch nearest it)."""
        return np.array(self.rest, dtype=float).reshape(-1, 1)


@dataclass
class RotationalSpringDamperEvaluation(FamilyEvaluation):
    """The rotational spring-dampers at one state: ``g`` (n_el, 3) (R5) or ψ (R8), ``angle``, ``rate``,
    ``torque`` (n_el,) (R4), (R6), (R10), the tangents ``k`` = ∂T/∂φ, ``c`` = ∂T/∂φ' of the blocks (a
    torque law's at this state), the node orientations ``R`` and twists ``V`` it was taken at."""

    g: np.ndarray | None = None
    angle: np.ndarray | None = None
    rate: np.ndarray | None = None
    torque: np.ndarray | None = None
    k: np.ndarray | None = None
    c: np.ndarray | None = None
    R: np.ndarray | None = None
    V: np.ndarray | None = None


def perpendicular(e: np.ndarray) -> np.ndarray:
    """A unit vector perpendicular to the unit vector ``e`` (R1): e × the coordinate axis least along e."""
    t = np.zeros(3)
    t[int(np.argmin(np.abs(e)))] = 1.0
    u = np.cross(e, t)
    return u / np.linalg.norm(u)


def kernel_arrays(data: RotationalSpringDamperData, prep: tuple[np.ndarray, np.ndarray],
                  ref: np.ndarray | None = None) -> tuple:
    """The kernels' ``rot`` (rotational_forces): (ia, ib, mode, ea, ua, ub, C, k, c, rest, T0, ref), ends from
    ``prep``, ``ref`` the reference angles of (R3) (the element state's column REF; None: the rest angles, the
    state at assembly)."""
    ref = np.array(data.rest, dtype=float) if ref is None else np.ascontiguousarray(ref, dtype=float)
    return (prep[0], prep[1], np.asarray(data.mode, dtype=np.int64), data.ea, data.ua, data.ub, data.C, data.k, data.c,
            data.rest, data.T0, ref)


REF = 0
"""The column of the element state (State.elements["rotational_spring_damper"], (n_el, 1)): the angle φ of the last
accepted step, the reference of (R3) that carries the turns from step to step (rest at assembly; AXIS only)."""


def law_value(data: RotationalSpringDamperData, e: int, phi: float, rate: float, t: float) -> float:
    """Element ``e``'s torque law at (φ, φ', t) (R15) as a float; SolverError naming it if not finite."""
    return finite_law_value(data.law[e](phi, rate, t), t, f"rotational spring-damper '{data.names[e]}': its torque law at "
                            f"angle {phi:.6g} rad, rate {rate:.6g} rad/s",
                            "torque [N m] (docs/rotational_spring_damper.md (R15))")


def law_tangent(data: RotationalSpringDamperData, e: int, phi: float, rate: float, t: float) -> tuple[float, float]:
    """(∂T/∂φ, ∂T/∂φ') of element ``e``'s torque law (R15): the given tangent, or complex steps (law_derivatives of
    elements/spring_damper.py)."""
    return law_derivatives(data.law[e], data.law_tangent[e], phi, rate, t)


def degenerate(data: RotationalSpringDamperData, e: int, t: float) -> SolverError:
    """The SolverError of AXIS element ``e`` whose reference vector has turned onto its axis (R12)."""
    return SolverError(
        f"t = {t:.6g}: rotational spring-damper '{data.names[e]}': node b's reference vector has turned onto the axis "
        f"carried by node a (its projection on the plane normal to the axis is below {kernels.RHO_MIN:g}), so the angle "
        "about the axis is undefined (docs/rotational_spring_damper.md (R12))", t,
        hint="join nodes whose relative rotation stays near the axis (a revolute joint between them, or stiff bushings)")


def rotational_failure(data: RotationalSpringDamperData, out: tuple, t: float) -> SolverError:
    """The SolverError of a failed compiled iterate (flexmb/solvers/element_families.py, ``out[6]`` = (element, 1.0
    for a torque law not finite)): named as the Python evaluation names it."""
    return law_failure(out[6], lambda e: degenerate(data, e, t),
                       lambda e: law_value(data, e, float(out[1][e]), float(out[2][e]), t),
                       lambda e: f"rotational spring-damper '{data.names[e]}': its torque law compiled with numba is "
                       f"not finite at angle {out[1][e]:.6g} rad (docs/rotational_spring_damper.md (R15))", t)


class RotationalSpringDampers(PointPairDrawing, TwoNodeFamily):
    """The ``"rotational_spring_damper"`` family (module docstring)."""

    name = "rotational_spring_damper"
    label = "rotational spring-damper"
    plural = "rotational spring-dampers"
    has_blocks = True
    has_state = True  # the reference angle of (R3), the last accepted step's: the turns are counted (end_step)
    outputs = (spring_damper_output("angle_rate_torque", ("rotational_spring_damper_angle", "rotational_spring_damper_rate",
                                                          "rotational_spring_damper_torque"),
                                    "about an axis: angle φ [rad], its rate φ' [rad/s] and torque T [N m] (R3), (R4), (R6); "
                                    "isotropic: |ψ| [rad], its rate, |T| [N m] (R10) (docs/rotational_spring_damper.md)"),)
    drawing_prefix = "rotational_spring_damper"  # cell_kind and drawing keys: PointPairDrawing

    def compile(self, records: Sequence[RotationalSpringDamperSpec], nodes: NodeTable) -> RotationalSpringDamperData:
        """End nodes, the axis and reference vector in their node axes (R1), (R2), C (R8), the constants of (R6)."""
        n = len(records)
        z3 = np.zeros((n, 3))
        out = dict(names=tuple(r.name for r in records), a=np.zeros(n, np.int64), b=np.zeros(n, np.int64),
                   mode=np.zeros(n, np.int64), ea=z3.copy(), ua=z3.copy(), ub=z3.copy(), C=np.zeros((n, 3, 3)),
                   k=np.zeros(n), c=np.zeros(n), rest=np.zeros(n), T0=np.zeros(n), sa=z3.copy(), sb=z3.copy())
        for i, r in enumerate(records):
            who = f"rotational spring-damper '{r.name}'"
            a, b = nodes.index(r.node_a, who, ground=True), nodes.index(r.node_b, who)
            if a == b:
                raise ModelError(f"{who}: node_a and node_b are both {r.node_b!r}; join two different nodes.")
            (_, Ra), (Xb, Rb) = nodes.frame(a), nodes.frame(b)
            out["a"][i], out["b"][i] = a, b
            if a == GROUND:
                out["sa"][i] = Xb - nodes.origin
            if r.axis is None:
                out["mode"][i] = kernels.FREE
            else:
                e = np.asarray(r.axis, dtype=float)
                u_b = perpendicular(Rb.T @ e)  # chosen in node b's axes: the same for the model turned as a whole
                out["ea"][i], out["ub"][i], out["ua"][i] = Ra.T @ e, u_b, Ra.T @ (Rb @ u_b)
            out["C"][i] = Rb.T @ Ra
            out["k"][i], out["c"][i], out["rest"][i], out["T0"][i] = r.stiffness, r.damping, r.rest, r.preload
        laws = [r.torque_law for r in records]
        out["law"], out["law_tangent"] = tuple(laws), tuple(r.torque_law_tangent for r in records)
        out["laws"] = np.array([e for e, f in enumerate(laws) if f is not None], dtype=np.int64)
        return RotationalSpringDamperData(**frozen_arrays(out))

    def dissipates(self, data: RotationalSpringDamperData) -> bool:
        """False where every damping is zero and no element has a torque law (its power counts as dissipated)."""
        return bool(np.any(data.c != 0.0) or (data.laws is not None and data.laws.size))

    def evaluate(self, model: Model, data: RotationalSpringDamperData, prep: tuple[np.ndarray, np.ndarray], state: State,
                 kin: Kinematics, load_factor: float, Mb: np.ndarray, w: np.ndarray) -> RotationalSpringDamperEvaluation:
        """(R1)-(R11) of every element into the node wrenches w (rotational_forces, the compiled step's kernel),
        then the torque laws (R15) in Python; SolverError naming an AXIS element at its singularity (R12)."""
        ia, ib = prep
        n = data.n
        g, angle, rate, torque, energy, power = np.empty((n, 3)), *(np.empty(n) for _ in range(5))
        bad = kernels.rotational_forces(kin.R, kin.V, kernel_arrays(data, prep, self.reference(data, state)), w,
                                        (g, angle, rate, torque, energy, power))
        if bad >= 0:
            raise degenerate(data, bad, state.t)
        k, c = data.k, data.c
        if data.laws is not None and data.laws.size:  # (R15): the torque laws, in Python
            k, c = k.copy(), c.copy()
            for e in data.laws:
                f = law_value(data, e, float(angle[e]), float(rate[e]), state.t)
                k[e], c[e] = law_tangent(data, e, float(angle[e]), float(rate[e]), state.t)
                torque[e], power[e] = f, f * rate[e]
                w[ia[e], 3:] -= g[e] * f  # (R7); row N (ground) is discarded
                w[ib[e], 3:] += g[e] * f
        return self.evaluation(kin.R, kin.V, g, angle, rate, torque, energy, power, k, c)

    @staticmethod
    def reference(data: RotationalSpringDamperData, state: State) -> np.ndarray:
        """The reference angles of (R3) in ``state`` (n_el,): its element state's REF column, or the rest angles."""
        st = state.elements.get(FAMILY.name) if state.elements else None
        return np.array(data.rest, dtype=float) if st is None else np.ascontiguousarray(np.asarray(st)[:, REF], dtype=float)

    def end_step(self, model: Model, data: RotationalSpringDamperData, prep: Any, fe: RotationalSpringDamperEvaluation,
                 state: State, ctx: Any) -> None:
        """(R3a): the accepted angle of every AXIS element becomes its reference for the next step (the turns carried)."""
        st = self.reference(data, state)
        st = np.where(np.asarray(data.mode) == kernels.AXIS, fe.angle, st).reshape(-1, 1)
        state.elements = {**state.elements, self.name: st}

    @staticmethod
    def evaluation(R: np.ndarray, V: np.ndarray, g: np.ndarray, angle: np.ndarray, rate: np.ndarray, torque: np.ndarray,
                   energy: np.ndarray, power: np.ndarray, k: np.ndarray, c: np.ndarray) -> RotationalSpringDamperEvaluation:
        """The evaluation of rotational_forces' outputs (the Python and the compiled iterates alike)."""
        return RotationalSpringDamperEvaluation(strain_energy=float(energy.sum()), dissipation=float(ordered_sum(power)),
                                                g=g, angle=angle, rate=rate, torque=torque, k=k, c=c, R=R, V=V)

    def blocks(self, model: Model, data: RotationalSpringDamperData, prep: tuple[np.ndarray, np.ndarray],
               fe: RotationalSpringDamperEvaluation, kin: Kinematics, ck: float, cc: float, cm: float,
               material_only: bool, exact_tangent: bool) -> np.ndarray:
        """(R13) in time steps and with ``material_only``, (R14) with ``exact_tangent`` (no mass)."""
        mode = kernels.MATERIAL if material_only else (kernels.EXACT if exact_tangent else kernels.TIME_STEP)
        return self.full_blocks(data, prep, fe, ck, cc, mode)

    @staticmethod
    def full_blocks(data: RotationalSpringDamperData, prep: tuple[np.ndarray, np.ndarray],
                    fe: RotationalSpringDamperEvaluation, ck: float, cc: float, mode: int) -> np.ndarray:
        """The blocks (n_el, 12, 12) of rotational_blocks in ``mode`` (kernels.FULL: the complete tangent)."""
        out = np.empty((data.n, 12, 12))
        kernels.rotational_blocks(fe.R, fe.V, kernel_arrays(data, prep), (fe.k, fe.c), fe.g, fe.torque, float(ck), float(cc),
                                  mode, out)
        return out

    def output(self, model: Model, data: RotationalSpringDamperData, fe: RotationalSpringDamperEvaluation | None,
               name: str) -> np.ndarray:
        """``angle_rate_torque``: (n_el, 3) of φ, φ', T (R3)-(R6), or |ψ|, its rate, |T| (R10)."""
        if name != "angle_rate_torque":
            return super().output(model, data, fe, name)
        return np.zeros((0, 3)) if fe is None else np.stack([fe.angle, fe.rate, fe.torque], axis=1)

    # ------------------------------------------------------------------ presentation
    def describe(self, model: Model, data: RotationalSpringDamperData, limit: int) -> list[str]:
        rows = []
        for e, name in enumerate(data.names):
            a, b = int(data.a[e]), int(data.b[e])
            end_a = "ground" if a < 0 else model.node_names[a]
            if data.mode[e] == kernels.FREE:
                what = f"isotropic on the relative rotation vector, k = {data.k[e]:g} N m/rad, c = {data.c[e]:g} N m s/rad"
            else:
                Ra = np.eye(3) if a < 0 else model.R0[a]
                axis = ", ".join(f"{v:.4g}" for v in Ra @ data.ea[e])
                law = ("torque law T(φ, φ', t)" if data.law and data.law[e] is not None else
                       f"k = {data.k[e]:g} N m/rad, c = {data.c[e]:g} N m s/rad, rest {data.rest[e]:g} rad, preload "
                       f"{data.T0[e]:g} N m")
                what = f"about the axis ({axis}) carried by {end_a}: {law}"
            rows.append(f"  {name}: {end_a} - {model.node_names[b]}: {what}")
        return ["rotational spring-dampers (docs/rotational_spring_damper.md):"] + listing(rows, limit)


#: the registered instance (flexmb.elements.FAMILIES["rotational_spring_damper"])
FAMILY = RotationalSpringDampers()
