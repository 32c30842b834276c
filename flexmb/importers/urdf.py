"""URDF import: a robot description becomes a :class:`~flexmb.ModelBuilder` (issue 37).

``from_urdf(path, base="fixed")`` reads the file with yourdfpy (a maintained URDF parser, needed
only here: ``pip install yourdfpy``), after flexmb.importers.urdf_xml has checked every tag it
reads (a malformed file raises URDFError naming the tag and its line) and listed those it does not
read. Every link becomes a node at the link frame, global, in the assembly configuration (all joint
coordinates zero: the URDF's zero pose), and, if it has mass, a body on it (the body's name is the
link's): mass, centre of mass = the <inertial> origin (link axes), inertia turned from the inertial
frame into link axes, J = R_i J_urdf R_iᵀ. Every joint becomes a flexmb joint of the same name,
its point the child link's origin and its axis the URDF axis turned into global axes:

==========  =======================================================================================
URDF        flexmb
==========  =======================================================================================
revolute    revolute (its limits kept in ``builder.robot``, not enforced: flexmb has no joint stops)
continuous  revolute
prismatic   prismatic (limits as for revolute)
fixed       fixed
floating    free (three translations along the parent link's axes, then a ball)
planar      prismatic ``<j>:t1`` and ``<j>:t2`` along two directions in the plane (normal × x, or
            normal × y where x is the normal; then normal × t1), each to a massless node of that
            name at the child's frame, then revolute ``<j>`` about the normal: flexmb has no planar
            joint; the massless nodes are allowed because every coordinate moves the child's mass
==========  =======================================================================================

The root link hangs on ground by ``root_joint``: fixed (``base="fixed"``) or free
(``base="free"``: a floating base, coordinates ``root_joint.t0..t2`` the velocity of the root
frame's origin in global axes, ``root_joint.wx..wz`` its angular velocity in its own axes). A joint's
``<dynamics damping>`` becomes a joint damper (``add_joint_spring(joint, 0, damping)``); a nonzero
``friction`` (a constant Coulomb torque) has no flexmb equivalent and is listed. A mimic joint
``<mimic joint="l" multiplier="m" offset="o"/>`` becomes the rigid coupling ``<joint>:mimic``, q = m q_l + o
(ModelBuilder.add_coupling); one on a joint of several coordinates (planar, floating) or with m = 0 stays an
independent joint and is listed. Everything left
out — tags, attributes, limits not enforced, such mimic joints, friction, inertia of massless links — is
named in one URDFWarning; ``builder.robot`` keeps what was read (links, joints, limits, what was left
out). With ``shapes="visual"`` (or ``"collision"``) the links' geometries become shapes on their nodes
(flexmb.builder.shapes). The builder is an ordinary ModelBuilder: add drives, loads, cuts, then
compile().
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from flexmb.builder.flexible import make_flexible
from flexmb.builder.model_builder import ModelBuilder
from flexmb.builder.shapes import add_visual, box_mesh, cylinder_mesh, sphere_mesh
from flexmb.errors import BackendError, ModelError, URDFError, URDFWarning
from flexmb.importers import urdf_xml

__all__ = ["from_urdf", "RobotBuilder", "RobotInfo", "URDFJoint", "URDFLink"]


@dataclass(frozen=True, eq=False)
class URDFLink:
    """A link as imported: its node (the link frame, global at assembly: ``position``, ``rotation``),
    its body's name (None without mass) and mass properties in link axes, and its line in the file."""

    name: str
    line: int
    position: np.ndarray
    rotation: np.ndarray
    mass: float
    com: np.ndarray
    inertia: np.ndarray
    body: str | None


@dataclass(frozen=True, eq=False)
class URDFJoint:
    """A joint as imported: URDF ``type``, the flexmb joints made of it (``flexmb_joints``, in order
    from the parent; one except for planar) and their coordinate names, its limits (None where the
    file gives none; enforced by nothing), damping and friction, and the joint it mimics (``mimic``:
    (joint, multiplier, offset) or None; imported as the rigid coupling ``<name>:mimic``)."""

    name: str
    line: int
    type: str
    parent: str
    child: str
    flexmb_joints: tuple[str, ...]
    coordinates: tuple[str, ...]
    lower: float | None
    upper: float | None
    effort: float | None
    velocity: float | None
    damping: float
    friction: float
    mimic: tuple[str, float, float] | None


