"""Model description: a mutable :class:`ModelBuilder` compiled into an immutable :class:`Model`.

Everything is given in the *assembly configuration* (all joint coordinates zero), in global
coordinates: node positions and orientations, joint points and axes. Initial joint
coordinates ``q0`` and velocities ``u0`` then move the mechanism from there.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from flexmb.errors import ModelError
from flexmb.joints import JOINT_KINDS, JointKind
from flexmb.rotations import expm
from flexmb.timefunctions import ScalarDrive, as_time_function
from flexmb.topology import GROUND, Tree, build_tree, path_matrix, secondary_path_matrix

__all__ = ["ModelBuilder", "Model", "NodalLoad"]


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


@dataclass(frozen=True)
class BeamSection:
    """Beam section: Young's modulus E, shear modulus G, area A, second moments Iy, Iz (about
    the section axes e2, e3), torsion constant J, density rho; shear factors ky, kz for a
    Timoshenko section (None: Euler–Bernoulli)."""

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
        for f in ("E", "G", "A", "Iy", "Iz", "J", "rho") + (("ky",) if self.ky is not None else ()) + (
                ("kz",) if self.kz is not None else ()):
            v = getattr(self, f)
            if not (isinstance(v, (int, float, np.floating)) and math.isfinite(v) and v > 0):
                raise ModelError(f"beam section: {f} = {v!r} must be a positive finite number.")


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


@dataclass(frozen=True)
class Loop:
    """A closed loop of the mechanism and the elastic link(s) that cut it."""

    cut: str
    joints: tuple[str, ...]
    nodes: tuple[str, ...]
    elements: tuple[str, ...]


@dataclass(frozen=True)
class NodalLoad:
    """Force and moment on a node as functions of time; ``follower`` loads are given in the
    node frame (or in the frame of node ``axes_node`` if >= 0) and turn with it, fixed loads
    are global."""

    name: str
    node: int
    force: Callable[[float], np.ndarray]
    moment: Callable[[float], np.ndarray]
    follower: bool
    axes_node: int = -1


@dataclass
class _Joint:
    name: str
    kind: JointKind
    parent: int
    child: int
    point: np.ndarray | None
    axes: list[np.ndarray]
    q0: np.ndarray
    u0: np.ndarray


class ModelBuilder:
    """Collects nodes, bodies, joints, drives and loads; :meth:`compile` checks them and
    returns an immutable :class:`Model`.

    Example::

        mb = ModelBuilder(gravity=(0, -9.81, 0))
        mb.add_node("tip", position=(1, 0, 0))
        mb.add_body("rod", node="tip", mass=1.0, com=(-0.5, 0, 0), inertia=np.diag([0, 1, 1]) / 12)
        mb.add_joint("pin", "revolute", parent="ground", child="tip", point=(0, 0, 0), axis=(0, 0, 1))
        model = mb.compile()
    """

    def __init__(self, gravity: Sequence[float] = (0.0, 0.0, 0.0)) -> None:
        self._nodes: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._bodies: dict[str, tuple[int, float, np.ndarray, np.ndarray]] = {}
        self._joints: dict[str, _Joint] = {}
        self._drives: dict[tuple[str, int], ScalarDrive] = {}
        self._springs: dict[tuple[str, int], tuple[float, float, float]] = {}
        self._joint_forces: dict[tuple[str, int], Callable[[float], float]] = {}
        self._frictions: dict[str, tuple[float, float, float]] = {}  # joint -> (mu, pin radius, omega_eps)
        self._loads: dict[str, NodalLoad] = {}
        self._bushings: dict[str, tuple] = {}
        self._beams: dict[str, tuple] = {}
        self._particle_bodies: dict[str, Any] = {}  # name -> particle_bodies.ParticleBodySpec
        self.gravity = _vec(gravity, 3, "gravity")

    # ------------------------------------------------------------------ nodes, bodies
    def add_node(self, name: str, position: Sequence[float], rotation: Any = None) -> str:
        """Add a node (6-DOF frame) at ``position`` with orientation ``rotation`` (3x3, columns
        = node axes in global coordinates; identity by default)."""
        self._check_new_name(name, self._nodes, "node")
        x = _vec(position, 3, f"node '{name}' position")
        R = np.eye(3) if rotation is None else _mat3(rotation, f"node '{name}' rotation")
        if np.abs(R.T @ R - np.eye(3)).max() > 1e-9 or np.linalg.det(R) < 0:
            raise ModelError(f"node '{name}' rotation is not a proper rotation matrix (R^T R = I, det R = 1).")
        self._nodes[name] = (x, R)
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
        n = self._node_index(node, f"body '{name}'")
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
        self._bodies[name] = (n, float(mass), c, J)
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
        p = GROUND if parent == "ground" else self._node_index(parent, f"joint '{name}' parent")
        if child == "ground":
            raise ModelError(f"joint '{name}': ground cannot be a child; give ground as the parent.")
        c = self._node_index(child, f"joint '{name}' child")
        if p == c:
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
        self._joints[name] = _Joint(name, jk, p, c, pt, ax, q0a, u0a)
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
        self._drives[(joint, dof)] = d

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
        self._springs[(joint, dof)] = (float(stiffness), float(damping), float(rest))

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
        self._joint_forces[(joint, dof)] = f

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
        self._frictions[joint] = (float(mu), float(pin_radius), float(omega_eps))

    def add_load(
        self,
        name: str,
        node: str,
        force: Any = (0.0, 0.0, 0.0),
        moment: Any = (0.0, 0.0, 0.0),
        follower: bool = False,
    ) -> str:
        """Nodal force and moment (constant 3-vectors or functions of time returning them);
        ``follower=True`` gives them in node axes so they turn with the node."""
        self._check_new_name(name, self._loads, "load")
        n = self._node_index(node, f"load '{name}'")
        self._loads[name] = NodalLoad(
            name, n, as_time_function(force, f"load '{name}' force"),
            as_time_function(moment, f"load '{name}' moment"), bool(follower),
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
        a = GROUND if node_a == "ground" else self._node_index(node_a, f"bushing '{name}'")
        b = self._node_index(node_b, f"bushing '{name}'")
        if a == b:
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
        self._bushings[name] = (a, b, P, E, K, C, modes[free_rotation])
        return name

    def add_beam(
        self,
        name: str,
        node_a: str,
        node_b: str,
        section: BeamSection,
        z_hint: Sequence[float] = (0.0, 0.0, 1.0),
        damping: float = 0.0,
        _link: str | None = None,
    ) -> str:
        """One co-rotational beam element between two existing nodes (flexmb.elements.beam).

        The section's local axes: e1 from node_a to node_b, e2 = z_hint x e1 (normalised),
        e3 = e1 x e2; so with the default z_hint a beam in the x–y plane bends in that plane
        about e3 (using Iz). ``damping``: stiffness-proportional factor α [s] on the
        deformational velocities."""
        self._check_new_name(name, self._beams, "beam element")
        a = self._node_index(node_a, f"beam element '{name}'")
        b = self._node_index(node_b, f"beam element '{name}'")
        if not isinstance(section, BeamSection):
            raise ModelError(f"beam element '{name}': section must be a flexmb.BeamSection.")
        xa, xb = self._nodes[node_a][0], self._nodes[node_b][0]
        L0 = float(np.linalg.norm(xb - xa))
        if L0 < 1e-12:
            raise ModelError(f"beam element '{name}': nodes '{node_a}' and '{node_b}' coincide (zero length).")
        if not (math.isfinite(damping) and damping >= 0):
            raise ModelError(f"beam element '{name}': damping {damping!r} must be >= 0.")
        E0 = _section_frame(xb - xa, _vec(z_hint, 3, f"beam element '{name}' z_hint"), f"beam element '{name}'")
        self._beams[name] = (a, b, section, E0, L0, float(damping), node_a, node_b, _link or name)
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
                if np.linalg.norm(self._nodes[nd][0] - p) > 1e-9 * max(1.0, np.linalg.norm(p)):
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
            self.add_beam(f"{name}.e{i}", names[i], names[i + 1], section, z_hint, damping, _link=name)
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
        from flexmb.builder.particle_bodies import add_particle_body

        self._check_new_name(name, self._particle_bodies, "particle body")
        return add_particle_body(self, name, reference_node, mass, com, inertia, particle_nodes, kind,
                                 midpoint_nodes, plane_normal)

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
        from flexmb.builder.particle_bodies import add_particle_load

        return add_particle_load(self, name, body, force, point, couple, follower)

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
        return list(self._nodes).index(name)

    def _joint(self, name: str, who: str) -> _Joint:
        if name not in self._joints:
            raise ModelError(f"{who}: unknown joint '{name}'. Known joints: {list(self._joints)[:20]}.")
        return self._joints[name]

    @staticmethod
    def _check_dof(jt: _Joint, dof: int, who: str) -> None:
        if not 0 <= dof < jt.kind.n_scalar:
            raise ModelError(
                f"{who} on joint '{jt.name}': dof {dof} is not a scalar coordinate of a {jt.kind.name} "
                f"joint (it has {jt.kind.n_scalar}; ball rotations cannot be driven or sprung)."
            )

    # ------------------------------------------------------------------ compile
    def compile(self) -> Model:
        """Check the description, build the spanning tree and return an immutable Model."""
        if not self._nodes:
            raise ModelError("the model has no nodes; add_node() first.")
        model = Model._compile(self)
        if self._particle_bodies:
            from flexmb.builder.particle_bodies import check_particle_bodies

            check_particle_bodies(model)
        return model


def _constant(value: float) -> Callable[[float], float]:
    """The function of time that always returns ``value``."""

    def f(t: float) -> float:
        return value

    return f


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


@dataclass(frozen=True)
class Model:
    """Immutable compiled model: flat arrays over nodes, tree joints, bodies and coordinates.

    Tree joints are ordered parents first. Velocity coordinates ``u`` (length ``n_u``) are
    the joints' coordinates in that order; scalar coordinates ``q`` (length ``n_q``) omit the
    balls, whose rotations are kept as matrices (``n_ball`` of them).
    """

    node_names: tuple[str, ...]
    X0: np.ndarray
    R0: np.ndarray
    gravity: np.ndarray
    tree: Tree
    joint_names: tuple[str, ...]
    joint_kinds: tuple[JointKind, ...]
    joint_parent: np.ndarray
    joint_child: np.ndarray
    joint_point: np.ndarray  # in parent node axes (global for ground)
    joint_axes: np.ndarray  # (n_joints, 3, 3): axis i in parent node axes
    joint_child_offset: np.ndarray  # child origin - joint point, parent axes
    joint_child_rot: np.ndarray  # R_parent^T R_child at assembly
    joint_u_start: np.ndarray
    joint_q_start: np.ndarray
    joint_ball: np.ndarray  # ball index or -1
    coordinate_names: tuple[str, ...]
    u_is_ball: np.ndarray
    u_to_q: np.ndarray  # scalar index of each u or -1
    q0: np.ndarray
    balls0: np.ndarray
    u0: np.ndarray
    body_names: tuple[str, ...]
    body_node: np.ndarray
    body_mass: np.ndarray
    body_com: np.ndarray
    body_inertia: np.ndarray
    loads: tuple[NodalLoad, ...]
    driven: np.ndarray  # u indices that are driven
    drives: tuple[ScalarDrive, ...]
    spring_u: np.ndarray
    spring_k: np.ndarray
    spring_c: np.ndarray
    spring_rest: np.ndarray
    jforce_u: np.ndarray = field(default_factory=lambda: np.zeros(0, int))  # coordinates with applied joint forces
    jforce_f: tuple[Callable[[float], float], ...] = field(default=())
    # bearing friction (ModelBuilder.add_joint_friction, flexmb/friction.py): tree joint, its coordinate, mu, r, omega_eps
    friction_joint: np.ndarray = field(default_factory=lambda: np.zeros(0, int))
    friction_u: np.ndarray = field(default_factory=lambda: np.zeros(0, int))
    friction_mu: np.ndarray = field(default_factory=lambda: np.zeros(0))
    friction_radius: np.ndarray = field(default_factory=lambda: np.zeros(0))
    friction_omega_eps: np.ndarray = field(default_factory=lambda: np.zeros(0))
    auto_free_nodes: tuple[str, ...] = field(default=())
    bushing_names: tuple[str, ...] = field(default=())
    bushing_a: np.ndarray = field(default_factory=lambda: np.zeros(0, int))  # -1 = ground
    bushing_b: np.ndarray = field(default_factory=lambda: np.zeros(0, int))
    bushing_sa: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    bushing_Ea: np.ndarray = field(default_factory=lambda: np.zeros((0, 3, 3)))
    bushing_sb: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    bushing_Eb: np.ndarray = field(default_factory=lambda: np.zeros((0, 3, 3)))
    bushing_mode: np.ndarray = field(default_factory=lambda: np.zeros(0, int))
    bushing_K: np.ndarray = field(default_factory=lambda: np.zeros((0, 6, 6)))
    bushing_C: np.ndarray = field(default_factory=lambda: np.zeros((0, 6, 6)))
    beam_names: tuple[str, ...] = field(default=())
    beam_link: tuple[str, ...] = field(default=())
    beam_a: np.ndarray = field(default_factory=lambda: np.zeros(0, int))
    beam_b: np.ndarray = field(default_factory=lambda: np.zeros(0, int))
    beam_C1: np.ndarray = field(default_factory=lambda: np.zeros((0, 3, 3)))
    beam_C2: np.ndarray = field(default_factory=lambda: np.zeros((0, 3, 3)))
    beam_L0: np.ndarray = field(default_factory=lambda: np.zeros(0))
    beam_Kl: np.ndarray = field(default_factory=lambda: np.zeros((0, 7, 7)))
    beam_alpha: np.ndarray = field(default_factory=lambda: np.zeros(0))
    beam_mass: np.ndarray = field(default_factory=lambda: np.zeros(0))  # rho A L0
    beam_Ml: np.ndarray = field(default_factory=lambda: np.zeros((0, 12, 12)))  # local consistent masses
    loops: tuple[Loop, ...] = field(default=())
    # particle bodies (Attia): each particle is also a point-mass body "<name>.p<k>" above
    particle_body_names: tuple[str, ...] = field(default=())
    particle_body_nodes: tuple[tuple[int, ...], ...] = field(default=())  # node index of each particle
    particle_body_masses: tuple[tuple[float, ...], ...] = field(default=())  # its mass (may be negative)
    particle_body_reference: np.ndarray = field(default_factory=lambda: np.zeros(0, int))
    particle_body_kinds: tuple[str, ...] = field(default=())
    particle_body_planar: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))

    # -------------------------------------------------------------- sizes
    @property
    def n_nodes(self) -> int:
        """Number of nodes (6-DOF frames)."""
        return len(self.node_names)

    @property
    def n_joints(self) -> int:
        """Number of tree joints (user joints plus the free joints of free nodes)."""
        return len(self.joint_names)

    @property
    def n_u(self) -> int:
        """Number of velocity coordinates (driven ones included)."""
        return int(self.u_is_ball.size)

    @property
    def n_q(self) -> int:
        """Number of scalar (vector-space) position coordinates; ball rotations are kept apart."""
        return int(self.q0.size)

    @property
    def n_ball(self) -> int:
        """Number of ball rotations (spherical and free joints), each an SO(3) matrix."""
        return int(self.balls0.shape[0])

    @property
    def free_u(self) -> np.ndarray:
        """Velocity coordinates that are unknowns (not driven)."""
        mask = np.ones(self.n_u, dtype=bool)
        mask[self.driven] = False
        return np.flatnonzero(mask)

    def path_matrix(self) -> np.ndarray:
        """Preliminary path matrix pi (nodes x tree joints), Issa & Arczewski §2."""
        return path_matrix(self.tree)

    def secondary_path_matrix(self) -> np.ndarray:
        """Secondary path matrix pi* (nodes x tree joints), Issa & Arczewski §2."""
        return secondary_path_matrix(self.tree)

    def joint_index(self, name: str) -> int:
        """Index of the tree joint called ``name``."""
        try:
            return self.joint_names.index(name)
        except ValueError:
            raise ModelError(f"unknown joint '{name}'. Known joints: {list(self.joint_names)[:20]}.") from None

    def node_index(self, name: str) -> int:
        """Index of the node called ``name``."""
        try:
            return self.node_names.index(name)
        except ValueError:
            raise ModelError(f"unknown node '{name}'. Known nodes: {list(self.node_names)[:20]}.") from None

    def coordinate_index(self, joint: str, dof: int = 0) -> int:
        """Index in ``u`` of coordinate ``dof`` of ``joint``."""
        j = self.joint_index(joint)
        if not 0 <= dof < self.joint_kinds[j].n_u:
            raise ModelError(f"joint '{joint}' has no coordinate {dof}.")
        return int(self.joint_u_start[j] + dof)

    def initial_state(self):
        """The state at t = 0 from the joints' q0 and u0 (drives override their coordinates)."""
        from flexmb.state import State

        st = State(0.0, self.q0.copy(), self.balls0.copy(), self.u0.copy(), np.zeros(self.n_u))
        st.apply_drives(self, 0.0)
        return st

    def info(self) -> str:
        """Human-readable summary: nodes, bodies, joints, the tree and the coordinate count."""
        lines = [f"nodes: {self.n_nodes}, bodies: {len(self.body_names)}, tree joints: {self.n_joints}"]
        lines.append(f"coordinates: {self.n_u} velocity ({len(self.driven)} driven, {self.free_u.size} free)")
        for k, name in enumerate(self.joint_names):
            p = "ground" if self.joint_parent[k] == GROUND else self.node_names[self.joint_parent[k]]
            lines.append(f"  {name}: {self.joint_kinds[k].name} {p} -> {self.node_names[self.joint_child[k]]}")
        if self.auto_free_nodes:
            lines.append(f"free nodes (free joint to ground added): {list(self.auto_free_nodes)}")
        lines.append(f"bushings: {len(self.bushing_names)}")
        if not self.loops:
            lines.append("loops: none")
        for i, lp in enumerate(self.loops, 1):
            lines.append(
                f"loop {i}: cut at {lp.cut}; joints {list(lp.joints)}; nodes {list(lp.nodes)}; "
                f"elastic links {list(lp.elements)}"
            )
        return "\n".join(lines)

    # -------------------------------------------------------------- compile
    @classmethod
    def _compile(cls, mb: ModelBuilder) -> Model:
        node_names = list(mb._nodes)
        nn = len(node_names)
        X0 = np.array([mb._nodes[n][0] for n in node_names])
        R0 = np.array([mb._nodes[n][1] for n in node_names])
        joints = list(mb._joints.values())
        # nodes reached by no joint become free nodes (free joint to ground)
        # one node of every group of nodes with no joint path to ground (a lone node, or a
        # floating chain) gets a free joint to ground: the first declared node of the group
        root = list(range(nn + 1))  # union-find; index nn = ground

        def find(i: int) -> int:
            while root[i] != i:
                root[i] = root[root[i]]
                i = root[i]
            return i

        for j in joints:
            a, b = find(nn if j.parent == GROUND else j.parent), find(j.child)
            root[a] = b
        grounded = find(nn)
        auto, seen = [], set()
        for i in range(nn):
            r = find(i)
            if r != grounded and r not in seen:
                seen.add(r)
                auto.append(i)
        for i in auto:
            joints.append(_Joint(f"{node_names[i]}:free", JOINT_KINDS["free"], GROUND, i, None, [], np.zeros(6), np.zeros(6)))
        names = [j.name for j in joints]
        tree = build_tree(nn, [(j.parent, j.child) for j in joints], names, node_names)
        # a node reached from ground only through other paths still needs orientation: reversal
        nj = len(tree.order)
        jp = np.zeros((nj, 3))
        jax = np.zeros((nj, 3, 3))
        jrc = np.zeros((nj, 3))
        jC = np.zeros((nj, 3, 3))
        kinds, jnames, u_start, q_start, jball = [], [], [], [], []
        coord_names: list[str] = []
        u_is_ball: list[bool] = []
        q0: list[float] = []
        u0: list[float] = []
        balls0: list[np.ndarray] = []
        nu = nq = 0
        for k, j_idx in enumerate(tree.order):
            jt = joints[j_idx]
            p, c = int(tree.parent[k]), int(tree.child[k])
            rev = bool(tree.reversed[k])
            if rev and jt.kind.name not in ("revolute", "prismatic", "cylindrical", "fixed"):
                pname = node_names[jt.parent] if jt.parent >= 0 else "ground"
                raise ModelError(
                    f"joint '{jt.name}' ({jt.kind.name}) is reached from its child side: give it with its "
                    f"parent on the ground side of the tree (swap parent '{pname}' and child '{node_names[jt.child]}')."
                )
            Xp, Rp = (np.zeros(3), np.eye(3)) if p == GROUND else (X0[p], R0[p])
            P = jt.point if jt.point is not None else X0[jt.child]
            jp[k] = Rp.T @ (P - Xp)
            sign = -1.0 if rev else 1.0
            if jt.kind.name == "free":
                jax[k] = np.eye(3)  # translations along the parent's axes
            else:
                for i, a in enumerate(jt.axes):
                    jax[k, i] = sign * (Rp.T @ a)
            jrc[k] = Rp.T @ (X0[c] - P)
            jC[k] = Rp.T @ R0[c]
            kinds.append(jt.kind)
            jnames.append(jt.name)
            u_start.append(nu)
            q_start.append(nq)
            jball.append(len(balls0) if jt.kind.has_ball else -1)
            # coordinates
            ci = 0
            for comp, _ in jt.kind.components:
                if comp == "B":
                    rv = jt.q0[ci:ci + 3]
                    balls0.append(expm(rv))
                    u0.extend(jt.u0[ci:ci + 3])
                    coord_names += [f"{jt.name}.w{a}" for a in "xyz"]
                    u_is_ball += [True] * 3
                    ci += 3
                else:
                    q0.append(jt.q0[ci])
                    u0.append(jt.u0[ci])
                    coord_names.append(f"{jt.name}.{comp.lower()}{ci}" if jt.kind.n_u > 1 else f"{jt.name}.q")
                    u_is_ball.append(False)
                    ci += 1
            nu += jt.kind.n_u
            nq += jt.kind.n_scalar
        u_is_ball_a = np.array(u_is_ball, dtype=bool)
        u_to_q = np.full(nu, -1, dtype=int)
        u_to_q[~u_is_ball_a] = np.arange(nq)
        # drives and springs refer to (joint name, scalar dof)
        jstart = dict(zip(jnames, u_start))
        scalar_u = {}
        for k, name in enumerate(jnames):
            s = [u_start[k] + i for i, (cmp, _) in enumerate(_expand(kinds[k])) if cmp != "B"]
            scalar_u[name] = s
        driven = sorted((scalar_u[jn][dof], d) for (jn, dof), d in mb._drives.items())
        springs = sorted((scalar_u[jn][dof],) + v for (jn, dof), v in mb._springs.items())
        jforces = sorted(((scalar_u[jn][dof], f) for (jn, dof), f in mb._joint_forces.items()), key=lambda x: x[0])
        fric = sorted((jnames.index(jn),) + v for jn, v in mb._frictions.items())  # (tree joint, mu, r, omega_eps)
        bodies = list(mb._bodies.items())
        del jstart
        f = _frozen
        return cls(
            node_names=tuple(node_names),
            X0=f(X0), R0=f(R0), gravity=f(mb.gravity.copy()), tree=tree,
            joint_names=tuple(jnames), joint_kinds=tuple(kinds),
            joint_parent=f(tree.parent), joint_child=f(tree.child),
            joint_point=f(jp), joint_axes=f(jax), joint_child_offset=f(jrc), joint_child_rot=f(jC),
            joint_u_start=f(np.array(u_start, dtype=int)), joint_q_start=f(np.array(q_start, dtype=int)),
            joint_ball=f(np.array(jball, dtype=int)),
            coordinate_names=tuple(coord_names), u_is_ball=f(u_is_ball_a), u_to_q=f(u_to_q),
            q0=f(np.array(q0, dtype=float)), balls0=f(np.array(balls0).reshape(-1, 3, 3)), u0=f(np.array(u0, dtype=float)),
            body_names=tuple(b for b, _ in bodies),
            body_node=f(np.array([v[0] for _, v in bodies], dtype=int)),
            body_mass=f(np.array([v[1] for _, v in bodies], dtype=float)),
            body_com=f(np.array([v[2] for _, v in bodies]).reshape(-1, 3)),
            body_inertia=f(np.array([v[3] for _, v in bodies]).reshape(-1, 3, 3)),
            loads=tuple(mb._loads.values()),
            driven=f(np.array([u for u, _ in driven], dtype=int)), drives=tuple(d for _, d in driven),
            spring_u=f(np.array([s[0] for s in springs], dtype=int)),
            spring_k=f(np.array([s[1] for s in springs], dtype=float)),
            spring_c=f(np.array([s[2] for s in springs], dtype=float)),
            spring_rest=f(np.array([s[3] for s in springs], dtype=float)),
            jforce_u=f(np.array([u for u, _ in jforces], dtype=int)), jforce_f=tuple(fn for _, fn in jforces),
            friction_joint=f(np.array([c[0] for c in fric], dtype=int)),
            friction_u=f(np.array([u_start[c[0]] for c in fric], dtype=int)),
            friction_mu=f(np.array([c[1] for c in fric], dtype=float)),
            friction_radius=f(np.array([c[2] for c in fric], dtype=float)),
            friction_omega_eps=f(np.array([c[3] for c in fric], dtype=float)),
            auto_free_nodes=tuple(node_names[i] for i in auto),
            **_compile_bushings(mb, X0, R0),
            **_compile_beams(mb, X0, R0),
            **_compile_particles(mb),
            loops=_find_loops(
                node_names, [j for j in joints if not j.name.endswith(":free")],
                [(n, f"bushing '{n}'", v[0], v[1]) for n, v in mb._bushings.items()]
                + [(n, f"beam '{v[8]}' (element '{n}')", v[0], v[1]) for n, v in mb._beams.items()],
            ),
        )


