"""Point-to-point spring-damper-actuator (the TSDA of the multibody literature): the
``"spring_damper"`` element family. Its equations, (S1)-(S13), are derived in
docs/spring_damper.md; the arithmetic is in elements/spring_damper_kernels.py, which the compiled
Newton steps (flexmb/solvers/element_step.py) call too.

An element joins a point p_a carried by node a (or fixed on ground) and a point p_b carried by node b
(S1); its length l = |p_b - p_a|, direction n and rate l' = G (V_a, V_b) follow from (S2)-(S3), its
tension F = k (l - L0) + c l' + F0 from (S4), and its node wrenches Gᵀ F (S5) enter the residual.
Strain energy ½ k (l - L0)² + F0 (l - L0) and dissipated power c l'² (S6) are in the energy balance.
The blocks of the iteration matrix (S8)-(S10) are k GᵀG, γ'-scaled c GᵀG and, in tension, the string
term (F / l) HᵀPH, all symmetric positive semi-definite; the compressive string term, the lever
term of the turning points and the damper's position derivative are left out of the time step's
tangent for the reasons of docs/spring_damper.md §3 (the exact tangent of statics keeps the first
two, the lever term symmetrized). An element given a force law F = f(l, l', t) (S12) takes its tension
from it and its k, c of the blocks from the law's partial derivatives at the iterate (S13, given or by
complex step); its power F l' is counted as dissipated; this is the Python reference of the laws, which
the compiled steps evaluate with the same arithmetic through numba (flexmb/solvers/law_step.py).

As an element family (flexmb.elements): two nodes per element (node a may be ground), a loop edge (a
spring-damper between two parts of the tree closes a loop; it is not a cut: the rigid-equivalent
model of flexmb.analysis.rigid keeps it as a force), blocks over its two nodes, no mass, no internal
state. Output ``length_rate_force`` (recorded into Result.spring_dampers, rows named by
Result.spring_damper_names); drawn as one line cell p_a -> p_b of cell kind ``spring_damper``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from flexmb.elements import spring_damper_kernels as kernels
from flexmb.elements.family import (
    GROUND,
    ElementData,
    FamilyEvaluation,
    NodeTable,
    Output,
    TwoNodeFamily,
    frozen_arrays,
    listing,
    ordered_sum,
)
from flexmb.errors import SolverError
from flexmb.timefunctions import derivative

if TYPE_CHECKING:  # type hints only
    from flexmb.builder.records import SpringDamperSpec
    from flexmb.engine.kinematics import Kinematics
    from flexmb.model import Model
    from flexmb.state import State

__all__ = ["PointPairData", "PointPairEvaluation", "point_pair_arrays", "length_rate_force", "spring_damper_output",
           "law_failure", "finite_law_value", "law_derivatives",
           "SpringDamperData", "SpringDamperEvaluation", "SpringDampers", "FAMILY", "L_MIN", "too_short"]

#: (S11): an element shorter than this fraction of its length at assembly has no direction: the iterate fails
L_MIN = 1e-8


@dataclass(frozen=True, eq=False)
class PointPairData(ElementData):
    """The arrays of elements that join a point of a node (or ground) to a point of another node
    (spring-dampers, actuators; :class:`PointPairDrawing`), eq. (S1)."""

    a: np.ndarray  # node index of end a, -1 = ground                                        (n_el)
    b: np.ndarray  # node index of end b                                                     (n_el)
    sa: np.ndarray  # point a rel. to node a, node a axes (ground: the point, model frame) [m] (n_el x 3)
    sb: np.ndarray  # point b rel. to node b, node b axes [m]                                (n_el x 3)

    def points(self, model: Model, e: int) -> tuple[np.ndarray, np.ndarray]:
        """Element ``e``'s points a, b at assembly, global (for ``flexmb info``)."""
        a, b = int(self.a[e]), int(self.b[e])
        pa = self.sa[e] + model.origin if a < 0 else model.X0[a] + model.R0[a] @ self.sa[e] + model.origin
        return pa, model.X0[b] + model.R0[b] @ self.sb[e] + model.origin


