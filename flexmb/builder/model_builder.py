"""The model builder: ``add_*`` calls check their input and store records (builder/records.py);
:meth:`ModelBuilder.compile` hands them to the compiler (builder/compile.py) and then runs the
checks that need the compiled model (builder/checks.py).

Everything is given in the *assembly configuration* (all joint coordinates zero), in global
coordinates: node positions and orientations, joint points and axes. Initial joint
coordinates ``q0`` and velocities ``u0`` then move the mechanism from there.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np

from flexmb.builder import checks, particle_bodies
from flexmb.builder.compile import compile as compile_model
from flexmb.builder.records import (
    BeamSection,
    BeamSpec,
    BodySpec,
    BushingSpec,
    DriveSpec,
    FrictionSpec,
    JointForceSpec,
    JointSpec,
    LoadSpec,
    NodeSpec,
    ParticleBodySpec,
    SpringSpec,
    readonly,
)
from flexmb.errors import ModelError
from flexmb.joints import JOINT_KINDS
from flexmb.model import Model
from flexmb.timefunctions import ScalarDrive, as_time_function

__all__ = ["ModelBuilder", "BeamSection"]


def _vec(value: Any, n: int, what: str) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ModelError(f"{what}: {value!r} is not a list of {n} numbers.") from None
    if arr.shape != (n,):
        raise ModelError(f"{what}: expected {n} numbers, got shape {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        raise ModelError(f"{what}: {arr.tolist()} contains NaN or inf; give finite numbers.")
    return arr


def _mat3(value: Any, what: str) -> np.ndarray:
    arr = np.asarray(value, dtype=float)
    if arr.shape != (3, 3):
        raise ModelError(f"{what}: expected a 3x3 matrix, got shape {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        raise ModelError(f"{what}: contains NaN or inf; give finite numbers.")
    return arr


def _unit(value: Any, what: str) -> np.ndarray:
    a = _vec(value, 3, what)
    n = np.linalg.norm(a)
    if n < 1e-12:
        raise ModelError(f"{what}: axis {a.tolist()} has zero length; give a nonzero direction.")
    return a / n


def _section_frame(axis: np.ndarray, z_hint: np.ndarray, who: str) -> np.ndarray:
    e1 = axis / np.linalg.norm(axis)
    e2 = np.cross(z_hint, e1)
    if np.linalg.norm(e2) < 1e-9:
        raise ModelError(f"{who}: z_hint {z_hint.tolist()} is parallel to the beam axis; give another direction.")
    e2 /= np.linalg.norm(e2)
    return np.stack([e1, e2, np.cross(e1, e2)], axis=1)


def _matrix6(value: Any, what: str) -> np.ndarray:
    arr = np.asarray(value, dtype=float)
    if arr.shape == (6,):
        arr = np.diag(arr)
    if arr.shape != (6, 6):
        raise ModelError(f"{what}: give 6 diagonal values or a 6x6 matrix, got shape {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        raise ModelError(f"{what}: contains NaN or inf.")
    scale = max(1.0, float(np.abs(arr).max()))
    if np.abs(arr - arr.T).max() > 1e-12 * scale:
        raise ModelError(f"{what}: the matrix is not symmetric; a spring–damper needs a symmetric matrix.")
    ev = np.linalg.eigvalsh(arr)
    if ev.min() < -1e-12 * scale:
        raise ModelError(f"{what}: the matrix is indefinite (eigenvalue {ev.min():.3g}); it must be positive semi-definite.")
    return arr


class ModelBuilder:
    """Collects nodes, bodies, joints, drives and loads; :meth:`compile` checks them and
    returns an immutable :class:`~flexmb.model.Model`. The records stored so far can be read
    (not changed) through :attr:`nodes`, :attr:`bodies`, :attr:`joints` and alike.

    Example::

        mb = ModelBuilder(gravity=(0, -9.81, 0))
        mb.add_node("tip", position=(1, 0, 0))
        mb.add_body("rod", node="tip", mass=1.0, com=(-0.5, 0, 0), inertia=np.diag([0, 1, 1]) / 12)
        mb.add_joint("pin", "revolute", parent="ground", child="tip", point=(0, 0, 0), axis=(0, 0, 1))
        model = mb.compile()
    """

    def __init__(self, gravity: Sequence[float] = (0.0, 0.0, 0.0)) -> None:
        self._nodes: dict[str, NodeSpec] = {}
        self._node_index_of: dict[str, int] = {}
        self._bodies: dict[str, BodySpec] = {}
        self._joints: dict[str, JointSpec] = {}
        self._drives: dict[tuple[str, int], DriveSpec] = {}
        self._springs: dict[tuple[str, int], SpringSpec] = {}
        self._joint_forces: dict[tuple[str, int], JointForceSpec] = {}
        self._frictions: dict[str, FrictionSpec] = {}
        self._loads: dict[str, LoadSpec] = {}
        self._bushings: dict[str, BushingSpec] = {}
        self._beams: dict[str, BeamSpec] = {}
        self._particle_bodies: dict[str, ParticleBodySpec] = {}
        self.gravity = _vec(gravity, 3, "gravity")

    # ------------------------------------------------------------------ the records (read-only views)
    @property
    def nodes(self) -> Mapping[str, NodeSpec]:
        """Nodes by name, in declaration order (the node index order of the Model)."""
        return MappingProxyType(self._nodes)

    @property
    def bodies(self) -> Mapping[str, BodySpec]:
        """Rigid bodies by name (particles of particle bodies included), in declaration order."""
        return MappingProxyType(self._bodies)

    @property
    def joints(self) -> Mapping[str, JointSpec]:
        """Joints by name, in declaration order."""
        return MappingProxyType(self._joints)

    @property
    def drives(self) -> Mapping[tuple[str, int], DriveSpec]:
        """Drives by (joint, dof)."""
        return MappingProxyType(self._drives)

    @property
    def springs(self) -> Mapping[tuple[str, int], SpringSpec]:
        """Joint springs by (joint, dof)."""
        return MappingProxyType(self._springs)

    @property
    def joint_forces(self) -> Mapping[tuple[str, int], JointForceSpec]:
        """Applied joint forces by (joint, dof)."""
        return MappingProxyType(self._joint_forces)

    @property
    def frictions(self) -> Mapping[str, FrictionSpec]:
        """Bearing frictions by joint."""
        return MappingProxyType(self._frictions)

    @property
    def loads(self) -> Mapping[str, LoadSpec]:
        """Nodal loads by name, in declaration order."""
        return MappingProxyType(self._loads)

    @property
    def bushings(self) -> Mapping[str, BushingSpec]:
        """Bushings by name, in declaration order."""
        return MappingProxyType(self._bushings)

    @property
    def beams(self) -> Mapping[str, BeamSpec]:
        """Beam elements by name, in declaration order."""
        return MappingProxyType(self._beams)

    @property
    def particle_bodies(self) -> Mapping[str, ParticleBodySpec]:
        """Particle bodies by name, in declaration order."""
        return MappingProxyType(self._particle_bodies)

    # ------------------------------------------------------------------ nodes, bodies
    def add_node(self, name: str, position: Sequence[float], rotation: Any = None) -> str:
        """Add a node (6-DOF frame) at ``position`` with orientation ``rotation`` (3x3, columns
        = node axes in global coordinates; identity by default)."""
        self._check_new_name(name, self._nodes, "node")
        x = _vec(position, 3, f"node '{name}' position")
        R = np.eye(3) if rotation is None else _mat3(rotation, f"node '{name}' rotation")
        if np.abs(R.T @ R - np.eye(3)).max() > 1e-9 or np.linalg.det(R) < 0:
            raise ModelError(f"node '{name}' rotation is not a proper rotation matrix (R^T R = I, det R = 1).")
        self._node_index_of[name] = len(self._nodes)
        self._nodes[name] = NodeSpec(name, readonly(x), readonly(R))
        return name

    def add_body(
        self,
        name: str,
        node: str,
        mass: float,
        com: Sequence[float] = (0.0, 0.0, 0.0),
        inertia: Any = None,
    ) -> str:
        """Add a rigid body on ``node``: ``mass``, centre of mass ``com`` (node axes, relative to
        the node) and ``inertia`` tensor about the centre of mass in node axes (3x3)."""
        self._check_new_name(name, self._bodies, "body")
        self._node_index(node, f"body '{name}'")
        if not (isinstance(mass, (int, float, np.floating)) and math.isfinite(mass)) or mass <= 0:
            raise ModelError(f"body '{name}': mass {mass!r} must be a positive finite number.")
        c = _vec(com, 3, f"body '{name}' com")
        J = np.zeros((3, 3)) if inertia is None else _mat3(inertia, f"body '{name}' inertia")
        if np.abs(J - J.T).max() > 1e-12 * max(1.0, np.abs(J).max()):
            raise ModelError(f"body '{name}': inertia tensor is not symmetric: {J.tolist()}.")
        ev = np.linalg.eigvalsh(J)
        tol = 1e-12 * max(1.0, ev.max())
        if ev.min() < -tol:
            raise ModelError(f"body '{name}': inertia tensor is not positive semi-definite (principal moments {ev.tolist()}).")
        if ev[0] + ev[1] < ev[2] - tol:
            raise ModelError(
                f"body '{name}': principal moments {ev.tolist()} violate the triangle inequality "
                "(J1 + J2 >= J3); no physical body has them."
            )
        self._bodies[name] = BodySpec(name, node, float(mass), readonly(c), readonly(J))
        return name

    # ------------------------------------------------------------------ joints
    def add_joint(
        self,
        name: str,
        kind: str,
        parent: str,
        child: str,
        point: Sequence[float] | None = None,
        axis: Sequence[float] | None = None,
        axes: Sequence[Sequence[float]] | None = None,
        q0: Sequence[float] | float | None = None,
        u0: Sequence[float] | float | None = None,
    ) -> str:
        """Add a joint of ``kind`` (fixed, revolute, prismatic, cylindrical, universal,
        spherical, free) from ``parent`` (a node or ``"ground"``) to ``child``.

        ``point`` (default: the child node) and ``axis``/``axes`` are global, in the assembly
        configuration. Universal joints take two axes (first fixed in the parent, second in the
        child). ``q0``/``u0`` are the initial coordinates and velocities; a ball's (spherical,
        free) three coordinates are a rotation vector and the child's body angular velocity
        relative to the parent.
        """
        self._check_new_name(name, self._joints, "joint")
        if kind not in JOINT_KINDS:
            raise ModelError(f"joint '{name}': unknown kind {kind!r}; use one of {sorted(JOINT_KINDS)}.")
        jk = JOINT_KINDS[kind]
        if parent != "ground":
            self._node_index(parent, f"joint '{name}' parent")
        if child == "ground":
            raise ModelError(f"joint '{name}': ground cannot be a child; give ground as the parent.")
        self._node_index(child, f"joint '{name}' child")
        if parent == child:
            raise ModelError(f"joint '{name}': parent and child are the same node '{child}'.")
        given = [] if axes is None else list(axes)
        if axis is not None:
            given = [axis] + given
        if kind in ("free", "spherical", "fixed"):
            if given:
                raise ModelError(f"joint '{name}': a {kind} joint takes no axis.")
        elif len(given) != jk.n_axes:
            raise ModelError(f"joint '{name}': a {kind} joint needs {jk.n_axes} axis/axes, got {len(given)}.")
        ax = [_unit(a, f"joint '{name}' axis {i + 1}") for i, a in enumerate(given)]
        if kind == "universal" and abs(ax[0] @ ax[1]) > 1 - 1e-9:
            raise ModelError(f"joint '{name}': the two universal-joint axes are parallel.")
        pt = None if point is None else _vec(point, 3, f"joint '{name}' point")
        q0a = np.zeros(jk.n_u) if q0 is None else np.atleast_1d(np.asarray(q0, dtype=float))
        u0a = np.zeros(jk.n_u) if u0 is None else np.atleast_1d(np.asarray(u0, dtype=float))
        for arr, what in ((q0a, "q0"), (u0a, "u0")):
            if arr.shape != (jk.n_u,):
                raise ModelError(f"joint '{name}': {what} needs {jk.n_u} values, got {arr.size}.")
            if not np.all(np.isfinite(arr)):
                raise ModelError(f"joint '{name}': {what} {arr.tolist()} contains NaN or inf.")
        self._joints[name] = JointSpec(name, jk, parent, child, None if pt is None else readonly(pt),
                                       tuple(readonly(a) for a in ax), readonly(q0a), readonly(u0a))
        return name

    def add_drive(
        self,
        joint: str,
        position: Callable[[float], float],
        velocity: Callable[[float], float] | None = None,
        acceleration: Callable[[float], float] | None = None,
        dof: int = 0,
    ) -> None:
        """Drive coordinate ``dof`` of ``joint`` (rheonomic): ``q(t) = position(t)``. Without
        ``velocity``/``acceleration`` the derivatives are computed (complex step)."""
        jt = self._joint(joint, "drive")
        self._check_dof(jt, dof, "drive")
        if (joint, dof) in self._drives:
            raise ModelError(f"drive: coordinate {dof} of joint '{joint}' is already driven; drive it once.")
        for f, what in ((position, "position"), (velocity, "velocity"), (acceleration, "acceleration")):
            if f is not None and not callable(f):
                raise ModelError(f"drive of joint '{joint}': {what} must be a function of time.")
        d = ScalarDrive(position, velocity, acceleration)
        vals = d(0.0)
        if not all(math.isfinite(v) for v in vals):
            raise ModelError(f"drive of joint '{joint}': q, q', q'' at t = 0 are {vals}: not finite.")
        self._drives[(joint, dof)] = DriveSpec(joint, dof, d)

    def add_joint_spring(
        self, joint: str, stiffness: float, damping: float = 0.0, rest: float = 0.0, dof: int = 0
    ) -> None:
        """Linear spring and damper on coordinate ``dof`` of ``joint``:
        ``tau = -stiffness (q - rest) - damping q'``."""
        jt = self._joint(joint, "joint spring")
        self._check_dof(jt, dof, "joint spring")
        for v, what in ((stiffness, "stiffness"), (damping, "damping"), (rest, "rest")):
            if not math.isfinite(v):
                raise ModelError(f"joint spring on '{joint}': {what} {v!r} is not finite.")
        if stiffness < 0 or damping < 0:
            raise ModelError(f"joint spring on '{joint}': stiffness and damping must be >= 0.")
        self._springs[(joint, dof)] = SpringSpec(joint, dof, float(stiffness), float(damping), float(rest))

    def add_joint_force(self, joint: str, force: float | Callable[[float], float], dof: int = 0) -> None:
        """Applied generalized force on coordinate ``dof`` of ``joint`` (a force along a prismatic
        axis, a torque about a revolute axis): a number or a function of time ``force(t)``. It
        enters tau of eq. (1) like a joint spring, and its work is reported as load work. On a
        driven coordinate the drive force is then what the actuator adds to it."""
        jt = self._joint(joint, "joint force")
        self._check_dof(jt, dof, "joint force")
        if (joint, dof) in self._joint_forces:
            raise ModelError(f"joint force: coordinate {dof} of joint '{joint}' already has one; give their sum once.")
        if not callable(force) and not (isinstance(force, (int, float, np.floating)) and math.isfinite(force)):
            raise ModelError(f"joint force on '{joint}': {force!r} must be a finite number or a function of time.")
        f = force if callable(force) else _constant(float(force))
        try:
            v0 = float(f(0.0))
        except Exception as exc:
            raise ModelError(f"joint force on '{joint}': force(0.0) failed ({exc}); "
                             "give a function of time returning a number.") from None
        if not math.isfinite(v0):
            raise ModelError(f"joint force on '{joint}': force(0.0) = {v0!r} is not finite.")
        self._joint_forces[(joint, dof)] = JointForceSpec(joint, dof, f)

    def add_joint_friction(self, joint: str, mu: float, pin_radius: float, omega_eps: float = 1e-3) -> None:
        """Coulomb friction in the bearing of revolute ``joint`` (Zahariev & Cuadrado §1, §5): the
        torque -mu pin_radius |F_perp| tanh(q'/omega_eps) on its coordinate, F_perp the joint's
        reaction force normal to the axis (implicit in the accelerations); ``omega_eps`` [rad/s]
        regularises sign(q') near rest (flexmb/friction.py, eq. 1, explains the choice)."""
        jt = self._joint(joint, "joint friction")
        if jt.kind.name != "revolute":
            raise ModelError(f"joint friction on '{joint}': only revolute joints have a bearing model here "
                             f"(it is {jt.kind.name}); give a revolute joint.")
        if joint in self._frictions:
            raise ModelError(f"joint friction: joint '{joint}' already has friction; give it once.")
        for v, what, lo in ((mu, "mu", 0.0), (pin_radius, "pin_radius", None), (omega_eps, "omega_eps", None)):
            ok = isinstance(v, (int, float, np.floating)) and math.isfinite(v) and (v >= lo if lo is not None else v > 0)
            if not ok:
                raise ModelError(f"joint friction on '{joint}': {what} = {v!r} must be a finite number "
                                 f"{'>= 0' if lo is not None else '> 0'}.")
        self._frictions[joint] = FrictionSpec(joint, float(mu), float(pin_radius), float(omega_eps))

    def add_load(
        self,
        name: str,
        node: str,
        force: Any = (0.0, 0.0, 0.0),
        moment: Any = (0.0, 0.0, 0.0),
        follower: bool = False,
        axes_node: str | None = None,
    ) -> str:
        """Nodal force and moment (constant 3-vectors or functions of time returning them);
        ``follower=True`` gives them in node axes so they turn with the node, or in the axes of
        ``axes_node`` when given (a load that turns with another node, e.g. a body's reference)."""
        self._check_new_name(name, self._loads, "load")
        self._node_index(node, f"load '{name}'")
        if axes_node is not None:
            self._node_index(axes_node, f"load '{name}' axes_node")
            if not follower:
                raise ModelError(f"load '{name}': axes_node is for follower loads; give follower=True or no axes_node.")
        self._loads[name] = LoadSpec(
            name, node, as_time_function(force, f"load '{name}' force"),
            as_time_function(moment, f"load '{name}' moment"), bool(follower), axes_node,
        )
        return name

    def add_bushing(
        self,
        name: str,
        node_a: str,
        node_b: str,
        stiffness: Any,
        damping: Any = None,
        point: Sequence[float] | None = None,
        axes: Any = None,
        free_rotation: str | None = None,
    ) -> str:
        """Elastic link (6x6 spring–damper) between the frames of ``node_a`` (or ``"ground"``)
        and ``node_b`` at ``point`` (default: node_b) with bushing axes ``axes`` (3x3, columns,
        default global). ``stiffness``/``damping``: 6 diagonal values or a symmetric positive
        semi-definite 6x6 matrix on (translations, rotations) in bushing axes; a zero entry
        leaves that direction free. ``free_rotation``: ``"x"``, ``"y"`` or ``"z"`` leaves the
        rotation about that bushing axis free for any angle (a revolute bushing), ``"all"``
        leaves all rotations free (a spherical bushing). Bushings may close loops."""
        self._check_new_name(name, self._bushings, "bushing")
        self._check_new_name(name, self._joints, "joint or bushing")
        if node_a != "ground":
            self._node_index(node_a, f"bushing '{name}'")
        self._node_index(node_b, f"bushing '{name}'")
        if node_a == node_b:
            raise ModelError(f"bushing '{name}': both ends are node '{node_b}'.")
        K = _matrix6(stiffness, f"bushing '{name}' stiffness")
        C = _matrix6(np.zeros(6) if damping is None else damping, f"bushing '{name}' damping")
        modes = {None: -1, "x": 0, "y": 1, "z": 2, "all": 3}
        if free_rotation not in modes:
            raise ModelError(f"bushing '{name}': free_rotation {free_rotation!r} must be one of {list(modes)}.")
        P = None if point is None else _vec(point, 3, f"bushing '{name}' point")
        E = np.eye(3) if axes is None else _mat3(axes, f"bushing '{name}' axes")
        if np.abs(E.T @ E - np.eye(3)).max() > 1e-9 or np.linalg.det(E) < 0:
            raise ModelError(f"bushing '{name}': axes are not a proper rotation matrix (orthonormal columns, det 1).")
        self._bushings[name] = BushingSpec(name, node_a, node_b, None if P is None else readonly(P), readonly(E),
                                           readonly(K), readonly(C), modes[free_rotation])
        return name

    def add_beam(
        self,
        name: str,
        node_a: str,
        node_b: str,
        section: BeamSection,
        z_hint: Sequence[float] = (0.0, 0.0, 1.0),
        damping: float = 0.0,
    ) -> str:
        """One co-rotational beam element between two existing nodes (flexmb.elements.beam).

        The section's local axes: e1 from node_a to node_b, e2 = z_hint x e1 (normalised),
        e3 = e1 x e2; so with the default z_hint a beam in the x–y plane bends in that plane
        about e3 (using Iz). ``damping``: stiffness-proportional factor α [s] on the
        deformational velocities."""
        return self._add_beam_element(name, node_a, node_b, section, z_hint, damping, name)

    def _add_beam_element(self, name: str, node_a: str, node_b: str, section: BeamSection, z_hint: Sequence[float],
                          damping: float, link: str) -> str:
        """add_beam for an element of flexible link ``link``."""
        self._check_new_name(name, self._beams, "beam element")
        self._node_index(node_a, f"beam element '{name}'")
        self._node_index(node_b, f"beam element '{name}'")
        if not isinstance(section, BeamSection):
            raise ModelError(f"beam element '{name}': section must be a flexmb.BeamSection.")
        xa, xb = self._nodes[node_a].position, self._nodes[node_b].position
        L0 = float(np.linalg.norm(xb - xa))
        if L0 < 1e-12:
            raise ModelError(f"beam element '{name}': nodes '{node_a}' and '{node_b}' coincide (zero length).")
        if not (math.isfinite(damping) and damping >= 0):
            raise ModelError(f"beam element '{name}': damping {damping!r} must be >= 0.")
        E0 = _section_frame(xb - xa, _vec(z_hint, 3, f"beam element '{name}' z_hint"), f"beam element '{name}'")
        self._beams[name] = BeamSpec(name, node_a, node_b, section, readonly(E0), L0, float(damping), link)
        return name

    def add_flexible_link(
        self,
        name: str,
        point_a: Sequence[float],
        point_b: Sequence[float],
        n_elements: int,
        section: BeamSection,
        node_a: str | None = None,
        node_b: str | None = None,
        z_hint: Sequence[float] = (0.0, 0.0, 1.0),
        damping: float = 0.0,
    ) -> list[str]:
        """A beam of ``n_elements`` elements from ``point_a`` to ``point_b``. Its end nodes are
        new nodes ``name.0`` and ``name.<n>`` unless ``node_a``/``node_b`` name existing nodes to
        share (a body's node: the link is then fixed to that body); interior nodes are free.
        Join the ends to bodies or ground with any joint. Returns the node names, a to b."""
        if not isinstance(n_elements, (int, np.integer)) or n_elements < 1:
            raise ModelError(f"flexible link '{name}': n_elements {n_elements!r} must be a positive integer.")
        pa = _vec(point_a, 3, f"flexible link '{name}' point_a")
        pb = _vec(point_b, 3, f"flexible link '{name}' point_b")
        if np.linalg.norm(pb - pa) < 1e-12:
            raise ModelError(f"flexible link '{name}': point_a and point_b coincide; a beam needs a length.")
        for nd, p in ((node_a, pa), (node_b, pb)):
            if nd is not None:
                self._node_index(nd, f"flexible link '{name}'")
                if np.linalg.norm(self._nodes[nd].position - p) > 1e-9 * max(1.0, np.linalg.norm(p)):
                    raise ModelError(f"flexible link '{name}': node '{nd}' is not at the link's end point {p.tolist()}.")
        E0 = _section_frame(pb - pa, _vec(z_hint, 3, f"flexible link '{name}' z_hint"), f"flexible link '{name}'")
        names = []
        for i in range(n_elements + 1):
            if i == 0 and node_a is not None:
                names.append(node_a)
            elif i == n_elements and node_b is not None:
                names.append(node_b)
            else:
                names.append(self.add_node(f"{name}.{i}", pa + (pb - pa) * i / n_elements, E0))
        for i in range(n_elements):
            self._add_beam_element(f"{name}.e{i}", names[i], names[i + 1], section, z_hint, damping, name)
        return names

    # ------------------------------------------------------------------ particle bodies
    def add_particle_body(
        self,
        name: str,
        reference_node: str,
        mass: float,
        com: Sequence[float] = (0.0, 0.0, 0.0),
        inertia: Any = None,
        particle_nodes: Sequence[str | Sequence[float]] = (),
        kind: str = "planar",
        midpoint_nodes: Sequence[str] | None = None,
        plane_normal: Sequence[float] | None = None,
    ) -> tuple[str, ...]:
        """A rigid body described by dynamically equivalent particles on nodes (Attia §2;
        kernels in flexmb.elements.particles, glue in flexmb.builder.particle_bodies).

        ``mass``, ``com`` and ``inertia`` as in :meth:`add_body`: centre of mass in the axes of
        ``reference_node`` relative to it, inertia about the centre of mass in those axes (for
        ``planar``/``rod`` also a scalar: the moment about the plane normal / about an axis
        normal to the rod, through the centre of mass). ``particle_nodes``: the primary
        particles, each a node name (its position now is the particle's place) or a global
        point (a node fixed to the reference node is created there). ``kind``:

        * ``"planar"``: 3 primaries; a 4th particle at the midpoint of 1 and 3; masses from
          Attia's 4×4 system (eq. 2.1): mass, centre of mass (in the plane), polar moment;
        * ``"rod"``: the 2 end particles and their midpoint: mass, centre of mass (on the line),
          transverse moment;
        * ``"spatial"``: 4 non-coplanar primaries and 6 midpoints of the pairs (1,2), (1,3),
          (1,4), (2,3), (2,4), (3,4): mass, centre of mass, all six inertia components;
        * ``"general"``: any particles, spatial conditions, or planar ones if ``plane_normal``
          is given; least-norm masses, refused when no exact solution exists.

        Midpoint particles go on ``midpoint_nodes`` if given (nodes at the midpoints), else on
        new nodes ``<name>.m13`` … fixed to the reference node. Each particle becomes a point
        mass ``<name>.p<k>`` on its node, so bodies sharing a joint node both add mass to it.
        Singular placements and non-physical inertias raise ModelError; negative particle
        masses warn (NegativeParticleMassWarning). :meth:`compile` refuses particles on nodes
        that do not move with the body. Returns the particle node names (primaries first)."""
        self._check_new_name(name, self._particle_bodies, "particle body")
        spec = particle_bodies.add_particle_body(self, name, reference_node, mass, com, inertia, particle_nodes, kind,
                                                 midpoint_nodes, plane_normal)
        for k, (node, m) in enumerate(zip(spec.nodes, spec.masses)):  # the particles: point masses
            self._bodies[f"{name}.p{k + 1}"] = BodySpec(f"{name}.p{k + 1}", node, m, readonly(np.zeros(3)),
                                                        readonly(np.zeros((3, 3))))
        self._particle_bodies[name] = spec
        return spec.nodes

    def add_particle_load(
        self,
        name: str,
        body: str,
        force: Any = None,
        point: Sequence[float] | None = None,
        couple: Any = None,
        follower: bool = False,
    ) -> tuple[str, ...]:
        """A force at ``point`` of particle body ``body`` and/or a couple on it, distributed over
        the body's primary particles as nodal loads (Attia §3): the force with the α of eq.
        (3.2) (same resultant and moment about any point; ``point`` in the reference node's
        axes relative to it, default the reference node), the couple as least-norm particle
        forces with zero resultant. ``force``/``couple``: 3-vectors or functions of time.
        The force is global unless ``follower``; the couple is always in the reference node's
        axes (body-fixed: a couple fixed in space would need orientation-dependent particle
        forces — apply it with :meth:`add_load` on the reference node). Returns the load names."""
        return particle_bodies.add_particle_load(self, name, body, force, point, couple, follower)

    # ------------------------------------------------------------------ helpers
    def _check_new_name(self, name: str, table: dict, what: str) -> None:
        if not isinstance(name, str) or not name:
            raise ModelError(f"{what} name {name!r} must be a non-empty string.")
        if name == "ground":
            raise ModelError(f"{what} name 'ground' is reserved for the fixed frame.")
        if name in table:
            raise ModelError(f"duplicate {what} name '{name}': every {what} needs its own name.")

    def _node_index(self, name: str, who: str) -> int:
        if name not in self._nodes:
            raise ModelError(f"{who}: unknown node '{name}'. Known nodes: {list(self._nodes)[:20]}.")
        return self._node_index_of[name]

    def _joint(self, name: str, who: str) -> JointSpec:
        if name not in self._joints:
            raise ModelError(f"{who}: unknown joint '{name}'. Known joints: {list(self._joints)[:20]}.")
        return self._joints[name]

    @staticmethod
    def _check_dof(jt: JointSpec, dof: int, who: str) -> None:
        if not 0 <= dof < jt.kind.n_scalar:
            raise ModelError(
                f"{who} on joint '{jt.name}': dof {dof} is not a scalar coordinate of a {jt.kind.name} "
                f"joint (it has {jt.kind.n_scalar}; ball rotations cannot be driven or sprung)."
            )

    # ------------------------------------------------------------------ compile
    def compile(self) -> Model:
        """Check the description, build the spanning tree and return an immutable Model
        (builder/compile.py), then run the checks that need it (builder/checks.py)."""
        if not self._nodes:
            raise ModelError("the model has no nodes; add_node() first.")
        model = compile_model(self)
        checks.check_model(model)
        return model


def _constant(value: float) -> Callable[[float], float]:
    """The function of time that always returns ``value``."""

    def f(t: float) -> float:
        return value

    return f