def _compile_particles(mb: ModelBuilder) -> dict:
    from flexmb.builder.particle_bodies import compile_particle_bodies

    return {k: _frozen(v) if isinstance(v, np.ndarray) else v for k, v in compile_particle_bodies(mb).items()}


def _expand(kind: JointKind) -> list[tuple[str, int | None]]:
    """Components with the ball expanded into its three velocity coordinates."""
    out: list[tuple[str, int | None]] = []
    for comp, ax in kind.components:
        out += [(comp, ax)] * (3 if comp == "B" else 1)
    return out


def _compile_bushings(mb: ModelBuilder, X0: np.ndarray, R0: np.ndarray) -> dict:
    """Attachment offsets and axes of every bushing in its two node frames."""
    items = list(mb._bushings.items())
    n = len(items)
    out = dict(
        bushing_names=tuple(k for k, _ in items), bushing_a=np.zeros(n, int), bushing_b=np.zeros(n, int),
        bushing_sa=np.zeros((n, 3)), bushing_Ea=np.zeros((n, 3, 3)), bushing_sb=np.zeros((n, 3)),
        bushing_Eb=np.zeros((n, 3, 3)), bushing_mode=np.zeros(n, int), bushing_K=np.zeros((n, 6, 6)),
        bushing_C=np.zeros((n, 6, 6)),
    )
    for i, (_, (a, b, P, E, K, C, mode)) in enumerate(items):
        P = X0[b] if P is None else P
        Xa, Ra = (np.zeros(3), np.eye(3)) if a == GROUND else (X0[a], R0[a])
        out["bushing_a"][i], out["bushing_b"][i] = a, b
        out["bushing_sa"][i], out["bushing_Ea"][i] = Ra.T @ (P - Xa), Ra.T @ E
        out["bushing_sb"][i], out["bushing_Eb"][i] = R0[b].T @ (P - X0[b]), R0[b].T @ E
        out["bushing_mode"][i], out["bushing_K"][i], out["bushing_C"][i] = mode, K, C
    for k, v in out.items():
        if isinstance(v, np.ndarray):
            out[k] = _frozen(v)
    return out