def spring_damper_output(name: str, columns: tuple[str, ...], doc: str) -> Output:
    """An output ``name`` (its ``columns``; ``doc`` says what they are) recorded in ``Result.spring_dampers``,
    rows named by ``spring_damper_names``: the field the spring-dampers, the actuators (:func:`length_rate_force`)
    and the rotational spring-dampers (``angle_rate_torque``) fill one after the other."""
    return Output(name, columns, doc, field="spring_dampers", names_field="spring_damper_names")


def length_rate_force(doc: str) -> Output:
    """The output ``length_rate_force`` of point-to-point elements: length, rate and force columns, recorded
    in ``Result.spring_dampers`` (:func:`spring_damper_output`); ``doc`` says what they are."""
    return spring_damper_output("length_rate_force", ("spring_damper_length", "spring_damper_rate", "spring_damper_force"),
                                doc)


def point_pair_arrays(records: Sequence[Any], nodes: NodeTable, label: str, **more: np.ndarray) -> dict[str, Any]:
    """The compile arrays of point-to-point elements (:class:`PointPairData`) for ``records`` (with
    name, node_a (ground allowed), node_b, point_a, point_b): ``names``, the end nodes ``a``, ``b``, the
    points in their node frames ``sa``, ``sb`` (S1) and their distance at assembly ``length0``; then the
    family's own arrays ``more``, for the caller to fill. ModelError naming ``<label> '<name>'`` and an
    unknown node."""
    n = len(records)
    out = dict(names=tuple(r.name for r in records), a=np.zeros(n, int), b=np.zeros(n, int), sa=np.zeros((n, 3)),
               sb=np.zeros((n, 3)), length0=np.zeros(n), **more)
    for i, r in enumerate(records):
        who = f"{label} '{r.name}'"
        a, b = nodes.index(r.node_a, who, ground=True), nodes.index(r.node_b, who)
        (Xa, Ra), (Xb, Rb) = nodes.frame(a), nodes.frame(b)
        out["a"][i], out["b"][i] = a, b
        out["sa"][i], out["sb"][i] = Ra.T @ (r.point_a - Xa), Rb.T @ (r.point_b - Xb)
        out["length0"][i] = np.linalg.norm(r.point_b - r.point_a)
    return out


@dataclass(frozen=True, eq=False)
class SpringDamperData(PointPairData):
    """Compiled spring-dampers (``Model.elements["spring_damper"]``), eq. (S1)-(S4): the points of
    :class:`PointPairData`, then:"""

    k: np.ndarray  # stiffness [N/m]                                                          (n_el)
    c: np.ndarray  # damping [N s/m]                                                          (n_el)
    L0: np.ndarray  # rest length [m]                                                         (n_el)
    F0: np.ndarray  # preload: constant tension [N]                                           (n_el)
    length0: np.ndarray  # length at assembly [m]                                             (n_el)
    l_min: np.ndarray  # (S11): the shortest length with a direction, L_MIN length0 [m]       (n_el)
    law: tuple = ()  # per element its force law F(l, l', t) [N] or None (S12); k = c = F0 = 0 there (n_el)
    law_tangent: tuple = ()  # per element (∂F/∂l, ∂F/∂l')(l, l', t) or None: complex steps (S13)   (n_el)
    laws: np.ndarray | None = None  # the indices of the elements with a force law                        (n_law)
    actuator: tuple = ()  # per element: a force actuator (ModelBuilder.add_actuator(..., force=f)), its law f(t, l, l') (n_el)


@dataclass
class PointPairEvaluation(FamilyEvaluation):
    """Point-to-point elements at one state (S1)-(S3): G (n_el, 12), the direction ``nv`` and the arms
    ``ra``, ``rb`` (n_el, 3), the length ``l`` and its rate ``ldot`` (n_el,)."""

    G: np.ndarray | None = None
    nv: np.ndarray | None = None
    ra: np.ndarray | None = None
    rb: np.ndarray | None = None
    l: np.ndarray | None = None
    ldot: np.ndarray | None = None