@dataclass(eq=False)
class RobotInfo:
    """What from_urdf read: the robot's ``name``, the file, the ``root`` link and its joint to ground
    (``root_joint``, of kind ``base``), the links and joints by name (file order), and ``left_out``: the
    lines of the URDFWarning (what was not imported, or not as the file says)."""

    name: str
    path: Path
    root: str
    base: str
    root_joint: str
    links: dict[str, URDFLink] = field(default_factory=dict)
    joints: dict[str, URDFJoint] = field(default_factory=dict)
    left_out: list[str] = field(default_factory=list)

    def coordinates(self) -> list[str]:
        """The flexmb coordinate names of the URDF's moving joints in file order (the root joint's first
        when the base is free)."""
        out = [f"{self.root_joint}.{c}" for c in ("t0", "t1", "t2", "wx", "wy", "wz")] if self.base == "free" else []
        for j in self.joints.values():
            out += list(j.coordinates)
        return out


class RobotBuilder(ModelBuilder):
    """A ModelBuilder made by :func:`from_urdf`; ``robot`` (:class:`RobotInfo`) says what it was made
    of. Extend it as any builder (drives, loads, cuts), then ``compile()``."""

    def __init__(self, gravity: Sequence[float], robot: RobotInfo) -> None:
        super().__init__(gravity=gravity)
        self.robot = robot

    def make_flexible(self, link: str, n_elements: int, section: Any, **kwargs: Any) -> Any:
        """Replace rigid ``link`` by beam elements: :func:`flexmb.builder.flexible.make_flexible`."""
        return make_flexible(self, link, n_elements, section, **kwargs)


def _yourdfpy():
    try:
        import yourdfpy  # an optional dependency, needed only by this import (pyproject.toml: the urdf extra)
    except ImportError:
        raise BackendError("flexmb.from_urdf needs the URDF parser yourdfpy, which is not installed.",
                           hint="pip install yourdfpy  (or pip install 'flexmb[urdf]')") from None
    return yourdfpy


def _frame(T: np.ndarray | None) -> np.ndarray:
    return np.eye(4) if T is None else np.asarray(T, dtype=float)