def _find_loops(node_names: list[str], joints: list, links: list[tuple[str, str, int, int]]) -> tuple[Loop, ...]:
    """Loops closed by elastic links: adding the links one by one to the joint graph, a link whose
    ends are already connected closes a loop; the loop is the graph path between them."""
    from collections import deque

    adj: dict[int, list[tuple[int, str, str]]] = {}

    def link(a: int, b: int, name: str, kind: str) -> None:
        adj.setdefault(a, []).append((b, name, kind))
        adj.setdefault(b, []).append((a, name, kind))

    def path(a: int, b: int):
        prev: dict[int, tuple[int, str, str] | None] = {a: None}
        queue = deque([a])
        while queue:
            n = queue.popleft()
            if n == b:
                break
            for m, name, kind in adj.get(n, []):
                if m not in prev:
                    prev[m] = (n, name, kind)
                    queue.append(m)
        if b not in prev:
            return None
        nodes, edges = [b], []
        while prev[nodes[-1]] is not None:
            n, name, kind = prev[nodes[-1]]
            edges.append((name, kind))
            nodes.append(n)
        return nodes[::-1], edges[::-1]

    root: dict[int, int] = {}

    def find(i: int) -> int:
        root.setdefault(i, i)
        while root[i] != i:
            root[i] = root[root[i]]
            i = root[i]
        return i

    for j in joints:
        if j.kind.name != "free":  # a free joint constrains nothing: it closes no loop
            link(j.parent, j.child, j.name, "joint")
            root[find(j.parent)] = find(j.child)
    loops = []
    for name, label, a, b in links:
        ra, rb = find(a), find(b)
        found = path(a, b) if ra == rb else None  # search the graph only when a loop closes
        root[ra] = rb
        if found is not None:
            nodes, edges = found
            nm = ["ground" if x == GROUND else node_names[x] for x in nodes]
            loops.append(Loop(
                cut=label,
                joints=tuple(e for e, k in edges if k == "joint"),
                nodes=tuple(nm),
                elements=(name,) + tuple(e for e, k in edges if k == "element"),
            ))
        link(a, b, name, "element")
    return tuple(loops)