@dataclass
class SpringDamperEvaluation(PointPairEvaluation):
    """The spring-dampers at one state (S1)-(S4): those of :class:`PointPairEvaluation`, the tension ``F``
    (n_el,), the tangents ``k`` = ∂F/∂l and ``c`` = ∂F/∂l' (n_el,) of the blocks (S8)-(S10) (a force
    law's at this state, (S13))."""

    F: np.ndarray | None = None
    k: np.ndarray | None = None
    c: np.ndarray | None = None
    #: (data, t) while the force laws' tangents (S13) in k, c are not yet taken: SpringDampers.blocks takes them
    #: (an evaluation that forms no matrix, an output row, never does: by complex steps they cost more than the law)
    pending: tuple | None = None


def finite_law_value(value: Any, t: float, at: str, finite: str) -> float:
    """A force or torque law's result ``value`` as a float (S12); a SolverError at time ``t`` if it is not a
    finite number: ``at`` names the element, its law and where it was taken, ``finite`` what the value is (its
    unit and equation). Spring-dampers' force laws and rotational spring-dampers' torque laws (R15)."""
    try:
        f = float(value)
    except (TypeError, ValueError):
        f = math.nan
    if not math.isfinite(f):
        raise SolverError(f"t = {t:.6g}: {at} gives {value!r}, not a finite {finite}", t,
                          hint="give a law that is finite over the motion")
    return f


def law_value(data: SpringDamperData, e: int, l: float, ldot: float, t: float) -> float:
    """Element ``e``'s force law at (l, l', t) (S12) as a float; SolverError naming it if not finite."""
    return finite_law_value(data.law[e](l, ldot, t), t,
                            f"spring-damper '{data.names[e]}': its force law at length {l:.6g} m, rate {ldot:.6g} m/s",
                            "tension [N] (docs/spring_damper.md (S12))")


def law_derivatives(law: Callable[[Any, Any, float], Any], tangent: Callable[[float, float, float], Any] | None, x: float,
                    rate: float, t: float) -> tuple[float, float]:
    """(∂f/∂x, ∂f/∂x') of a law f(x, x', t) at (x, x' = ``rate``, t): its given ``tangent(x, x', t)``, or (None)
    complex steps (central differences for a law that does not take complex arguments), as drives. A
    spring-damper's force law (S13), a rotational spring-damper's torque law (R15)."""
    if tangent is not None:
        dl, dv = tangent(x, rate, t)
        return float(dl), float(dv)
    return derivative(lambda s: law(s, rate, t), x), derivative(lambda v: law(x, v, t), rate)


def law_tangent(data: SpringDamperData, e: int, l: float, ldot: float, t: float) -> tuple[float, float]:
    """(∂F/∂l, ∂F/∂l') of element ``e``'s force law at (l, l', t) (S13): the given tangent, or
    complex steps (:func:`law_derivatives`)."""
    return law_derivatives(data.law[e], data.law_tangent[e], l, ldot, t)


def too_short(data: SpringDamperData, e: int, length: float, t: float) -> SolverError:
    """The SolverError of element ``e`` found shorter than its l_min (S11) at time ``t``."""
    return SolverError(
        f"t = {t:.6g}: spring-damper '{data.names[e]}' is {length:.3g} m long, below {data.l_min[e]:.3g} m ({L_MIN:g} of "
        f"its length {data.length0[e]:.4g} m at assembly): its two points meet, and the direction of its force is "
        "undefined there (docs/spring_damper.md (S11))", t,
        hint="attach the spring-damper at points that stay apart in the motion, or find what drives them together")


