"""Particle bodies in a model (Attia 2005 §2–3, §5; docs/equations_of_motion.md §6): building, loads, checks.

A particle body is a rigid body given by its mass, centre of mass and inertia and *described*
by dynamically equivalent particles on nodes of the model. Every particle is compiled into
a point-mass rigid body (mass m_i, centre of mass at the node, no inertia) on its node, so
the assembly needs nothing new: the node-level mass of a particle is m_i I on the node's
translations, and two bodies whose particles share a joint-centre node both put their mass
on it (Attia §2: "two adjacent rigid bodies contribute to the mass concentrated at the joint
connecting them"; §5: the overlapped mass matrices of eq. 5.2).

Why this is exact in flexmb: a node that moves with the body has the translational velocity
v_ref + ω_ref × (x_p − x_ref) for every generalized velocity, so the particles' kinetic
energy Σ ½ m_i |v_i|² is ½ m |v_G|² + ½ ω·J ω whenever the set reproduces m, the centre of
mass and J — the particles' contribution to M̄ = BᵀMB (Attia eq. 6.3) is the rigid body's.
builder/checks.py therefore refuses, once the model is compiled, a particle on a node that does
not move with its body (checked on the rows of B at the initial and at a random state).

Midpoint (secondary) particles sit on nodes at the midpoints: either nodes the user names
(``midpoint_nodes``) or nodes created here, ``<body>.m13`` etc., joined to the reference
node by a fixed joint (no coordinates). Primary particles may likewise be given as points,
which creates nodes ``<body>.1`` … fixed to the reference node.

Planar and rod models reproduce only the planar quantities (mass, in-plane centre of mass,
polar moment about the plane normal; a rod's transverse moment): they are exact for motion in
their plane. If the model lets such a body rotate out of its plane, a warning says so; if
negative particle masses give the particles an indefinite inertia about such an axis, M̄ is
indefinite and the model is refused.

This module is a builder extension: it reads the builder's records and adds nodes, fixed
joints and loads through the builder's public ``add_*`` methods only; the builder stores the
returned :class:`~flexmb.builder.records.ParticleBodySpec` and its point masses.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from typing import Any, Protocol

import numpy as np

from flexmb.builder import arguments as args
from flexmb.builder.records import ParticleBodySpec
from flexmb.elements import particles as pk
from flexmb.errors import ModelError

__all__ = ["add_particle_body", "add_particle_load", "ParticleBodyHost", "PARTICLE_KINDS"]


class ParticleBodyHost(Protocol):
    """What particle bodies ask of the builder that adds them (flexmb.ModelBuilder is one): its
    tables, to refuse names in use, and the calls that add the nodes, fixed joints and loads a
    particle body is made of. Typed by its shape, so this module needs no import of the builder
    that calls it (docs/architecture.md, the layers)."""

    @property
    def nodes(self) -> Mapping[str, Any]: ...

    @property
    def joints(self) -> Mapping[str, Any]: ...

    @property
    def bodies(self) -> Mapping[str, Any]: ...

    @property
    def particle_bodies(self) -> Mapping[str, ParticleBodySpec]: ...

    def add_node(self, name: str, position: Any, rotation: Any = None) -> str: ...

    def add_joint(self, name: str, kind: str, parent: str, child: str) -> str: ...

    def add_load(self, name: str, node: str, force: Any = ..., moment: Any = ..., follower: bool = False,
                 axes_node: str | None = None) -> str: ...

PARTICLE_KINDS = ("planar", "rod", "spatial", "general")
_N_PRIMARY = {"planar": 3, "rod": 2, "spatial": 4}
_MIDPOINTS = {"planar": ((0, 2),), "rod": ((0, 1),), "spatial": pk.SPATIAL_PAIRS, "general": ()}
_TOL = 1e-9  # relative geometric tolerance (positions, planarity)


def _fmt(x: float) -> str:
    return f"{x:.6g}"


def _as_inertia(value: Any, who: str, scalar_ok: bool) -> np.ndarray | float:
    """A scalar moment (planar/rod) or a physical 3×3 inertia tensor; refuses otherwise."""
    if value is None:
        raise ModelError(f"{who}: give the inertia ({'a scalar moment about the plane normal or ' if scalar_ok else ''}"
                         "a 3x3 tensor about the centre of mass, in the reference node's axes).")
    arr = args.array(value, ((), (1,), (3, 3)), who, "inertia",
                     f"{'a number or ' if scalar_ok else ''}a finite 3x3 matrix")
    if arr.shape in ((), (1,)):
        if not scalar_ok:
            raise ModelError(f"{who}: a spatial particle body needs the full 3x3 inertia tensor, not a scalar.")
        J = float(arr.reshape(()))
        if not math.isfinite(J) or J < 0:
            raise ModelError(f"{who}: moment of inertia {J!r} must be a finite number >= 0; no physical body has it.")
        return J
    if arr.shape != (3, 3) or not np.all(np.isfinite(arr)):
        raise ModelError(f"{who}: inertia must be {'a number or ' if scalar_ok else ''}a finite 3x3 matrix, got {arr.tolist()}.")
    scale = max(1e-300, float(np.abs(arr).max()))
    if np.abs(arr - arr.T).max() > 1e-12 * scale:
        raise ModelError(f"{who}: inertia tensor is not symmetric: {arr.tolist()}.")
    ev = np.linalg.eigvalsh(arr)
    tol = 1e-12 * max(scale, 1e-300)
    if ev.min() < -tol:
        raise ModelError(f"{who}: inertia tensor is not positive semi-definite (principal moments "
                         f"{[_fmt(e) for e in ev]}); no physical body has it.")
    if ev[0] + ev[1] < ev[2] - tol:
        raise ModelError(f"{who}: principal moments {[_fmt(e) for e in ev]} violate the triangle inequality "
                         "(J1 + J2 >= J3); no physical body has them.")
    return arr


def add_particle_body(
    mb: ParticleBodyHost,
    name: str,
    reference_node: str,
    mass: float,
    com: Any = (0.0, 0.0, 0.0),
    inertia: Any = None,
    particle_nodes: Any = (),
    kind: str = "planar",
    midpoint_nodes: Any = None,
    plane_normal: Any = None,
) -> ParticleBodySpec:
    """:meth:`flexmb.ModelBuilder.add_particle_body` (see there): checks the input, computes
    the particle masses, adds the nodes (and fixed joints) it creates through ``mb.add_node``
    and ``mb.add_joint``, and returns the spec; the builder stores it and its point masses."""
    args.name(name, "add_particle_body", "particle body name")
    who = f"add_particle_body: particle body '{name}'"
    if name in mb.particle_bodies:
        raise ModelError(f"{who}: duplicate particle body name '{name}': every particle body needs its own name.")
    if not isinstance(kind, str) or kind not in PARTICLE_KINDS:
        raise ModelError(f"{who}: unknown kind {kind!r}; use one of {list(PARTICLE_KINDS)}.")
    nodes = mb.nodes
    if not isinstance(reference_node, str) or reference_node == "ground" or reference_node not in nodes:
        raise ModelError(f"{who}: reference node {reference_node!r} is not a node of the model (known: {list(nodes)[:20]}).")
    mass, c, J, n_normal = _body_quantities(who, kind, nodes[reference_node], (mass, com, inertia), plane_normal)
    prim_names, P = _primary_particles(who, kind, particle_nodes, nodes)
    label = [f"particle {i + 1} ({'node ' + repr(nm) if nm else 'point ' + str(P[i].tolist())})"
             for i, nm in enumerate(prim_names)]
    size = max(float(np.linalg.norm(P - P.mean(axis=0), axis=1).max()), float(np.linalg.norm(c - P.mean(axis=0))), 1e-300)
    _check_placement(who, kind, P, label, size)  # singular systems refused saying which particle to move
    # ---- midpoint (secondary) particles
    pairs = _MIDPOINTS[kind]
    mids = np.array([(P[i] + P[j]) / 2 for i, j in pairs]).reshape(-1, 3)
    mid_names = _midpoint_names(who, kind, midpoint_nodes, nodes, mids, size)
    X = np.vstack([P, mids])
    m, planar = _particle_masses(who, kind, P, X, (mass, c, J), n_normal, size)
    _warn_negative_masses(who, label + [f"midpoint particle of {i + 1} and {j + 1}" for i, j in pairs], m, mass)
    node_names = _create_nodes(mb, who, name, reference_node, (prim_names, P), (pairs, mid_names, mids), len(m))
    return ParticleBodySpec(name, kind, reference_node, tuple(node_names), tuple(float(v) for v in m), len(P), planar)


def _body_quantities(who: str, kind: str, ref: Any, body: tuple[Any, Any, Any],
                     plane_normal: Any) -> tuple[float, np.ndarray, np.ndarray | float, np.ndarray | None]:
    """The body's checked (mass, centre of mass c, inertia J about it, unit plane normal or None), c and
    J in global axes, from ``body`` = (mass, com, inertia) given in the axes of the reference node ``ref``."""
    mass, com, inertia = body
    x_ref, R_ref = ref.position, ref.rotation
    mass = args.number(mass, who, "mass", positive=True)
    c = x_ref + R_ref @ args.vector(com, 3, who, "com")
    J_in = _as_inertia(inertia, who, scalar_ok=kind != "spatial" and not (kind == "general" and plane_normal is None))
    J = J_in if np.ndim(J_in) == 0 else R_ref @ J_in @ R_ref.T
    n_normal = None
    if plane_normal is not None:
        n_normal = args.vector(plane_normal, 3, who, "plane_normal")
        if np.linalg.norm(n_normal) < 1e-12:
            raise ModelError(f"{who}: plane_normal has zero length.")
        n_normal = n_normal / np.linalg.norm(n_normal)
    return mass, c, J, n_normal


def _primary_particles(who: str, kind: str, particle_nodes: Any,
                       nodes: Mapping[str, Any]) -> tuple[list[str | None], np.ndarray]:
    """The primary particles: their node names (None for a point, whose node is created later) and
    their positions, one row each."""
    if isinstance(particle_nodes, str):
        entries = [particle_nodes]
    elif isinstance(particle_nodes, (list, tuple, np.ndarray)):
        entries = list(particle_nodes)
    else:
        raise ModelError(f"{who}: particle_nodes = {particle_nodes!r} must be a list of node names or points.")
    need = _N_PRIMARY.get(kind)
    if need is not None and len(entries) != need:
        raise ModelError(f"{who}: a {kind} particle body takes {need} primary particles in particle_nodes, got {len(entries)}.")
    if kind == "general" and not entries:
        raise ModelError(f"{who}: give the particles' nodes (or points) in particle_nodes.")
    prim_names: list[str | None] = []
    prim_pos = []
    for i, e in enumerate(entries):
        if isinstance(e, str):
            if e == "ground" or e not in nodes:
                raise ModelError(f"{who}: particle {i + 1}: unknown node {e!r} (known: {list(nodes)[:20]}).")
            prim_names.append(e)
            prim_pos.append(nodes[e].position)
        else:
            prim_names.append(None)
            prim_pos.append(args.vector(e, 3, who, f"particle {i + 1}"))
    return prim_names, np.array(prim_pos, dtype=float).reshape(-1, 3)


def _midpoint_names(who: str, kind: str, midpoint_nodes: Any, nodes: Mapping[str, Any], mids: np.ndarray,
                    size: float) -> list[str | None]:
    """The nodes the user names for the midpoint particles at ``mids`` (checked to be there), None for
    each midpoint whose node is created later."""
    pairs = _MIDPOINTS[kind]
    mid_names: list[str | None] = [None] * len(pairs)
    if midpoint_nodes is None:
        return mid_names
    if kind == "general":
        raise ModelError(f"{who}: a general particle body has no midpoint particles; list every node in particle_nodes.")
    if isinstance(midpoint_nodes, str):
        given = [midpoint_nodes]
    elif isinstance(midpoint_nodes, (list, tuple)):
        given = list(midpoint_nodes)
    else:
        raise ModelError(f"{who}: midpoint_nodes = {midpoint_nodes!r} must be a list of node names.")
    if len(given) != len(pairs):
        raise ModelError(f"{who}: midpoint_nodes needs {len(pairs)} node(s), for the pairs "
                         f"{[(i + 1, j + 1) for i, j in pairs]}; got {len(given)}.")
    for k, (nm, (i, j)) in enumerate(zip(given, pairs)):
        if not isinstance(nm, str) or nm not in nodes:
            raise ModelError(f"{who}: midpoint node {nm!r} is not a node of the model.")
        if np.linalg.norm(nodes[nm].position - mids[k]) > _TOL * size:
            raise ModelError(f"{who}: midpoint node '{nm}' at {nodes[nm].position.tolist()} is not at the midpoint "
                             f"{mids[k].tolist()} of particles {i + 1} and {j + 1}.")
        mid_names[k] = nm
    return mid_names


def _particle_masses(who: str, kind: str, P: np.ndarray, X: np.ndarray, body: tuple[float, np.ndarray, Any],
                     n_normal: np.ndarray | None, size: float) -> tuple[np.ndarray, bool]:
    """(the masses of the particles at X, whether the model is planar): the linear system for them (Attia
    eq. 2.1; solved in centred, scaled coordinates) reproducing ``body`` = (mass, centre of mass c, inertia
    J), refused when singular or without a solution."""
    mass, c, J = body
    o = X.mean(axis=0)
    L = max(float(np.sqrt(np.mean(np.sum((X - o) ** 2, axis=1)))), 1e-300)
    planar = kind in ("planar", "rod") or (kind == "general" and n_normal is not None)
    if kind == "rod":
        e = (P[1] - P[0]) / np.linalg.norm(P[1] - P[0])
        off = (c - P[0]) - ((c - P[0]) @ e) * e
        if np.linalg.norm(off) > _TOL * size:
            raise ModelError(f"{who}: the centre of mass is {_fmt(np.linalg.norm(off))} off the line through the rod's "
                             "end particles; a rod model holds only bodies whose centre of mass is on that line "
                             "(use kind='planar' or 'spatial').")
        Jt = _rod_moment(who, J, e, n_normal)
        A = pk.rod_system(((X - o) @ e / L)[None])
        b = pk.rod_rhs(np.array([1.0]), np.array([(c - o) @ e / L]), np.array([Jt / (mass * L * L)]))
    elif planar:
        A, b = _planar_system(who, kind, (P, X, o, L), body, n_normal, size)
    else:
        A = pk.spatial_system(((X - o) / L)[None])
        b = pk.spatial_rhs(np.array([1.0]), ((c - o) / L)[None], (J / (mass * L * L))[None])
    m, rcond, res = pk.solve_masses(A, b)
    m = m[0] * mass
    if kind != "general" and rcond[0] < 1e-10:  # geometric checks above catch the known cases
        raise ModelError(f"{who}: the particles' linear system is singular (rcond {rcond[0]:.1e}); move the primary particles "
                         "apart (not collinear in the plane, not coplanar in space).")
    if res[0] > 1e-9:
        conds = "mass, centre of mass and polar moment" if planar else "mass, centre of mass and the six inertia components"
        raise ModelError(f"{who}: no particle masses on these {len(X)} particles reproduce the body's {conds} "
                         f"(rank {np.linalg.matrix_rank(A[0], 1e-10)} of {A.shape[1]} conditions); add particles or move them "
                         "(e.g. not all on one line or plane).")
    return m, planar


def _planar_system(who: str, kind: str, points: tuple[np.ndarray, np.ndarray, np.ndarray, float],
                   body: tuple[float, np.ndarray, Any], n_normal: np.ndarray | None,
                   size: float) -> tuple[np.ndarray, np.ndarray]:
    """The planar system (A, b) for the masses, in the particles' plane: ``points`` = (primaries P, all
    particles X, their centre o, their scale L); the plane, and the centre of mass in it, are checked."""
    P, X, o, L = points
    mass, c, J = body
    if kind == "planar":
        n = np.cross(P[1] - P[0], P[2] - P[0])
        n /= np.linalg.norm(n)
        if n_normal is not None and np.linalg.norm(np.cross(n, n_normal)) > 1e-6:
            raise ModelError(f"{who}: plane_normal {n_normal.tolist()} is not normal to the plane of the primary particles.")
    else:
        n = n_normal
        dev = np.abs((X - X[0]) @ n).max()
        if dev > _TOL * size:
            raise ModelError(f"{who}: the particles do not lie in one plane normal to plane_normal "
                             f"(out of plane by {_fmt(dev)}).")
    dev = abs((c - X[0]) @ n)
    if dev > _TOL * size:
        raise ModelError(f"{who}: the centre of mass is {_fmt(dev)} out of the particles' plane; a planar particle "
                         "model cannot carry it (use kind='spatial').")
    e1 = X[1] - X[0] if kind == "general" else P[2] - P[0]
    e1 = e1 - (e1 @ n) * n
    if np.linalg.norm(e1) < 1e-300:
        e1 = np.cross(n, [1.0, 0, 0]) if abs(n[0]) < 0.9 else np.cross(n, [0, 1.0, 0])
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(n, e1)
    xi = np.stack([(X - o) @ e1, (X - o) @ e2], axis=1) / L
    Jn = J if np.ndim(J) == 0 else float(n @ J @ n)
    A = pk.planar_system(xi[None])
    b = pk.planar_rhs(np.array([1.0]), np.array([[(c - o) @ e1, (c - o) @ e2]]) / L, np.array([Jn / (mass * L * L)]))
    return A, b


def _warn_negative_masses(who: str, all_label: list[str], m: np.ndarray, mass: float) -> None:
    """Negative masses: still equivalent, but say what it means (a warning pointing at the user's call)."""
    neg = np.flatnonzero(m < -1e-12 * mass)
    if neg.size:
        items = ", ".join(f"{all_label[k]}: {_fmt(m[k])} kg" for k in neg)
        warnings.warn(
            f"{who}: negative particle masses ({items}). The particle set is still dynamically equivalent to the "
            "body (same mass, centre of mass and inertia), but the node-level mass matrix is indefinite at those "
            "nodes; the generalized mass matrix stays positive definite as long as those nodes move with the body (and, "
            "for a planar or rod model, the body moves in its plane): compile() checks both. For positive masses, "
            "place the primaries about one radius of gyration from the centre of mass, around it.",
            pk.NegativeParticleMassWarning, stacklevel=4)  # this, add_particle_body, the builder's method, the user


def _create_nodes(mb: ParticleBodyHost, who: str, name: str, reference_node: str,
                  primaries: tuple[list[str | None], np.ndarray], midpoints: tuple[Any, list[str | None], np.ndarray],
                  n_particles: int) -> list[str]:
    """The particles' node names, in order: the given ones, and the nodes (with fixed joints to the reference
    node) created for the particles given as points, ``primaries`` = (names, positions) and ``midpoints`` =
    (pairs, names, positions) with None for a node to create; refuses names of nodes, joints or point-mass
    bodies already in use."""
    prim_names, P = primaries
    pairs, mid_names, mids = midpoints
    nodes = mb.nodes
    R_ref = nodes[reference_node].rotation
    for nm in [f"{name}.{i + 1}" for i, v in enumerate(prim_names) if v is None] + (
            [f"{name}.m{i + 1}{j + 1}" for (i, j), v in zip(pairs, mid_names) if v is None]):
        if nm in nodes or f"{nm}:fixed" in mb.joints:
            raise ModelError(f"{who}: a node '{nm}' or joint '{nm}:fixed' already exists; rename the body or give the node.")
    for k in range(n_particles):
        if f"{name}.p{k + 1}" in mb.bodies:
            raise ModelError(f"{who}: a body called '{name}.p{k + 1}' already exists; rename the particle body.")
    node_names: list[str] = []
    for i, nm in enumerate(prim_names):
        if nm is None:
            nm = mb.add_node(f"{name}.{i + 1}", P[i], R_ref)
            mb.add_joint(f"{nm}:fixed", "fixed", reference_node, nm)
        node_names.append(nm)
    for (i, j), nm, x in zip(pairs, mid_names, mids):
        if nm is None:
            nm = mb.add_node(f"{name}.m{i + 1}{j + 1}", x, R_ref)
            mb.add_joint(f"{nm}:fixed", "fixed", reference_node, nm)
        node_names.append(nm)
    return node_names


def _check_placement(who: str, kind: str, P: np.ndarray, label: list[str], size: float) -> None:
    """Refuse primary placements whose system is singular, naming the particle to move."""
    def coincide(i: int, j: int) -> bool:
        return np.linalg.norm(P[i] - P[j]) <= _TOL * size

    if kind == "rod":
        if coincide(0, 1):
            raise ModelError(f"{who}: {label[0]} and {label[1]} coincide: the rod's 3x3 system is singular; "
                             "move particle 2 to the rod's other end.")
        return
    if kind == "planar":
        if coincide(0, 2):
            raise ModelError(f"{who}: {label[0]} and {label[2]} coincide: the midpoint particle and the 4x4 system "
                             "(Attia eq. 2.1) need distinct points; move particle 3.")
        area = np.linalg.norm(np.cross(P[1] - P[0], P[2] - P[0])) / np.linalg.norm(P[2] - P[0]) ** 2
        if area <= _TOL:
            raise ModelError(f"{who}: primary particles 1, 2, 3 are collinear ({', '.join(label)}): the 4x4 system "
                             "(Attia eq. 2.1) is singular; move particle 2 off the line through particles 1 and 3 "
                             "(or use kind='rod' for a rod).")
        return
    if kind == "spatial":
        for i, j in pk.SPATIAL_PAIRS:
            if coincide(i, j):
                raise ModelError(f"{who}: {label[i]} and {label[j]} coincide: the 10x10 system is singular; "
                                 f"move particle {j + 1}.")
        a = np.cross(P[1] - P[0], P[2] - P[0])
        if np.linalg.norm(a) <= _TOL * size * size:
            raise ModelError(f"{who}: primary particles 1, 2, 3 are collinear ({', '.join(label[:3])}): the 10x10 "
                             "system is singular; move particle 3 off the line through particles 1 and 2.")
        vol = abs(a @ (P[3] - P[0])) / (np.linalg.norm(a) * size)
        if vol <= _TOL:
            raise ModelError(f"{who}: the four primary particles are coplanar ({', '.join(label)}): the 10x10 system "
                             "is singular; move particle 4 out of the plane of particles 1, 2 and 3.")


def _rod_moment(who: str, J: np.ndarray | float, e: np.ndarray, n: np.ndarray | None) -> float:
    """The rod's transverse moment: the scalar given, n·J·n for a tensor and plane normal n,
    or the (equal) transverse moments of a tensor symmetric about the rod."""
    if np.ndim(J) == 0:
        return float(J)
    if n is not None:
        if abs(n @ e) > 1e-6:
            raise ModelError(f"{who}: plane_normal {n.tolist()} is not normal to the rod.")
        return float(n @ J @ n)
    a1 = np.cross(e, [1.0, 0, 0]) if abs(e[0]) < 0.9 else np.cross(e, [0, 1.0, 0])
    a1 /= np.linalg.norm(a1)
    a2 = np.cross(e, a1)
    j11, j22, j12 = a1 @ J @ a1, a2 @ J @ a2, a1 @ J @ a2
    if abs(j11 - j22) + abs(j12) > 1e-9 * max(abs(j11), abs(j22), 1e-300):
        raise ModelError(f"{who}: the inertia tensor's moments about axes normal to the rod differ ({_fmt(j11)}, "
                         f"{_fmt(j22)}); give plane_normal (the plane of motion) or a scalar moment.")
    return float(j11)


def add_particle_load(
    mb: ParticleBodyHost,
    name: str,
    body: str,
    force: Any = None,
    point: Any = None,
    couple: Any = None,
    follower: bool = False,
) -> tuple[str, ...]:
    """:meth:`flexmb.ModelBuilder.add_particle_load` (see there): nodal loads added through
    ``mb.add_load``. Returns the load names."""
    args.name(name, "add_particle_load", "load name")
    who = f"add_particle_load: particle load '{name}'"
    follower = args.flag(follower, who, "follower")
    if not isinstance(body, str) or body not in mb.particle_bodies:
        raise ModelError(f"{who}: unknown particle body {body!r} (known: {list(mb.particle_bodies)[:20]}).")
    spec = mb.particle_bodies[body]
    if force is None and couple is None:
        raise ModelError(f"{who}: give a force, a couple or both.")
    nodes = mb.nodes
    ref_name = spec.reference
    x_ref, R_ref = nodes[ref_name].position, nodes[ref_name].rotation
    prim = spec.nodes[: spec.n_primary]
    P = np.array([nodes[nm].position for nm in prim])

    def fun(value: Any, what: str):
        f = args.time_function(value, (3,), who, what)
        return f, np.asarray(f(0.0), dtype=float)

    alpha = np.zeros(len(prim))
    if force is not None:
        ff, _ = fun(force, "force")
        xp = x_ref + R_ref @ (np.zeros(3) if point is None else args.vector(point, 3, who, "point"))
        alpha, miss = pk.force_distribution(P[None], xp[None])
        alpha = alpha[0]
        if miss[0] > 1e-9:
            where = "on the rod's line" if spec.kind == "rod" else "in the plane of the primary particles"
            raise ModelError(f"{who}: the point of application {xp.tolist()} is not {where}; the primary particles of "
                             f"body '{body}' cannot carry a force there (Attia eq. 3.1).")
    H = np.zeros((len(prim), 3, 3))
    if couple is not None:
        fc, c0 = fun(couple, "couple")
        G, Pc = pk.couple_distribution(P[None])
        # forces in reference axes for a couple in reference axes: R^T G_i R
        H = np.einsum("ji,kjl,lm->kim", R_ref, G[0], R_ref)
        Pref = R_ref.T @ Pc[0] @ R_ref
        if np.linalg.norm(c0 - Pref @ c0) > 1e-9 * max(np.linalg.norm(c0), 1e-300):
            raise ModelError(f"{who}: the couple {c0.tolist()} has a component the particles of body '{body}' cannot carry "
                             "(a rod's particles carry no couple about the rod's axis); remove that component.")
    names = []
    for i, nm in enumerate(prim):
        if force is not None and not follower and alpha[i] != 0.0:
            names.append(mb.add_load(f"{name}.p{i + 1}", nm, (lambda t, a=alpha[i], f=ff: a * np.asarray(f(t), float))))
        if couple is not None or (force is not None and follower):
            a_i = alpha[i] if (force is not None and follower) else 0.0
            f_force = ff if (force is not None and follower) else None
            H_i = H[i] if couple is not None else None
            f_couple = fc if couple is not None else None

            def body_force(t, a=a_i, f=f_force, Hm=H_i, g=f_couple):
                out = np.zeros(3)
                if f is not None:
                    out = out + a * np.asarray(f(t), float)
                if g is not None:
                    out = out + Hm @ np.asarray(g(t), float)
                return out

            names.append(mb.add_load(f"{name}.p{i + 1}:body", nm, body_force, follower=True, axes_node=ref_name))
    return tuple(names)
