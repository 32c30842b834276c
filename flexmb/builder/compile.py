"""The compiler: builder records -> immutable :class:`~flexmb.model.Model`.

``compile(builder)`` gives every group of nodes without a joint path to ground a free joint,
builds the spanning tree (topology.build_tree), lays out the coordinates joint by joint,
expresses joint points and axes in parent node axes, and asks every element family
(flexmb.elements.FAMILIES) for its arrays: ``family.compile(family.records(builder), nodes)``
gives the frozen dataclass stored in ``Model.elements[family.name]``, and the families' loop
edges go to the loop finder. It reads the builder only through its public, read-only record
views and runs no engine code (the checks that do run after it: builder/checks.py).
"""

from __future__ import annotations

import dataclasses
import math
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from flexmb.builder.records import JointSpec
from flexmb.elements import FAMILIES
from flexmb.elements.family import NodeTable
from flexmb.errors import ModelError
from flexmb.joints import JOINT_KINDS, JointKind
from flexmb.model import Model, NodalLoad
from flexmb.motion_forces import HOLD_KEY, initial_hold, initial_load_hold
from flexmb.motion_loads import LOAD_HOLD_KEY
from flexmb.rotations import expm
from flexmb.topology import GROUND, Tree, build_tree, find_loops

if TYPE_CHECKING:
    from flexmb.builder.record_tables import RecordTables

__all__ = ["compile"]


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


def _expand(kind: JointKind) -> list[tuple[str, int | None]]:
    """Components with the ball expanded into its three velocity coordinates."""
    out: list[tuple[str, int | None]] = []
    for comp, ax in kind.components:
        out += [(comp, ax)] * (3 if comp == "B" else 1)
    return out


def _auto_free_nodes(nn: int, ends: list[tuple[int, int]]) -> list[int]:
    """One node of every group of nodes with no joint path to ground (a lone node, or a
    floating chain): the first declared node of the group (union-find; index nn = ground)."""
    root = list(range(nn + 1))

    def find(i: int) -> int:
        while root[i] != i:
            root[i] = root[root[i]]
            i = root[i]
        return i

    for p, c in ends:
        a, b = find(nn if p == GROUND else p), find(c)
        root[a] = b
    grounded = find(nn)
    auto, seen = [], set()
    for i in range(nn):
        r = find(i)
        if r != grounded and r not in seen:
            seen.add(r)
            auto.append(i)
    return auto


def model_origin(points: np.ndarray) -> np.ndarray:
    """The origin of the model frame (``Model.origin``, global) for a model spanned by ``points``
    (node positions and joint points, global; eq. (O1) of docs/model_frame.md): zero along every
    axis where the global origin lies within twice the model's extent E of its centre c (so a
    model described near the origin computes exactly as given), else c_i rounded to a multiple
    of 2^k, the smallest power of two above E (so x - o is exact in floating point, and a
    model moved by a multiple of 2^k computes bit for bit as before). A model of one point (E = 0)
    keeps the global origin."""
    pts = np.asarray(points, dtype=float).reshape(-1, 3)
    if not pts.size or not np.all(np.isfinite(pts)):
        return np.zeros(3)
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    c = 0.5 * lo + 0.5 * hi
    extent = float((hi - lo).max())
    origin = np.zeros(3)
    if 0.0 < extent < 1e300:  # (a model beyond 1e300 m is refused by its checks, not here)
        grid = math.ldexp(1.0, math.frexp(extent)[1])  # a power of two in (E, 2E]
        for i in range(3):
            if abs(c[i]) > 2.0 * extent:
                origin[i] = grid * np.round(c[i] / grid)
    return origin