def law_failure(flags: np.ndarray, geometric: Callable[[int], SolverError], law_value: Callable[[int], Any],
                not_finite: Callable[[int], str], t: float) -> SolverError:
    """The SolverError of a failed compiled iterate of elements with numba-compiled laws (spring-dampers
    (S12), rotational spring-dampers), named as the Python step names it, from the iterate's ``flags``
    (element e, then 0.0: its geometry failed, 1.0: its law is not finite): ``geometric(e)``; else the
    error of the Python law at that element (``law_value(e)`` raises it); else that the compiled law is
    not finite, ``not_finite(e)`` saying which element's law and where."""
    e = int(flags[0])
    if flags[1] == 0.0:
        return geometric(e)
    try:
        law_value(e)
    except SolverError as exc:
        return exc
    return SolverError(f"t = {t:.6g}: {not_finite(e)}", t, hint="give a law that is finite over the motion")


class PointPairDrawing:
    """The drawing of a family whose elements join a point of a node (or ground) to a point of another
    node (spring-dampers, actuators): per element its end nodes (a: -1 on ground) and points in their
    node frames (a ground point global), one line cell p_a -> p_b each in element order (cell i carries
    element i's outputs), under the keys ``<drawing_prefix>_a``, ``_b``, ``_sa``, ``_sb``. Put it before
    ElementFamily in the bases; the family's data has ``a``, ``b``, ``sa``, ``sb``. A subclass that sets
    ``drawing_prefix`` gets from it its ``cell_kind`` (the prefix) and its drawing keys (``drawing_keys``,
    the real-valued ``_sa``, ``_sb`` and ``_a``, which may be ground)."""

    drawing_prefix = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        p = cls.__dict__.get("drawing_prefix")
        if p:
            cls.cell_kind = p
            cls.drawing_keys = (f"{p}_a", f"{p}_b", f"{p}_sa", f"{p}_sb")
            cls.drawing_real_keys = (f"{p}_sa", f"{p}_sb")
            cls.drawing_ground_keys = (f"{p}_a",)

    def drawing(self, model: Model, data: Any) -> dict[str, np.ndarray]:
        p = self.drawing_prefix
        sa = np.array(data.sa, dtype=np.float64).reshape(-1, 3)
        sa[data.a == GROUND] += model.origin
        return {f"{p}_a": np.asarray(data.a, dtype=np.int64), f"{p}_b": np.asarray(data.b, dtype=np.int64),
                f"{p}_sa": sa, f"{p}_sb": np.array(data.sb, dtype=np.float64).reshape(-1, 3)}

    def check_drawing(self, d: Mapping[str, np.ndarray], n_nodes: int, names: Mapping[str, int]) -> str:
        p = self.drawing_prefix
        a = d[f"{p}_a"]
        if a.ndim != 1:
            return f"drawing '{p}_a' has shape {a.shape}, expected one index per {self.label}"
        for k, shape in ((f"{p}_b", a.shape), (f"{p}_sa", (a.size, 3)), (f"{p}_sb", (a.size, 3))):
            if d[k].shape != shape:
                return f"drawing '{k}' has shape {d[k].shape}, expected {shape}"
        if not (np.isfinite(d[f"{p}_sa"]).all() and np.isfinite(d[f"{p}_sb"]).all()):
            return f"drawing '{p}_sa' or '{p}_sb' holds non-finite values"
        return ""

    def points(self, d: Mapping[str, np.ndarray], x: np.ndarray, R: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """p_a and p_b of every element (S1), carried by their nodes (-1: a fixed point on ground)."""
        p = self.drawing_prefix
        a, b = d[f"{p}_a"], d[f"{p}_b"]
        ground = a < 0
        ai = np.where(ground, 0, a)
        pa = np.where(ground[:, None], d[f"{p}_sa"], x[ai] + np.einsum("nij,nj->ni", R[ai], d[f"{p}_sa"]))
        pb = x[b] + np.einsum("nij,nj->ni", R[b], d[f"{p}_sb"])
        return np.stack([pa, pb], axis=1).reshape(-1, 3), np.stack([a, b], axis=1).reshape(-1).astype(np.int64)

    def lines(self, d: Mapping[str, np.ndarray], first_point: int) -> np.ndarray:
        """p_a -> p_b of every element."""
        return first_point + np.arange(2 * d[f"{self.drawing_prefix}_a"].size, dtype=np.int64).reshape(-1, 2)


class SpringDampers(PointPairDrawing, TwoNodeFamily):
    """The ``"spring_damper"`` family (module docstring)."""

    name = "spring_damper"
    label = "spring-damper"
    plural = "spring-dampers"
    has_blocks = True
    internal_pair = True  # (S14)-(S16): blocks over the tree path between the two nodes
    outputs = (length_rate_force("length l [m], its rate l' [m/s] and the tension F = k (l - L0) + c l' + F0 [N] "
                                 "(docs/spring_damper.md (S2)-(S4))"),)
    drawing_prefix = "spring_damper"  # cell_kind and drawing keys: PointPairDrawing
    builder_table = "spring_dampers"

    def compile(self, records: Sequence[SpringDamperSpec], nodes: NodeTable) -> SpringDamperData:
        """End nodes, the points in their node frames (S1), the constants of (S4) and l_min (S11)."""
        n = len(records)
        out = point_pair_arrays(records, nodes, "spring-damper", k=np.zeros(n), c=np.zeros(n), L0=np.zeros(n), F0=np.zeros(n))
        for i, r in enumerate(records):
            out["k"][i], out["c"][i], out["L0"][i], out["F0"][i] = r.stiffness, r.damping, r.rest_length, r.preload
        out["l_min"] = L_MIN * out["length0"]
        laws = [getattr(r, "force_law", None) for r in records]
        out["law"], out["law_tangent"] = tuple(laws), tuple(getattr(r, "force_law_tangent", None) for r in records)
        out["laws"] = np.array([e for e, f in enumerate(laws) if f is not None], dtype=np.int64)
        out["actuator"] = tuple(bool(getattr(r, "actuator", False)) for r in records)
        return SpringDamperData(**frozen_arrays(out))

    def dissipates(self, data: SpringDamperData) -> bool:
        """False where every damping is zero and no element has a force law (its power is counted as
        dissipated, (S12))."""
        return bool(np.any(data.c != 0.0) or (data.laws is not None and data.laws.size))

    def evaluate(self, model: Model, data: SpringDamperData, prep: tuple[np.ndarray, np.ndarray], state: State,
                 kin: Kinematics, load_factor: float, Mb: np.ndarray, w: np.ndarray) -> SpringDamperEvaluation:
        """(S1)-(S6) of every element into the node wrenches w (compiled: spring_damper_forces, the
        compiled step's kernel); raises SolverError naming an element shorter than its l_min (S11)."""
        ia, ib = prep
        n = data.n
        G, nv, ra, rb = np.empty((n, 12)), np.empty((n, 3)), np.empty((n, 3)), np.empty((n, 3))
        l, ldot, F, energy, power = np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n)
        springs = kernels.SpringDamperArrays(ia, ib, data.sa, data.sb, data.k, data.c, data.L0, data.F0, data.l_min)
        short = kernels.spring_damper_forces(kin.x, kin.R, kin.V, springs, w,
                                             kernels.SpringDamperResults(G, nv, ra, rb, l, ldot, F, energy, power))
        if short >= 0:
            raise too_short(data, short, float(l[short]), state.t)
        k, c = data.k, data.c
        laws = data.laws is not None and data.laws.size
        if laws:  # (S12): the force laws, in Python; their tangents (S13) when blocks() needs them
            k, c = k.copy(), c.copy()
            for e in data.laws:
                f = law_value(data, e, float(l[e]), float(ldot[e]), state.t)
                F[e], power[e] = f, f * ldot[e]
                w[ia[e]] += G[e, :6] * f  # (S5); row N (ground) is discarded
                w[ib[e]] += G[e, 6:] * f
        fe = self.evaluation(G, nv, ra, rb, l, ldot, F, energy, power, k, c)
        if laws:
            fe.pending = (data, state.t)
        return fe

    @staticmethod
    def tangents(fe: SpringDamperEvaluation) -> SpringDamperEvaluation:
        """``fe`` with its force laws' tangents (S13) in k and c at its (l, l', t), taken now if still pending."""
        if fe.pending is not None:
            data, t = fe.pending
            for e in data.laws:
                fe.k[e], fe.c[e] = law_tangent(data, e, float(fe.l[e]), float(fe.ldot[e]), t)
            fe.pending = None
        return fe

    @staticmethod
    def evaluation(G: np.ndarray, nv: np.ndarray, ra: np.ndarray, rb: np.ndarray, l: np.ndarray, ldot: np.ndarray,
                   F: np.ndarray, energy: np.ndarray, power: np.ndarray, k: np.ndarray, c: np.ndarray
                   ) -> SpringDamperEvaluation:
        """The evaluation of spring_damper_forces' outputs (the Python and the compiled iterates alike;
        the dissipation an ordered_sum, as the compiled run's, flexmb/solvers/element_run.py)."""
        return SpringDamperEvaluation(strain_energy=float(energy.sum()), dissipation=float(ordered_sum(power)), G=G, nv=nv,
                                      ra=ra, rb=rb, l=l, ldot=ldot, F=F, k=k, c=c)

    def blocks(self, model: Model, data: SpringDamperData, prep: Any, fe: SpringDamperEvaluation, kin: Kinematics,
               ck: float, cc: float, cm: float, material_only: bool, exact_tangent: bool) -> np.ndarray:
        """(S8) in time steps, (S9) with ``exact_tangent``, (S10) with ``material_only`` (no mass)."""
        mode = kernels.MATERIAL if material_only else (kernels.EXACT if exact_tangent else kernels.TIME_STEP)
        out = np.empty((data.n, 12, 12))
        self.tangents(fe)
        kernels.spring_damper_blocks(fe.G, fe.nv, fe.ra, fe.rb, fe.l, fe.F, fe.k, fe.c, float(ck), float(cc), mode, out)
        return out

    def output(self, model: Model, data: SpringDamperData, fe: SpringDamperEvaluation | None, name: str) -> np.ndarray:
        """``length_rate_force``: (n_el, 3) of l, l', F (S2)-(S4)."""
        if name != "length_rate_force":
            return super().output(model, data, fe, name)
        return np.zeros((0, 3)) if fe is None else np.stack([fe.l, fe.ldot, fe.F], axis=1)

    # ------------------------------------------------------------------ presentation
    def describe(self, model: Model, data: SpringDamperData, limit: int) -> list[str]:
        rows = []
        for e, name in enumerate(data.names):
            a, b = int(data.a[e]), int(data.b[e])
            pa, pb = data.points(model, e)
            end_a = "ground" if a < 0 else model.node_names[a]
            if data.law and data.law[e] is not None:
                what = ("force actuator, tension f(t, l, l') (docs/actuator.md §6)" if data.actuator and data.actuator[e]
                        else "force law F(l, l', t) (docs/spring_damper.md (S12))")
                law = f"{what}, length at assembly {data.length0[e]:.6g} m"
            else:
                law = (f"k = {data.k[e]:g} N/m, c = {data.c[e]:g} N s/m, rest length {data.L0[e]:g} m (at assembly "
                       f"{data.length0[e]:.6g} m), preload {data.F0[e]:g} N")
            rows.append(f"  {name}: {end_a} ({', '.join(f'{v:.4g}' for v in pa)}) - {model.node_names[b]} "
                        f"({', '.join(f'{v:.4g}' for v in pb)}): {law}")
        return ["spring-dampers (point to point, docs/spring_damper.md):"] + listing(rows, limit)


#: the registered instance (flexmb.elements.FAMILIES["spring_damper"])
FAMILY = SpringDampers()
