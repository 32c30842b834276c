"""What the builder stores: one small frozen record per ``add_*`` call, read by the compiler by
field name (builder/compile.py). Positions, points and axes are global, in the assembly
configuration (all joint coordinates zero); nodes are referred to by name (``"ground"``: the
fixed frame). Arrays in records are read-only copies.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from flexmb.builder import arguments as args
from flexmb.errors import ModelError
from flexmb.joints import JointKind
from flexmb.motion_forces import MotionForce
from flexmb.motion_loads import NodeMotionLoad
from flexmb.timefunctions import ScalarDrive

__all__ = [
    "BeamSection", "NodeSpec", "BodySpec", "JointSpec", "DriveSpec", "SpringSpec", "JointForceSpec", "FrictionSpec",
    "LoadSpec", "MotionLoadSpec", "CutSpec", "BushingSpec", "RigidCutSpec", "SpringDamperSpec", "ActuatorSpec", "BeamSpec",
    "ParticleBodySpec", "readonly",
    "check_beam",
]


def readonly(a: np.ndarray) -> np.ndarray:
    """A read-only copy of ``a``."""
    out = np.array(a, dtype=float)
    out.setflags(write=False)
    return out


@dataclass(frozen=True)
class BeamSection:
    """Beam section: Young's modulus E, shear modulus G, area A, second moments Iy, Iz (about
    the section axes e2, e3), torsion constant J, density rho; shear factors ky, kz for a
    Timoshenko section (both, or neither: Euler–Bernoulli)."""

    E: float
    G: float
    A: float
    Iy: float
    Iz: float
    J: float
    rho: float
    ky: float | None = None
    kz: float | None = None

    def __post_init__(self) -> None:
        who = "BeamSection"
        for f in ("E", "G", "A", "Iy", "Iz", "J", "rho") + (("ky",) if self.ky is not None else ()) + (
                ("kz",) if self.kz is not None else ()):
            object.__setattr__(self, f, args.number(getattr(self, f), who, f, positive=True))
        if (self.ky is None) != (self.kz is None):
            given, missing = ("ky", "kz") if self.kz is None else ("kz", "ky")
            raise ModelError(f"{who}: {given} is given without {missing}; a Timoshenko section needs both shear factors "
                             "(ky and kz), an Euler–Bernoulli section neither.")


def check_beam(section: BeamSection, length: float, n: int, who: str, what: str) -> None:
    """Refuse a beam whose ``length`` (``what``: where it is measured) overflows, or whose
    elements (``n`` of them along it) have a stiffness or mass that overflows: the terms of the
    element's local stiffness (E A / L, G J / L, E I / L, 12 E I / L³ and the Timoshenko 12 E I /
    (k G A L²)) and consistent mass (rho A L, rho I L) must be finite numbers."""
    if not math.isfinite(length):
        raise ModelError(f"{who}: {what} overflows; give physical positions.")
    s, L = section, length / n
    terms = {"E·A/L": ("E", s.E * s.A / L), "G·J/L": ("J", s.G * s.J / L), "rho·A·L": ("rho", s.rho * s.A * L)}
    for I, k in (("Iy", s.kz), ("Iz", s.ky)):
        EI = s.E * getattr(s, I)
        terms.update({f"E·{I}/L": (I, EI / L), f"12·E·{I}/L³": (I, 12 * EI / L / L / L),
                      f"rho·{I}·L": (I, s.rho * getattr(s, I) * L)})
        if k is not None:
            terms[f"12·E·{I}/(k·G·A·L²)"] = (I, 12 * EI / (k * s.G * s.A) / L / L)
    for term, (field, value) in terms.items():
        if not math.isfinite(value):
            raise ModelError(f"{who}: section {field} = {getattr(s, field)!r} (E = {s.E!r}, rho = {s.rho!r}) on elements "
                             f"{L:.4g} m long: the element's {term} overflows (is not a finite number); give physical "
                             "section values.")


@dataclass(frozen=True, eq=False)
class NodeSpec:
    """A node (6-DOF frame): ``position`` (3,) and ``rotation`` (3, 3), columns = node axes."""

    name: str
    position: np.ndarray
    rotation: np.ndarray


@dataclass(frozen=True, eq=False)
class BodySpec:
    """A rigid body on ``node``: ``mass``, centre of mass ``com`` (3,) in node axes relative to
    the node, ``inertia`` (3, 3) about the centre of mass in node axes. The particles of a
    particle body are point-mass bodies whose mass may be negative (ParticleBodySpec)."""

    name: str
    node: str
    mass: float
    com: np.ndarray
    inertia: np.ndarray


@dataclass(frozen=True, eq=False)
class JointSpec:
    """A joint from ``parent`` (node or ``"ground"``) to ``child``: ``point`` (3,) global or None
    (the child node), unit ``axes`` (global), initial coordinates ``q0`` and velocities ``u0``
    (n_u,) of its kind."""

    name: str
    kind: JointKind
    parent: str
    child: str
    point: np.ndarray | None
    axes: tuple[np.ndarray, ...]
    q0: np.ndarray
    u0: np.ndarray


@dataclass(frozen=True)
class DriveSpec:
    """Scalar coordinate ``dof`` of ``joint`` driven by ``drive`` (q, q', q'' of t)."""

    joint: str
    dof: int
    drive: ScalarDrive


@dataclass(frozen=True)
class SpringSpec:
    """Linear spring and damper on coordinate ``dof`` of ``joint``: tau = -k (q - rest) - c q'."""

    joint: str
    dof: int
    stiffness: float
    damping: float
    rest: float


@dataclass(frozen=True)
class JointForceSpec:
    """Applied generalized force on coordinate ``dof`` of ``joint``: ``force(t)``, or with ``motion``
    a force of the motion f(t, q, u) (flexmb/motion_forces.py; ``force`` is then its time-only
    value at q = u = 0, unused)."""

    joint: str
    dof: int
    force: Callable[[float], float]
    motion: MotionForce | None = None


@dataclass(frozen=True)
class FrictionSpec:
    """Bearing friction of revolute ``joint``: coefficient ``mu``, ``pin_radius`` [m],
    regularisation ``omega_eps`` [rad/s]."""

    joint: str
    mu: float
    pin_radius: float
    omega_eps: float


@dataclass(frozen=True)
class LoadSpec:
    """Nodal force and moment, functions of time returning 3-vectors: global, or (``follower``)
    in the axes of ``node`` or of ``axes_node`` when given."""

    name: str
    node: str
    force: Callable[[float], np.ndarray]
    moment: Callable[[float], np.ndarray]
    follower: bool
    axes_node: str | None = None


@dataclass(frozen=True)
class MotionLoadSpec:
    """A node load of the motion on ``node``: ``load`` holds f(t, x, R, v, w) and its tangent
    (flexmb/motion_loads.py, docs/motion_forces.md (M8)); an element of the ``motion_load`` family."""

    name: str
    node: str
    load: NodeMotionLoad


@dataclass(frozen=True, eq=False)
class CutSpec:
    """What every loop cut's record starts with (:class:`BushingSpec`, :class:`RigidCutSpec`): its
    ``name``, its ends ``node_a`` (or ``"ground"``) and ``node_b``, and the cut frame: ``point`` (3,)
    and ``axes`` (3, 3, columns), global at assembly."""

    name: str
    node_a: str
    node_b: str
    point: np.ndarray
    axes: np.ndarray


@dataclass(frozen=True, eq=False)
class BushingSpec(CutSpec):
    """6x6 spring–damper between ``node_a`` (or ``"ground"``) and ``node_b`` at ``point`` (3,)
    with bushing ``axes`` (3, 3, columns); ``stiffness``, ``damping`` (6, 6) on (translations,
    rotations) in bushing axes, ``damping`` None: chosen by the compiler (builder/cut_defaults.py);
    ``free_rotation``: -1 none, 0/1/2 about bushing x/y/z, 3 all; ``plane``: the bushing axis along
    the plane normal of a planar bushing (its stiffness and damping are then zero off the in-plane
    directions, docs/planar.md (P3)), -1 for a spatial one."""

    stiffness: np.ndarray
    damping: np.ndarray | None
    free_rotation: int
    plane: int = -1  # the cut axis along the plane normal of a planar cut (docs/planar.md (P3)), -1: spatial


@dataclass(frozen=True, eq=False)
class SpringDamperSpec:
    """A point-to-point spring-damper (flexmb.elements.spring_damper, docs/spring_damper.md) from
    ``point_a`` (3,) carried by ``node_a`` (or fixed: ``"ground"``) to ``point_b`` (3,) carried by
    ``node_b``, both global at assembly: tension stiffness (l - rest_length) + damping l' + preload
    [N] along the line between them, or ``force_law(l, l', t)`` [N] (docs/spring_damper.md (S4),
    (S12)) with its partial derivatives ``force_law_tangent(l, l', t)`` (None: complex steps)."""

    name: str
    node_a: str
    node_b: str
    point_a: np.ndarray
    point_b: np.ndarray
    stiffness: float
    damping: float
    rest_length: float
    preload: float
    force_law: Callable[[float, float, float], float] | None = None
    force_law_tangent: Callable[[float, float, float], tuple[float, float]] | None = None
    actuator: bool = False  # a force actuator (ModelBuilder.add_actuator(..., force=...)): its law is f(t, l, l')


@dataclass(frozen=True, eq=False)
class ActuatorSpec:
    """A prescribed-length actuator (flexmb.elements.actuator, docs/actuator.md) from ``point_a`` (3,)
    carried by ``node_a`` (or fixed: ``"ground"``) to ``point_b`` (3,) carried by ``node_b``, both
    global at assembly; ``length`` gives L(t), L'(t), L''(t) [m, m/s, m/s²] (a ScalarDrive)."""

    name: str
    node_a: str
    node_b: str
    point_a: np.ndarray
    point_b: np.ndarray
    length: ScalarDrive


@dataclass(frozen=True, eq=False)
class RigidCutSpec(CutSpec):
    """A rigid-limit cut (augmented Lagrangian, flexmb.elements.rigid_cut) between ``node_a`` (or
    ``"ground"``) and ``node_b`` at ``point`` (3,) with cut ``axes`` (3, 3, columns):
    ``free_rotation`` as for a bushing; closure ``tolerance`` [m, rad] or None (1e-10 times the
    model's size in m, 1e-10 rad: flexmb.elements.rigid_cut, (AL4)); ``penalty`` α [N/m, N m/rad]
    or None (chosen per step from the cut's effective mass and the step, flexmb.elements.rigid_cut (AL7));
    ``plane``: the cut axis along the plane normal of a planar cut (it holds only the in-plane
    directions, docs/planar.md (P3)), -1 for a spatial one."""

    free_rotation: int
    tolerance: float | None
    penalty: float | None
    plane: int = -1  # the cut axis along the plane normal of a planar cut (docs/planar.md (P3)), -1: spatial


@dataclass(frozen=True, eq=False)
class BeamSpec:
    """One beam element from ``node_a`` to ``node_b``: ``section``, section ``frame`` E0 (3, 3;
    columns e1 along the axis, e2, e3), reference ``length`` L0, stiffness-proportional
    ``damping`` α [s] (None: chosen by the compiler, builder/cut_defaults.py); ``link``: the flexible
    link it belongs to (its own name if alone)."""

    name: str
    node_a: str
    node_b: str
    section: BeamSection
    frame: np.ndarray
    length: float
    damping: float | None
    link: str


@dataclass(frozen=True)
class ParticleBodySpec:
    """A particle body (Attia §2): ``reference`` node, its particles' ``nodes`` (primaries first,
    then midpoints) and ``masses`` (may be negative), ``n_primary``, the particle ``kind`` and
    whether the model is ``planar`` (planar, rod, general with plane_normal). Each particle is
    also a point-mass body ``<name>.p<k>``."""

    name: str
    kind: str
    reference: str
    nodes: tuple[str, ...]
    masses: tuple[float, ...]
    n_primary: int
    planar: bool