def compile(builder: RecordTables) -> Model:
    """The immutable Model of ``builder``'s records (no checks that run the engine), its
    positions in the model frame (``Model.origin``, :func:`model_origin`)."""
    nodes = builder.nodes
    node_names = list(nodes)
    index = {n: i for i, n in enumerate(node_names)}
    nn = len(node_names)
    X0 = np.array([nodes[n].position for n in node_names]).reshape(-1, 3)
    R0 = np.array([nodes[n].rotation for n in node_names]).reshape(-1, 3, 3)
    origin = model_origin(np.concatenate([X0] + [np.reshape(j.point, (1, 3)) for j in builder.joints.values()
                                                 if j.point is not None]))

    def node(name: str) -> int:
        return GROUND if name == "ground" else index[name]

    joints: list[JointSpec] = list(builder.joints.values())
    ends = [(node(j.parent), node(j.child)) for j in joints]
    auto = _auto_free_nodes(nn, ends)
    for i in auto:
        joints.append(JointSpec(f"{node_names[i]}:free", JOINT_KINDS["free"], "ground", node_names[i], None, (),
                                np.zeros(6), np.zeros(6)))
        ends.append((GROUND, i))
    names = [j.name for j in joints]
    tree = build_tree(nn, ends, names, node_names)
    joint_fields, u_start = _joint_fields(tree, joints, (X0, R0, origin), index)
    loads = tuple(NodalLoad(ld.name, index[ld.node], ld.force, ld.moment, ld.follower,
                            -1 if ld.axes_node is None else index[ld.axes_node]) for ld in builder.loads.values())
    table = NodeTable(tuple(node_names), X0, R0, MappingProxyType(index), origin)
    elements = {name: fam.compile(list(fam.records(builder)), table) for name, fam in FAMILIES.items()}
    f = _frozen
    return _with_start_holds(Model(
        node_names=tuple(node_names),
        X0=f(X0 - origin), R0=f(R0), origin=f(origin), gravity=f(builder.gravity.copy()), tree=tree,
        **joint_fields,
        loads=loads,
        **_joint_force_fields(builder, joint_fields["joint_names"], joint_fields["joint_kinds"], u_start),
        auto_free_nodes=tuple(node_names[i] for i in auto),
        elements=MappingProxyType(elements),
        loops=find_loops(
            node_names,
            [(j.name, e[0], e[1]) for j, e in zip(joints[: len(joints) - len(auto)], ends) if j.kind.name != "free"],
            [edge for name, fam in FAMILIES.items() for edge in fam.loop_edges(elements[name])],
        ),
        plane_normal=None if builder.planar is None else f(builder.planar),
    ))


def _joint_fields(tree: Tree, joints: list[JointSpec], frames: tuple[np.ndarray, np.ndarray, np.ndarray],
                  index: dict[str, int]) -> tuple[dict[str, Any], list[int]]:
    """(the Model's joint and coordinate fields, each joint's first velocity coordinate) of the ``joints``
    in the order of ``tree``: points and axes in parent node axes, ``frames`` = (node positions X0,
    rotations R0, the model frame's origin), the coordinates laid out joint by joint."""
    X0, R0, origin = frames
    nj = len(tree.order)
    jp = np.zeros((nj, 3))
    jax = np.zeros((nj, 3, 3))
    jrc = np.zeros((nj, 3))
    jC = np.zeros((nj, 3, 3))
    kinds, jnames, u_start, q_start, jball = [], [], [], [], []
    coords = _Coordinates([], [], [], [], [])
    nu = nq = 0
    for k, j_idx in enumerate(tree.order):
        jt = joints[j_idx]
        p, c = int(tree.parent[k]), int(tree.child[k])
        rev = bool(tree.reversed[k])
        if rev and jt.kind.name not in ("revolute", "prismatic", "cylindrical", "fixed"):
            raise ModelError(
                f"joint '{jt.name}' ({jt.kind.name}) is reached from its child side: give it with its "
                f"parent on the ground side of the tree (swap parent '{jt.parent}' and child '{jt.child}')."
            )
        Xp, Rp = (origin, np.eye(3)) if p == GROUND else (X0[p], R0[p])  # ground: at the model frame's origin
        P = jt.point if jt.point is not None else X0[index[jt.child]]
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
        jball.append(len(coords.balls0) if jt.kind.has_ball else -1)
        _add_coordinates(jt, coords)
        nu += jt.kind.n_u
        nq += jt.kind.n_scalar
    u_is_ball_a = np.array(coords.u_is_ball, dtype=bool)
    u_to_q = np.full(nu, -1, dtype=int)
    u_to_q[~u_is_ball_a] = np.arange(nq)
    f = _frozen
    return dict(
        joint_names=tuple(jnames), joint_kinds=tuple(kinds),
        joint_parent=f(tree.parent), joint_child=f(tree.child),
        joint_point=f(jp), joint_axes=f(jax), joint_child_offset=f(jrc), joint_child_rot=f(jC),
        joint_u_start=f(np.array(u_start, dtype=int)), joint_q_start=f(np.array(q_start, dtype=int)),
        joint_ball=f(np.array(jball, dtype=int)),
        coordinate_names=tuple(coords.names), u_is_ball=f(u_is_ball_a), u_to_q=f(u_to_q),
        q0=f(np.array(coords.q0, dtype=float)), balls0=f(np.array(coords.balls0).reshape(-1, 3, 3)),
        u0=f(np.array(coords.u0, dtype=float)),
    ), u_start