def _compile_beams(mb: ModelBuilder, X0: np.ndarray, R0: np.ndarray) -> dict:
    """Element arrays of all beams: node offsets of the section frame, stiffness, masses."""
    from flexmb.elements.beam import local_mass, local_stiffness

    items = list(mb._beams.items())
    n = len(items)
    out: dict = dict(beam_names=tuple(k for k, _ in items), beam_link=tuple(v[8] for _, v in items))
    if not n:
        return out
    a = np.array([v[0] for _, v in items], dtype=int)
    b = np.array([v[1] for _, v in items], dtype=int)
    secs = [v[2] for _, v in items]
    E0 = np.array([v[3] for _, v in items])
    L0 = np.array([v[4] for _, v in items])
    g = {f: np.array([getattr(s, f) for s in secs], dtype=float) for f in ("E", "G", "A", "Iy", "Iz", "J", "rho")}
    timo = [s.ky is not None for s in secs]
    if any(timo) and not all(timo):
        Kl = np.concatenate([local_stiffness(L0[i:i + 1], *(g[f][i] for f in ("E", "G", "A", "Iy", "Iz", "J")),
                                             secs[i].ky, secs[i].kz) for i in range(n)])
    else:
        Kl = local_stiffness(L0, g["E"], g["G"], g["A"], g["Iy"], g["Iz"], g["J"],
                             None if not timo[0] else np.array([s.ky for s in secs]),
                             None if not timo[0] else np.array([s.kz for s in secs]))
    out.update(
        beam_a=a, beam_b=b, beam_C1=np.swapaxes(R0[a], 1, 2) @ E0, beam_C2=np.swapaxes(R0[b], 1, 2) @ E0, beam_L0=L0,
        beam_Kl=Kl, beam_alpha=np.array([v[5] for _, v in items]), beam_mass=g["rho"] * g["A"] * L0,
        beam_Ml=local_mass(L0, g["rho"] * g["A"], g["rho"] * g["Iy"], g["rho"] * g["Iz"]),
    )
    for k, v in out.items():
        if isinstance(v, np.ndarray):
            out[k] = _frozen(v)
    return out