def _in_plane(normal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two unit directions t1, t2 spanning the plane normal to ``normal`` (unit), t1 x t2 = normal."""
    e = np.eye(3)[0] if abs(normal[0]) < 0.9 else np.eye(3)[1]
    t1 = np.cross(normal, e)
    t1 /= np.linalg.norm(t1)
    return t1, np.cross(normal, t1)


def from_urdf(path: str | os.PathLike, base: str = "fixed", gravity: Sequence[float] = (0.0, 0.0, -9.81),
              root_joint: str = "root_joint", shapes: str | None = None,
              package_dirs: Mapping[str, str | os.PathLike] | None = None, mimic: bool = True) -> RobotBuilder:
    """A :class:`RobotBuilder` of the robot described by the URDF file ``path`` (module docstring).

    ``base``: ``"fixed"`` (the root link welded to ground) or ``"free"`` (a floating base: a free
    joint from ground to the root link). ``gravity``: global, default −9.81 m/s² along z (URDF frames
    are z-up). ``root_joint``: the name of the root link's joint to ground. ``shapes``: ``"visual"`` or
    ``"collision"``: the links' geometries of that kind become shapes on their nodes
    (flexmb.builder.shapes.add_visual: meshes read by meshio, Collada by trimesh; boxes, cylinders,
    spheres), drawn in the ParaView files and the animation; None (default): none. Mesh files named
    ``package://<package>/<path>`` are looked for in ``package_dirs[<package>]``, then as the
    path's tails below the URDF's folder (``meshes/ur5/collision/base.stl`` for
    ``package://example-robot-data/robots/ur_description/meshes/ur5/collision/base.stl``); a mesh not
    found or unreadable is named in the warning. ``mimic``: True (default) imports each ``<mimic>`` as a
    rigid coupling; False leaves mimic joints independent (as Pinocchio's ``buildModelFromUrdf`` does, so
    the two give the same dynamics) and names them in the warning. Raises URDFError for a malformed file (naming the tag
    and line), BackendError if yourdfpy is missing; warns once (URDFWarning) listing what was not
    imported."""
    if base not in ("fixed", "free"):
        raise ModelError(f"from_urdf: base = {base!r} must be 'fixed' or 'free'.")
    if shapes not in (None, "visual", "collision"):
        raise ModelError(f"from_urdf: shapes = {shapes!r} must be 'visual', 'collision' or None.")
    p = Path(path)
    if not p.is_file():
        raise URDFError(f"URDF {p}: no such file.")
    inv = urdf_xml.read(p, shapes)
    if root_joint in inv.joints:
        raise URDFError(f"URDF {inv.where(inv.joints[root_joint])}: <joint> '{root_joint}': the name is taken for the "
                        "root link's joint to ground; give from_urdf another root_joint name.")
    ydp = _yourdfpy()
    try:  # the file passed flexmb's checks (urdf_xml.read); this names what yourdfpy still refuses
        urdf = ydp.URDF.load(urdf_xml.without_geometries(p, shapes), build_scene_graph=False, load_meshes=False,
                             load_collision_meshes=False)
    except Exception as exc:  # yourdfpy raises several kinds for files it cannot parse
        raise URDFError(f"URDF {p}: yourdfpy cannot read it ({type(exc).__name__}: {exc}).") from None
    robot = urdf.robot
    info = RobotInfo(robot.name or p.stem, p, inv.root, base, root_joint)
    mb = RobotBuilder(gravity, info)
    links = {lk.name: lk for lk in robot.links}
    joints = {j.name: j for j in robot.joints}
    by_parent: dict[str, list[str]] = {}
    for j in robot.joints:
        by_parent.setdefault(j.parent, []).append(j.name)
    notes = _Notes()

    T = {inv.root: np.eye(4)}
    _add_link(mb, info, inv, links[inv.root], T[inv.root], notes)
    mb.add_joint(root_joint, base, "ground", inv.root)
    stack = [inv.root]
    while stack:  # parents first, the file's joint order among siblings
        link = stack.pop(0)
        for jn in by_parent.get(link, []):
            j = joints[jn]
            T[j.child] = T[link] @ _frame(j.origin)
            _add_link(mb, info, inv, links[j.child], T[j.child], notes)
            stack.append(j.child)
    for jn in inv.joints:  # joints in file order (each child node exists now)
        _add_joint(mb, info, inv, joints[jn], T[joints[jn].child], notes)
    for jn in inv.joints:  # mimic joints: rigid couplings to the joints they mimic (all joints exist now)
        if mimic:
            _add_mimic(mb, info, inv, info.joints[jn], notes)
        elif info.joints[jn].mimic is not None:
            notes.mimic_off.append(jn)
    if shapes:
        for link in robot.links:
            _add_shapes(mb, link, shapes, p.parent, package_dirs or {}, notes)
    info.left_out = notes.lines(inv)
    if info.left_out:
        warnings.warn(f"flexmb.from_urdf({p.name}): not imported as the file says: " + "; ".join(info.left_out) +
                      " (builder.robot keeps what was read).", URDFWarning, stacklevel=2)
    return mb


class _Notes:
    """What an import leaves out, gathered for the one warning."""

    def __init__(self) -> None:
        self.limits: list[str] = []
        self.mimic: list[str] = []
        self.mimic_off: list[str] = []
        self.friction: list[str] = []
        self.damping: list[str] = []
        self.massless_inertia: list[str] = []
        self.meshes: list[str] = []

    def lines(self, inv: urdf_xml.Inventory) -> list[str]:
        out = []
        for what, (count, line) in inv.left_out.items():
            out.append(f"{what} ({count}×, first at line {line})")
        if self.limits:
            out.append(f"joint limits of {self.limits} are kept (builder.robot.joints) but not enforced: flexmb has "
                       "no joint stops")
        if self.mimic:
            out.append(f"mimic joints {self.mimic} are imported as independent joints: a coupling needs one coordinate "
                       "on each joint and a nonzero multiplier (drive them, e.g. add_drive)")
        if self.mimic_off:
            out.append(f"mimic joints {self.mimic_off} are imported as independent joints (from_urdf(mimic=False))")
        if self.friction:
            out.append(f"joint friction of {self.friction} (a constant Coulomb torque) is left out: flexmb's "
                       "add_joint_friction is a bearing friction proportional to the joint reaction")
        if self.damping:
            out.append(f"damping of the multi-coordinate joints {self.damping} is left out")
        if self.meshes:
            out.append(f"shapes not found or unreadable: {self.meshes}")
        if self.massless_inertia:
            out.append(f"inertia of the massless links {self.massless_inertia} is left out: a flexmb body needs a "
                       "mass")
        return out


def _add_link(mb: RobotBuilder, info: RobotInfo, inv: urdf_xml.Inventory, link: Any, T: np.ndarray,
              notes: _Notes) -> None:
    name, line = link.name, inv.links[link.name]
    try:
        mb.add_node(name, T[:3, 3], T[:3, :3])
    except ModelError as exc:
        raise URDFError(f"URDF {inv.where(line)}: <link> '{name}': {exc}") from None
    mass, com, J = 0.0, np.zeros(3), np.zeros((3, 3))
    if link.inertial is not None:
        Ti = _frame(link.inertial.origin)
        mass = float(link.inertial.mass or 0.0)
        com = Ti[:3, 3].copy()
        J = Ti[:3, :3] @ np.asarray(link.inertial.inertia, dtype=float) @ Ti[:3, :3].T
        J = 0.5 * (J + J.T)
    body = None
    if mass > 0:
        try:
            body = mb.add_body(name, name, mass, com, J)
        except ModelError as exc:
            raise URDFError(f"URDF {inv.where(line)}: <link> '{name}': its <inertial>: {exc}") from None
    elif np.abs(J).max() > 0:
        notes.massless_inertia.append(name)
    info.links[name] = URDFLink(name, line, T[:3, 3].copy(), T[:3, :3].copy(), mass, com, J, body)


def _mesh_file(name: str, urdf_dir: Path, package_dirs: Mapping[str, str | os.PathLike]) -> Path | None:
    """The file a URDF mesh ``filename`` names (from_urdf's docstring), or None."""
    if name.startswith("file://"):
        f = Path(name[len("file://"):])
        return f if f.is_file() else None
    rest = name[len("package://"):] if name.startswith("package://") else name
    if name.startswith("package://"):
        pkg, _, sub = rest.partition("/")
        if pkg in package_dirs and (Path(package_dirs[pkg]) / sub).is_file():
            return Path(package_dirs[pkg]) / sub
    elif (urdf_dir / rest).is_file():
        return urdf_dir / rest
    parts = Path(rest).parts
    for i in range(1, len(parts)):
        f = urdf_dir.joinpath(*parts[i:])
        if f.is_file():
            return f
    return None


def _add_shapes(mb: RobotBuilder, link: Any, kind: str, urdf_dir: Path, package_dirs: Mapping[str, Any],
                notes: _Notes) -> None:
    """The link's visual or collision geometries as shapes on its node."""
    for k, g in enumerate(link.visuals if kind == "visual" else link.collisions):
        T, geo = _frame(g.origin), g.geometry
        scale: Any = 1.0
        if geo.mesh is not None:
            mesh: Any = _mesh_file(geo.mesh.filename, urdf_dir, package_dirs)
            if mesh is None:
                notes.meshes.append(f"{link.name}: {geo.mesh.filename} (not found)")
                continue
            scale = 1.0 if geo.mesh.scale is None else np.broadcast_to(np.asarray(geo.mesh.scale, dtype=float), (3,))
        elif geo.box is not None:
            mesh = box_mesh(geo.box.size)
        elif geo.cylinder is not None:
            mesh = cylinder_mesh(float(geo.cylinder.radius), float(geo.cylinder.length))
        else:
            mesh = sphere_mesh(float(geo.sphere.radius))
        try:
            add_visual(mb, link.name, mesh, T[:3, 3], T[:3, :3], scale, name=f"{link.name}.{kind}{k}")
        except ModelError as exc:
            notes.meshes.append(f"{link.name}: {exc}")


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def _add_mimic(mb: RobotBuilder, info: RobotInfo, inv: urdf_xml.Inventory, j: URDFJoint, notes: _Notes) -> None:
    """``<mimic joint="l" multiplier="m" offset="o"/>`` of joint ``j``: q_j = m q_l + o as the rigid coupling
    ``<j>:mimic`` (ModelBuilder.add_coupling, docs/coupling.md (C1)) where both joints have one coordinate
    and m is nonzero; otherwise ``j`` stays independent and is listed."""
    if j.mimic is None:
        return
    leader, mult, offset = j.mimic
    lead = info.joints[leader]
    if len(j.coordinates) != 1 or len(lead.coordinates) != 1 or mult == 0.0:
        notes.mimic.append(j.name)
        return
    try:
        mb.add_coupling(f"{j.name}:mimic", lead.coordinates[0], j.coordinates[0], ratio=mult, offset=offset)
    except ModelError as exc:
        raise URDFError(f"URDF {inv.where(j.line)}: <mimic> of joint '{j.name}': {exc}") from None


def _add_joint(mb: RobotBuilder, info: RobotInfo, inv: urdf_xml.Inventory, j: Any, Tc: np.ndarray,
               notes: _Notes) -> None:
    name, line, typ = j.name, inv.joints[j.name], j.type
    R, P = Tc[:3, :3], Tc[:3, 3]
    axis = np.asarray(j.axis if j.axis is not None else (1.0, 0.0, 0.0), dtype=float)
    axis = R @ (axis / np.linalg.norm(axis))
    dyn = j.dynamics
    damping = _float(dyn.damping) if dyn is not None and dyn.damping is not None else 0.0
    friction = _float(dyn.friction) if dyn is not None and dyn.friction is not None else 0.0
    lim = j.limit
    lower, upper, effort, velocity = ((None,) * 4 if lim is None else
                                      (_float(lim.lower), _float(lim.upper), _float(lim.effort), _float(lim.velocity)))
    if typ == "continuous":  # a continuous joint's limits, if any, hold no position bound
        lower = upper = None
    try:
        if typ in ("revolute", "continuous", "prismatic"):
            kind = "prismatic" if typ == "prismatic" else "revolute"
            parts = (mb.add_joint(name, kind, j.parent, j.child, point=P, axis=axis),)
            coords: tuple[str, ...] = (f"{name}.q",)
        elif typ == "fixed":
            parts, coords = (mb.add_joint(name, "fixed", j.parent, j.child, point=P),), ()
        elif typ == "floating":
            parts = (mb.add_joint(name, "free", j.parent, j.child, point=P),)
            coords = tuple(f"{name}.{c}" for c in ("t0", "t1", "t2", "wx", "wy", "wz"))
        else:  # planar: two prismatic joints on massless nodes, then the rotation about the normal
            t1, t2 = _in_plane(axis)
            a, b = mb.add_node(f"{name}:t1", P, R), mb.add_node(f"{name}:t2", P, R)
            parts = (mb.add_joint(f"{name}:t1", "prismatic", j.parent, a, point=P, axis=t1),
                     mb.add_joint(f"{name}:t2", "prismatic", a, b, point=P, axis=t2),
                     mb.add_joint(name, "revolute", b, j.child, point=P, axis=axis))
            coords = (f"{name}:t1.q", f"{name}:t2.q", f"{name}.q")
        if damping > 0:
            if len(coords) == 1:
                mb.add_joint_spring(name, 0.0, damping)
            else:
                notes.damping.append(name)
    except ModelError as exc:
        raise URDFError(f"URDF {inv.where(line)}: <joint> '{name}': {exc}") from None
    if lower is not None or upper is not None:
        if typ in ("revolute", "prismatic"):
            notes.limits.append(name)
    if friction > 0:
        notes.friction.append(name)
    mimic = None
    if j.mimic is not None:
        mimic = (j.mimic.joint, float(j.mimic.multiplier if j.mimic.multiplier is not None else 1.0),
                 float(j.mimic.offset if j.mimic.offset is not None else 0.0))
        if mimic[0] not in inv.joints:
            raise URDFError(f"URDF {inv.where(line)}: <mimic> of joint '{name}': joint '{mimic[0]}' is not defined.")
    info.joints[name] = URDFJoint(name, line, typ, j.parent, j.child, parts, coords, lower, upper, effort, velocity,
                                  damping, friction, mimic)