class _Coordinates(NamedTuple):
    """The coordinates laid out so far, joint by joint (lists the compiler appends to)."""

    names: list[str]
    u_is_ball: list[bool]
    q0: list[float]
    u0: list[float]
    balls0: list[np.ndarray]


def _add_coordinates(jt: JointSpec, coords: _Coordinates) -> None:
    """Append joint ``jt``'s coordinates to ``coords``: a ball's three rotation velocities (its initial
    rotation expm(q0)), one scalar coordinate for each other component."""
    ci = 0
    for comp, _ in jt.kind.components:
        if comp == "B":
            rv = jt.q0[ci:ci + 3]
            coords.balls0.append(expm(rv))
            coords.u0.extend(jt.u0[ci:ci + 3])
            coords.names.extend([f"{jt.name}.w{a}" for a in "xyz"])
            coords.u_is_ball.extend([True] * 3)
            ci += 3
        else:
            coords.q0.append(jt.q0[ci])
            coords.u0.append(jt.u0[ci])
            coords.names.append(f"{jt.name}.{comp.lower()}{ci}" if jt.kind.n_u > 1 else f"{jt.name}.q")
            coords.u_is_ball.append(False)
            ci += 1


def _joint_force_fields(builder: RecordTables, jnames: tuple[str, ...], kinds: tuple[JointKind, ...],
                        u_start: list[int]) -> dict[str, Any]:
    """The Model's fields of the drives, joint springs, joint forces and joint friction, which refer to
    (joint name, scalar dof): each sorted by the velocity coordinate it acts on."""
    scalar_u = {}
    for k, name in enumerate(jnames):
        scalar_u[name] = [u_start[k] + i for i, (cmp, _) in enumerate(_expand(kinds[k])) if cmp != "B"]
    driven = sorted(((scalar_u[s.joint][s.dof], s.drive) for s in builder.drives.values()), key=lambda x: x[0])
    springs = sorted(((scalar_u[s.joint][s.dof], s.stiffness, s.damping, s.rest) for s in builder.springs.values()),
                     key=lambda x: x[0])
    jforces = sorted(((scalar_u[s.joint][s.dof], s.force) for s in builder.joint_forces.values() if s.motion is None),
                     key=lambda x: x[0])
    mforces = sorted(((scalar_u[s.joint][s.dof], s.motion) for s in builder.joint_forces.values()
                      if s.motion is not None), key=lambda x: x[0])
    fric = sorted(((jnames.index(s.joint), s.mu, s.pin_radius, s.omega_eps) for s in builder.frictions.values()),
                  key=lambda x: x[0])
    f = _frozen
    return dict(
        driven=f(np.array([u for u, _ in driven], dtype=int)), drives=tuple(d for _, d in driven),
        spring_u=f(np.array([s[0] for s in springs], dtype=int)),
        spring_k=f(np.array([s[1] for s in springs], dtype=float)),
        spring_c=f(np.array([s[2] for s in springs], dtype=float)),
        spring_rest=f(np.array([s[3] for s in springs], dtype=float)),
        jforce_u=f(np.array([u for u, _ in jforces], dtype=int)), jforce_f=tuple(fn for _, fn in jforces),
        mforce_u=f(np.array([u for u, _ in mforces], dtype=int)), mforce=tuple(mf for _, mf in mforces),
        friction_joint=f(np.array([c[0] for c in fric], dtype=int)),
        friction_u=f(np.array([u_start[c[0]] for c in fric], dtype=int)),
        friction_mu=f(np.array([c[1] for c in fric], dtype=float)),
        friction_radius=f(np.array([c[2] for c in fric], dtype=float)),
        friction_omega_eps=f(np.array([c[3] for c in fric], dtype=float)),
    )


def _with_start_holds(model: Model) -> Model:
    """``model`` with the first samples of its sampled joint forces (docs/motion_forces.md (M6)) and node
    loads (M15) at its initial state (Model.start_holds, which initial_state copies): taken here, above
    the motion modules and the kinematics they read, so that the model imports no engine stage."""
    st = model.initial_state()
    hold = initial_hold(model.mforce, model.u_to_q[model.mforce_u], model.mforce_u, st.t, st.q, st.u)
    if hold is not None:
        st.elements[HOLD_KEY] = hold
    initial_load_hold(model, st)
    holds = {key: _frozen(st.elements[key]) for key in (HOLD_KEY, LOAD_HOLD_KEY) if key in st.elements}
    return dataclasses.replace(model, start_holds=MappingProxyType(holds)) if holds else model
