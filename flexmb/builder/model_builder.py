"""The model builder: ``add_*`` calls check their input and store records (builder/records.py);
:meth:`ModelBuilder.compile` hands them to the compiler (builder/compile.py) and then runs the
checks that need the compiled model (builder/checks.py).

Everything is given in the *assembly configuration* (all joint coordinates zero), in global
coordinates: node positions and orientations, joint points and axes. Initial joint
coordinates ``q0`` and velocities ``u0`` then move the mechanism from there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np

from flexmb.builder import arguments as args
from flexmb.builder import checks, cut_defaults, particle_bodies
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
    RigidCutSpec,
    SpringSpec,
    check_beam,
    readonly,
)
from flexmb.elements import FAMILIES, ElementFamily
from flexmb.errors import ModelError
from flexmb.joints import JOINT_KINDS
from flexmb.model import Model
from flexmb.timefunctions import ScalarDrive

__all__ = ["ModelBuilder", "BeamSection"]


def _section_frame(axis: np.ndarray, z_hint: np.ndarray, who: str) -> np.ndarray:
    """Section frame E0 (columns e1 along ``axis``, e2 = z_hint x e1, e3 = e1 x e2)."""
    e1 = axis / np.linalg.norm(axis)
    e2 = np.cross(z_hint, e1)
    if np.linalg.norm(e2) < 1e-9:
        raise ModelError(f"{who}: z_hint {z_hint.tolist()} is parallel to the beam axis; give another direction.")
    e2 /= np.linalg.norm(e2)
    return np.stack([e1, e2, np.cross(e1, e2)], axis=1)


def _matrix6(value: Any, who: str, what: str) -> np.ndarray:
    """6 diagonal values or a symmetric positive semi-definite 6x6 matrix."""
    arr = args.array(value, ((6,), (6, 6)), who, what, "6 diagonal values or a 6x6 matrix")
    if arr.shape == (6,):
        arr = np.diag(arr)
    scale = max(1.0, float(np.abs(arr).max()))
    if np.abs(arr - arr.T).max() > 1e-12 * scale:
        raise ModelError(f"{who}: {what}: the matrix is not symmetric; a spring–damper needs a symmetric matrix.")
    ev = np.linalg.eigvalsh(arr / scale) * scale
    if ev.min() < -1e-12 * scale:
        raise ModelError(f"{who}: {what}: the matrix is indefinite (eigenvalue {ev.min():.3g}); "
                         "it must be positive semi-definite.")
    return arr


def _coordinates(value: Any, n: int, who: str, what: str) -> np.ndarray:
    """Initial coordinates or velocities of a joint: None (zeros), a number (n = 1) or n numbers."""
    if value is None:
        return np.zeros(n)
    if isinstance(value, (list, tuple, np.ndarray)) and np.ndim(value) != 0:
        arr = args.array(value, ((n,), (1,)), who, what, f"{n} number(s)")
    else:
        arr = np.array([args.number(value, who, what)])
    if arr.shape != (n,):
        raise ModelError(f"{who}: {what} needs {n} values, got {arr.size}.")
    return arr


def _rotation(value: Any, who: str, what: str) -> np.ndarray:
    """A proper rotation matrix (orthonormal columns, det 1)."""
    R = args.matrix3(value, who, what)
    if np.abs(R.T @ R - np.eye(3)).max() > 1e-9 or np.linalg.det(R) < 0:
        raise ModelError(f"{who}: {what} is not a proper rotation matrix (R^T R = I, det R = 1).")
    return R


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
        self._rigid_cuts: dict[str, RigidCutSpec] = {}
        self._beams: dict[str, BeamSpec] = {}
        self._particle_bodies: dict[str, ParticleBodySpec] = {}
        self._elements: dict[str, dict[str, Any]] = {}  # records of further element families, by family and name
        self.gravity = args.vector(gravity, 3, "ModelBuilder()", "gravity")

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
    def rigid_cuts(self) -> Mapping[str, RigidCutSpec]:
        """Rigid-limit cuts by name, in declaration order."""
        return MappingProxyType(self._rigid_cuts)

    @property
    def beams(self) -> Mapping[str, BeamSpec]:
        """Beam elements by name, in declaration order."""
        return MappingProxyType(self._beams)

    @property
    def particle_bodies(self) -> Mapping[str, ParticleBodySpec]:
        """Particle bodies by name, in declaration order."""
        return MappingProxyType(self._particle_bodies)

    @property
    def elements(self) -> Mapping[str, Mapping[str, Any]]:
        """Records added by :meth:`add_element`, by element family and element name."""
        return MappingProxyType({k: MappingProxyType(v) for k, v in self._elements.items()})

    # ------------------------------------------------------------------ nodes, bodies
    def add_node(self, name: str, position: Sequence[float], rotation: Any = None) -> str:
        """Add a node (6-DOF frame) at ``position`` with orientation ``rotation`` (3x3, columns
        = node axes in global coordinates; identity by default)."""
        who = f"add_node: node {name!r}"
        self._check_new_name(name, self._nodes, "node", "add_node")
        x = args.vector(position, 3, who, "position")
        R = np.eye(3) if rotation is None else _rotation(rotation, who, "rotation")
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
        who = f"add_body: body {name!r}"
        self._check_new_name(name, self._bodies, "body", "add_body")
        self._node_index(node, who)
        mass = args.number(mass, who, "mass", positive=True)
        c = args.vector(com, 3, who, "com")
        J = np.zeros((3, 3)) if inertia is None else args.matrix3(inertia, who, "inertia")
        if np.abs(J - J.T).max() > 1e-12 * max(1.0, np.abs(J).max()):
            raise ModelError(f"{who}: inertia tensor is not symmetric: {J.tolist()}.")
        ev = np.linalg.eigvalsh(J)
        tol = 1e-12 * max(1.0, ev.max())
        if not np.all(np.isfinite(ev)):
            raise ModelError(f"{who}: the principal moments of the inertia tensor overflow; give physical values.")
        if ev.min() < -tol:
            raise ModelError(f"{who}: inertia tensor is not positive semi-definite (principal moments {ev.tolist()}).")
        if ev[0] + ev[1] < ev[2] - tol:
            raise ModelError(
                f"{who}: principal moments {ev.tolist()} violate the triangle inequality "
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
        who = f"add_joint: joint {name!r}"
        self._check_new_name(name, self._joints, "joint", "add_joint")
        if not isinstance(kind, str) or kind not in JOINT_KINDS:
            raise ModelError(f"{who}: unknown kind {kind!r}; use one of {sorted(JOINT_KINDS)}.")
        jk = JOINT_KINDS[kind]
        args.node_name(parent, who, "parent")
        args.node_name(child, who, "child")
        if parent != "ground":
            self._node_index(parent, f"{who} parent")
        if child == "ground":
            raise ModelError(f"{who}: ground cannot be a child; give ground as the parent.")
        self._node_index(child, f"{who} child")
        if parent == child:
            raise ModelError(f"{who}: parent and child are the same node '{child}'.")
        if axes is None:
            given = []
        elif not isinstance(axes, (list, tuple, np.ndarray)):
            raise ModelError(f"{who}: axes = {axes!r} must be a list of axes (each 3 numbers).")
        else:
            given = list(axes)
        if axis is not None:
            given = [axis] + given
        if kind in ("free", "spherical", "fixed"):
            if given:
                raise ModelError(f"{who}: a {kind} joint takes no axis.")
        elif len(given) != jk.n_axes:
            raise ModelError(f"{who}: a {kind} joint needs {jk.n_axes} axis/axes, got {len(given)}.")
        ax = [args.unit(a, who, f"axis {i + 1}") for i, a in enumerate(given)]
        if kind == "universal" and abs(ax[0] @ ax[1]) > 1 - 1e-9:
            raise ModelError(f"{who}: the two universal-joint axes are parallel.")
        pt = None if point is None else args.vector(point, 3, who, "point")
        q0a = _coordinates(q0, jk.n_u, who, "q0")
        u0a = _coordinates(u0, jk.n_u, who, "u0")
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
        ``velocity``/``acceleration`` the derivatives are computed (complex step). Each function
        takes the time and returns one number."""
        who = f"add_drive: drive of joint {joint!r}"
        jt = self._joint(joint, who)
        dof = self._check_dof(jt, dof, who)
        if (joint, dof) in self._drives:
            raise ModelError(f"{who}: coordinate {dof} of joint '{joint}' is already driven; drive it once.")
        for f, what in ((position, "position"), (velocity, "velocity"), (acceleration, "acceleration")):
            if (f is not None or what == "position") and not callable(f):
                raise ModelError(f"{who}: {what} = {f!r} must be a function of time returning a number.")
            if f is not None:
                args.time_function(f, (), who, what)
        d = ScalarDrive(position, velocity, acceleration)
        try:
            vals = d(0.0)
        except Exception as exc:  # the user's functions: their failure is reported, not raised through
            raise ModelError(f"{who}: q, q', q'' at t = 0 could not be computed ({type(exc).__name__}: {exc}); "
                             "give functions of time returning one number each.") from None
        if not all(np.isfinite(v) for v in vals):
            raise ModelError(f"{who}: q, q', q'' at t = 0 are {vals}: not finite.")
        self._drives[(joint, dof)] = DriveSpec(joint, dof, d)

    def add_joint_spring(
        self, joint: str, stiffness: float, damping: float = 0.0, rest: float = 0.0, dof: int = 0
    ) -> None:
        """Linear spring and damper on coordinate ``dof`` of ``joint``:
        ``tau = -stiffness (q - rest) - damping q'``. One per coordinate: a second on the same
        coordinate is refused (give the sum of the stiffnesses and dampings once)."""
        who = f"add_joint_spring: joint spring on {joint!r}"
        jt = self._joint(joint, who)
        dof = self._check_dof(jt, dof, who)
        if (joint, dof) in self._springs:
            raise ModelError(f"{who}: coordinate {dof} of joint '{joint}' already has a joint spring; give one spring "
                             "per coordinate (with the summed stiffness and damping).")
        k = args.number(stiffness, who, "stiffness", nonnegative=True)
        c = args.number(damping, who, "damping", nonnegative=True)
        r = args.number(rest, who, "rest")
        self._springs[(joint, dof)] = SpringSpec(joint, dof, k, c, r)

    def add_joint_force(self, joint: str, force: float | Callable[[float], float], dof: int = 0) -> None:
        """Applied generalized force on coordinate ``dof`` of ``joint`` (a force along a prismatic
        axis, a torque about a revolute axis): a number or a function of time ``force(t)``. It
        enters tau of eq. (1) like a joint spring, and its work is reported as load work. On a
        driven coordinate the drive force is then what the actuator adds to it."""
        who = f"add_joint_force: joint force on {joint!r}"
        jt = self._joint(joint, who)
        dof = self._check_dof(jt, dof, who)
        if (joint, dof) in self._joint_forces:
            raise ModelError(f"{who}: coordinate {dof} of joint '{joint}' already has one; give their sum once.")
        if callable(force):
            f = args.time_function(force, (), who, "force")
        else:
            f = _constant(args.number(force, who, "force"))
        self._joint_forces[(joint, dof)] = JointForceSpec(joint, dof, f)

    def add_joint_friction(self, joint: str, mu: float, pin_radius: float, omega_eps: float = 1e-3) -> None:
        """Coulomb friction in the bearing of revolute ``joint`` (Zahariev & Cuadrado §1, §5): the
        torque -mu pin_radius |F_perp| tanh(q'/omega_eps) on its coordinate, F_perp the joint's
        reaction force normal to the axis (implicit in the accelerations); ``omega_eps`` [rad/s]
        regularises sign(q') near rest (flexmb/engine/friction.py, eq. 1, explains the choice)."""
        who = f"add_joint_friction: joint friction on {joint!r}"
        jt = self._joint(joint, who)
        if jt.kind.name != "revolute":
            raise ModelError(f"{who}: only revolute joints have a bearing model here "
                             f"(it is {jt.kind.name}); give a revolute joint.")
        if joint in self._frictions:
            raise ModelError(f"{who}: joint '{joint}' already has friction; give it once.")
        mu = args.number(mu, who, "mu", nonnegative=True)
        r = args.number(pin_radius, who, "pin_radius", positive=True)
        eps = args.number(omega_eps, who, "omega_eps", positive=True)
        self._frictions[joint] = FrictionSpec(joint, mu, r, eps)

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
        who = f"add_load: load {name!r}"
        self._check_new_name(name, self._loads, "load", "add_load")
        self._node_index(node, who)
        follower = args.flag(follower, who, "follower")
        if axes_node is not None:
            self._node_index(axes_node, f"{who} axes_node")
            if not follower:
                raise ModelError(f"{who}: axes_node is for follower loads; give follower=True or no axes_node.")
        f = args.time_function(force, (3,), who, "force")
        m = args.time_function(moment, (3,), who, "moment")
        self._loads[name] = LoadSpec(name, node, f, m, follower, axes_node)
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
        """Elastic link (6x6 spring–damper, elements/bushing.py) between the frames of ``node_a``
        (or ``"ground"``) and ``node_b``: an elastic cut joint; bushings may close loops.

        ``point``: where the bushing acts, global, in the assembly configuration. It is required
        unless the two ends coincide (node_a's and node_b's positions are equal; ground counts as
        the origin), and then defaults to that common position. Give the point of the joint the
        bushing replaces: a bushing elsewhere builds another mechanism. The point is carried by
        both node frames: p_a by node_a, p_b by node_b (equal at assembly).

        ``axes``: the bushing axes x, y, z as the columns of a rotation matrix, global, in the
        assembly configuration (default: the global axes); carried by both node frames,
        A = R_a E_a and B = R_b E_b.

        ``stiffness`` / ``damping``: 6 diagonal values or a symmetric positive semi-definite 6x6
        matrix on d = (dx, dy, dz, rx, ry, rz) in bushing axes: first the three translations of
        p_b relative to p_a along A's x, y, z (d = A^T (p_b - p_a), N/m), then the three rotations
        of B relative to A about x, y, z (the rotation vector log(A^T B), N m/rad). A zero entry
        leaves that direction free (a rotation only for small angles: use ``free_rotation``).

        ``damping=None`` (the default): for a bushing that closes a loop (a cut), chosen by the
        compiler so that every local mode of the cut has the damping ratio 0.5, from its stiffness
        and the inertia it couples at the start (0 for a bushing on no loop)
        (flexmb.builder.cut_defaults, eq. (D1)-(D8)); ``flexmb info`` lists it. Any value given
        (6 diagonal values or a 6x6 matrix; ``damping=0``: undamped) is used as given (an undamped
        cut rings: its forces then depend on the step).

        ``free_rotation``: None holds all three rotations (log(A^T B)); ``"x"``, ``"y"`` or ``"z"``
        frees the rotation about that bushing axis for any angle (a revolute bushing): the
        rotational deformation becomes the rotation vector that tilts axis k of A onto axis k of B
        (elements/bushing.py eq. (2b)), which only keeps the two axes aligned, so the entry of that
        axis is unused and the two others resist its tilt; ``"all"`` frees all rotations (a
        spherical bushing: only the translations act).

        The cut force (what the bushing exerts on node_b at the point, in bushing axes and
        globally) is recorded in every result: ``Result.cut_force(name)``."""
        who = f"add_bushing: bushing {name!r}"
        K = _matrix6(stiffness, who, "stiffness")
        if damping is not None and np.ndim(damping) == 0 and not isinstance(damping, (str, bytes)) and damping == 0:
            damping = np.zeros(6)  # damping=0: undamped, said in one number
        C = None if damping is None else readonly(_matrix6(damping, who, "damping"))
        P, E, mode = self._cut_frame(name, node_a, node_b, point, axes, free_rotation, who, "add_bushing")
        self._bushings[name] = BushingSpec(name, node_a, node_b, readonly(P), readonly(E), readonly(K), C, mode)
        return name

    def add_rigid_cut(
        self,
        name: str,
        node_a: str,
        node_b: str,
        point: Sequence[float] | None = None,
        axes: Any = None,
        free_rotation: str | None = None,
        tolerance: float | None = None,
        penalty: float | None = None,
    ) -> str:
        """A rigid-limit loop cut (flexmb.elements.rigid_cut): the joint between ``node_a`` (or
        ``"ground"``) and ``node_b`` held exactly, by an augmented Lagrangian (index 3, Bayo &
        Ledesma 1996, with mass-orthogonal projections of the velocities and accelerations,
        elements/rigid_cut.py, docs/rigid_cuts.md) instead
        of a stiff spring. Use it where the loop is to be rigid; use :meth:`add_bushing` where the
        link is physically elastic, or where a drive moves the loop through a singular
        configuration (a rigid loop cannot follow that: its cut forces grow without bound, and the
        run stops with a message saying so).

        ``point``, ``axes``, ``free_rotation``: the cut frame and the rotation it leaves free, as
        for :meth:`add_bushing` (``free_rotation="z"``: a revolute pin about the cut's z axis;
        ``"all"``: a spherical joint; None: a weld). The closure Φ(q) (the bushing deformation of
        its held directions) is kept below ``tolerance`` [m for translations, rad for rotations]
        at every step, or the step fails saying so; None (the default): 1e-10 times the model's size
        (the extent of its nodes) for the translations, 1e-10 rad for the rotations, so the same
        mechanism at another size or place is held alike. ``penalty``: α [N/m; N m/rad for rotations] of
        the augmented Lagrangian; None (the default) chooses α = 1e4 m_eff / β' per step (m_eff the
        cut's largest effective mass at the start, β' = β h² (1-αf)/(1-αm); docs/rigid_cuts.md
        (AL7)), raised tenfold within a step that converges slowly (AL11). Redundant cuts (an
        overconstrained loop such as Bricard's) are allowed.

        The cut force (the multipliers, what the cut exerts on node_b at the point) is recorded in
        every result like a bushing's: ``Result.cut_force(name)``."""
        who = f"add_rigid_cut: rigid cut {name!r}"
        P, E, mode = self._cut_frame(name, node_a, node_b, point, axes, free_rotation, who, "add_rigid_cut")
        tol = None if tolerance is None else args.number(tolerance, who, "tolerance", positive=True)
        alpha = None if penalty is None else args.number(penalty, who, "penalty", positive=True)
        self._rigid_cuts[name] = RigidCutSpec(name, node_a, node_b, readonly(P), readonly(E), mode, tol, alpha)
        return name

    def _cut_frame(self, name: str, node_a: str, node_b: str, point: Any, axes: Any, free_rotation: Any, who: str,
                   call: str) -> tuple[np.ndarray, np.ndarray, int]:
        """Checked name, ends, point, axes and free-rotation mode of a cut (bushing or rigid cut)."""
        self._check_new_name(name, self._bushings, "bushing", call)
        self._check_new_name(name, self._rigid_cuts, "rigid cut", call)
        self._check_new_name(name, self._joints, "joint or cut", call)
        args.node_name(node_a, who, "node_a")
        if node_a != "ground":
            self._node_index(node_a, who)
        self._node_index(node_b, who)
        if node_a == node_b:
            raise ModelError(f"{who}: both ends are node '{node_b}'.")
        modes = {None: -1, "x": 0, "y": 1, "z": 2, "all": 3}
        if not (free_rotation is None or isinstance(free_rotation, str)) or free_rotation not in modes:
            raise ModelError(f"{who}: free_rotation {free_rotation!r} must be one of {list(modes)}.")
        xa = np.zeros(3) if node_a == "ground" else self._nodes[node_a].position
        xb = self._nodes[node_b].position
        if point is not None:
            P = args.vector(point, 3, who, "point")
        elif np.linalg.norm(xb - xa) <= 1e-12 * max(1.0, float(np.abs(xb).max()), float(np.abs(xa).max())):
            P = xb.copy()  # the ends coincide: their common position
        else:
            where = "ground's origin (0, 0, 0)" if node_a == "ground" else f"node '{node_a}' at {xa.tolist()}"
            raise ModelError(f"{who}: give point, where the cut acts (the point of the joint it replaces): "
                             f"node '{node_b}' at {xb.tolist()} and {where} do not coincide, so no default is "
                             f"safe; point={tuple(xb.tolist())} would put it at node '{node_b}'.")
        E = np.eye(3) if axes is None else _rotation(axes, who, "axes")
        return P, E, modes[free_rotation]

    def add_beam(
        self,
        name: str,
        node_a: str,
        node_b: str,
        section: BeamSection,
        z_hint: Sequence[float] = (0.0, 0.0, 1.0),
        damping: float | None = None,
    ) -> str:
        """One co-rotational beam element between two existing nodes (flexmb.elements.beam).

        The section's local axes: e1 from node_a to node_b, e2 = z_hint x e1 (normalised),
        e3 = e1 x e2; so with the default z_hint a beam in the x–y plane bends in that plane
        about e3 (using Iz). ``damping``: stiffness-proportional factor α [s] on the
        deformational velocities; None (the default): 0, except in a beam that closes a loop, where
        the compiler gives its axial mode the damping ratio 0.5 (flexmb.builder.cut_defaults, eq.
        (D4)); a value given, 0 included, is used as given."""
        return self._add_beam_element(name, node_a, node_b, section, z_hint, damping, name)

    def _add_beam_element(self, name: str, node_a: str, node_b: str, section: BeamSection, z_hint: Sequence[float],
                          damping: float | None, link: str) -> str:
        """add_beam for an element of flexible link ``link``."""
        who = f"add_beam: beam element {name!r}"
        self._check_new_name(name, self._beams, "beam element", "add_beam")
        self._node_index(node_a, who)
        self._node_index(node_b, who)
        if not isinstance(section, BeamSection):
            raise ModelError(f"{who}: section = {section!r} must be a flexmb.BeamSection.")
        xa, xb = self._nodes[node_a].position, self._nodes[node_b].position
        L0 = float(np.linalg.norm(xb - xa))
        if L0 < 1e-12:
            raise ModelError(f"{who}: nodes '{node_a}' and '{node_b}' coincide (zero length).")
        check_beam(section, L0, 1, who, f"the length between nodes '{node_a}' and '{node_b}'")
        damping = None if damping is None else args.number(damping, who, "damping", nonnegative=True)
        E0 = _section_frame(xb - xa, args.direction(z_hint, who, "z_hint"), who)
        self._beams[name] = BeamSpec(name, node_a, node_b, section, readonly(E0), L0, damping, link)
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
        damping: float | None = None,
    ) -> list[str]:
        """A beam of ``n_elements`` elements from ``point_a`` to ``point_b``. Its end nodes are
        new nodes ``name.0`` and ``name.<n>`` unless ``node_a``/``node_b`` name existing nodes to
        share (a body's node: the link is then fixed to that body); interior nodes are free.
        Join the ends to bodies or ground with any joint. Returns the node names, a to b.
        ``damping``: stiffness-proportional factor α [s] of its elements; None (the default): 0,
        or, where the link closes a loop (a cut), α = 2 ζ / ω_ax with ζ = 0.5 for its axial mode
        (flexmb.builder.cut_defaults, eq. (D4)); ``flexmb info`` lists it."""
        who = f"add_flexible_link: flexible link {name!r}"
        args.name(name, who)
        n_elements = args.integer(n_elements, who, "n_elements", low=1)
        pa = args.vector(point_a, 3, who, "point_a")
        pb = args.vector(point_b, 3, who, "point_b")
        length = float(np.linalg.norm(pb - pa))
        if length < 1e-12:
            raise ModelError(f"{who}: point_a and point_b coincide; a beam needs a length.")
        if not isinstance(section, BeamSection):
            raise ModelError(f"{who}: section = {section!r} must be a flexmb.BeamSection.")
        check_beam(section, length, n_elements, who, "the distance from point_a to point_b")
        damping = None if damping is None else args.number(damping, who, "damping", nonnegative=True)
        for nd, p, what in ((node_a, pa, "node_a"), (node_b, pb, "node_b")):
            if nd is not None:
                self._node_index(nd, f"{who} {what}")
                if np.linalg.norm(self._nodes[nd].position - p) > 1e-9 * max(1.0, np.linalg.norm(p)):
                    raise ModelError(f"{who}: node '{nd}' is not at the link's end point {p.tolist()}.")
        if node_a is not None and node_a == node_b:
            raise ModelError(f"{who}: node_a and node_b are the same node '{node_a}'.")
        E0 = _section_frame(pb - pa, args.direction(z_hint, who, "z_hint"), who)
        new = [f"{name}.{i}" for i in range(n_elements + 1)
               if not (i == 0 and node_a is not None) and not (i == n_elements and node_b is not None)]
        for nm in new:
            self._check_new_name(nm, self._nodes, "node", "add_flexible_link")
        for i in range(n_elements):
            self._check_new_name(f"{name}.e{i}", self._beams, "beam element", "add_flexible_link")
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
        self._check_new_name(name, self._particle_bodies, "particle body", "add_particle_body")
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

    # ------------------------------------------------------------------ element families
    def add_element(self, family: str, record: Any) -> str:
        """Add one element of a registered element family (flexmb.elements.FAMILIES) that has no
        ``add_*`` method of its own: ``record`` is the family's frozen record (a dataclass with a
        ``name``, node names and parameters), read back by the family's compile. Node names are
        checked here when the record has ``node_a``/``node_b``/``nodes``; the family checks the
        rest. Returns the element's name."""
        who = f"add_element: {family!r} element"
        if family not in FAMILIES:
            raise ModelError(f"{who}: no element family {family!r} is registered (flexmb.elements.register); known: "
                             f"{list(FAMILIES)}.")
        if type(FAMILIES[family]).records is not ElementFamily.records:
            raise ModelError(f"{who}: this family reads its records from a builder method of its own (add_body, "
                             "add_particle_body, add_bushing, add_beam, ...): use that.")
        name = getattr(record, "name", None)
        table = self._elements.setdefault(family, {})
        self._check_new_name(name, table, f"{family} element", "add_element")
        nodes = [getattr(record, k) for k in ("node_a", "node_b") if hasattr(record, k)] + list(getattr(record, "nodes", ()))
        for n in nodes:
            if n != "ground":
                self._node_index(n, f"add_element: {family} element '{name}'")
        table[name] = record
        return name

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _check_new_name(name: str, table: Mapping[str, Any], what: str, call: str) -> None:
        if not isinstance(name, str) or not name:
            raise ModelError(f"{call}: {what} name {name!r} must be a non-empty string.")
        if name == "ground":
            raise ModelError(f"{call}: {what} name 'ground' is reserved for the fixed frame.")
        if name in table:
            raise ModelError(f"{call}: duplicate {what} name '{name}': every {what} needs its own name.")

    def _node_index(self, name: str, who: str) -> int:
        if not isinstance(name, str) or name not in self._nodes:
            raise ModelError(f"{who}: unknown node {name!r}. Known nodes: {list(self._nodes)[:20]}.")
        return self._node_index_of[name]

    def _joint(self, name: str, who: str) -> JointSpec:
        if not isinstance(name, str) or name not in self._joints:
            raise ModelError(f"{who}: unknown joint {name!r}. Known joints: {list(self._joints)[:20]}.")
        return self._joints[name]

    @staticmethod
    def _check_dof(jt: JointSpec, dof: Any, who: str) -> int:
        dof = args.integer(dof, who, "dof")
        if not 0 <= dof < jt.kind.n_scalar:
            raise ModelError(
                f"{who}: dof {dof} is not a scalar coordinate of joint '{jt.name}', a {jt.kind.name} "
                f"joint (it has {jt.kind.n_scalar}; ball rotations cannot be driven or sprung)."
            )
        return dof

    # ------------------------------------------------------------------ compile
    def compile(self, require_mass: bool = True) -> Model:
        """Check the description, build the spanning tree and return an immutable Model
        (builder/compile.py), then run the checks that need it (builder/checks.py).

        A coordinate that moves no mass (a node without a body or beam, a zero-inertia body on
        a spherical joint, a revolute joint turning a point mass about itself) is refused,
        naming the coordinate, its joint and node: the solvers start from M̄ u' = Q and need M̄
        positive definite. ``require_mass=False`` skips that test, for models used for
        kinematics or statics only (simulate then fails on them); masses that overflow are
        refused either way. Then the compiler chooses what the user left to it for the loop cuts
        (flexmb.builder.cut_defaults: the damping of bushings and loop-closing beams given
        ``damping=None``, the effective masses, the rigid cuts' penalty scale), from the model at
        its start; ``flexmb info`` lists them."""
        if not self._nodes:
            raise ModelError("the model has no nodes; add_node() first.")
        args.flag(require_mass, "compile", "require_mass")
        model = compile_model(self)
        checks.check_model(model, require_mass=require_mass)
        return cut_defaults.finish(model)  # the cuts' default damping and effective masses (issue 12.1)


def _constant(value: float) -> Callable[[float], float]:
    """The function of time that always returns ``value``."""

    def f(t: float) -> float:
        return value

    return f

