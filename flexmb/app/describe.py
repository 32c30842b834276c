"""A readable description of a compiled model (``flexmb info``): counts, nodes, the elements of
every element family (each family describes its own: flexmb.elements), joints drawn as the
spanning tree from ground, the loops and the elastic link that cuts each (with each elastic cut's
stiffness, damping, local frequency and ω·dt: flexmb.app.cut_table), and the degrees of freedom."""

from __future__ import annotations

import numpy as np

from flexmb.app.cut_table import cut_table
from flexmb.builder.planar import planar_rows, plane_name
from flexmb.elements import FAMILIES
from flexmb.elements.family import listing
from flexmb.model import Model

__all__ = ["describe"]


def _fmt(v) -> str:
    return "(" + ", ".join(f"{x:.4g}" for x in np.asarray(v, dtype=float)) + ")"


def _planar_lines(m: Model) -> list[str]:
    """The model's plane (a planar model) and the cut rows its planar cuts hold against the rows the
    same cuts would hold in space (docs/planar.md (P7)); [] for a spatial model without planar cuts."""
    cuts = [d for name, d in m.elements.items() if name in FAMILIES and FAMILIES[name].cut and d.n]
    n_planar = sum(int(np.sum(d.plane >= 0)) for d in cuts)
    if m.plane_normal is None and not n_planar:
        return []
    held, spatial = planar_rows(m)
    head = (f"planar model: moves in the plane {plane_name(m.plane_normal)} (normal {_fmt(m.plane_normal)})"
            if m.plane_normal is not None else "spatial model")
    return [f"{head}; {n_planar} planar cut(s) hold only their in-plane directions (two translations, the rotation about the "
            f"normal): {held} cut rows held (penalty terms and multipliers), {spatial} for the same cuts in space"]


def describe(model: Model, limit: int = 40, dt: float | None = None) -> str:
    """Multi-line description of ``model``; long lists are cut after ``limit`` entries. ``dt``: the
    time step the model is to run with (its loop cuts' ω·dt are listed: flexmb.app.cut_table)."""
    m = model
    families = [(f, m.elements[name]) for name, f in FAMILIES.items() if name in m.elements]
    auto = set(m.auto_free_nodes)
    user_joints = [k for k, n in enumerate(m.joint_names) if not n.endswith(":free")]
    out = [
        f"nodes: {m.n_nodes}   " + "   ".join(f.summary(m, d) for f, d in families),
        f"joints: {len(user_joints)} (+ {m.n_joints - len(user_joints)} free joints to ground for free nodes)   "
        f"drives: {m.driven.size}   joint springs: {m.spring_u.size}   loads: {len(m.loads)}   gravity: {_fmt(m.gravity)}",
        f"degrees of freedom: {m.n_u} velocity coordinates = {m.free_u.size} unknown + {m.driven.size} driven "
        f"({m.n_q} scalar coordinates, {m.n_ball} ball rotations)",
    ]
    out += _planar_lines(m)
    tags: dict[int, list[str]] = {}  # the node masses on each node (bodies, particles)
    for f, d in families:
        if f.node_mass:
            for i, names in f.node_roles(m, d).items():
                tags.setdefault(i, []).append(f"{f.label} " + ", ".join(names))
    out.append("nodes:")
    rows = []
    for i, name in enumerate(m.node_names):
        extra = list(tags.get(i, []))
        if name in auto:
            extra.append("free node")
        rows.append(f"  {name} at {_fmt(m.X0[i] + m.origin)}" + (f"  [{'; '.join(extra)}]" if extra else ""))
    out += listing(rows, limit)
    for f, d in families:
        if d.n:
            out += f.describe(m, d, limit)
    # the tree, from ground
    children: dict[int, list[int]] = {}
    for k in range(m.n_joints):
        children.setdefault(int(m.joint_parent[k]), []).append(k)
    driven_joints = {m.joint_names[int(k)] for k in np.searchsorted(m.joint_u_start, m.driven, side="right") - 1}
    friction = {int(k): (mu, r) for k, mu, r in zip(m.friction_joint, m.friction_mu, m.friction_radius)}
    out.append("tree (joint: kind -> child node):")
    rows = ["  ground"]

    def walk(node: int, prefix: str) -> None:
        kids = children.get(node, [])
        for n, k in enumerate(kids):
            last = n == len(kids) - 1
            tag = " (driven)" if m.joint_names[k] in driven_joints else ""
            if k in friction:
                tag += f" (bearing friction mu = {friction[k][0]:g}, pin radius {friction[k][1]:g})"
            rows.append(f"  {prefix}{'`- ' if last else '|- '}{m.joint_names[k]}: {m.joint_kinds[k].name}{tag} "
                        f"-> {m.node_names[int(m.joint_child[k])]}")
            walk(int(m.joint_child[k]), prefix + ("   " if last else "|  "))

    walk(-1, "")
    out += listing(rows, limit)
    if not m.loops:
        out.append("loops: none")
    else:
        out.append(f"loops: {len(m.loops)}")
        for i, lp in enumerate(m.loops, 1):
            out.append(f"  loop {i}: cut at {lp.cut}; joints {', '.join(lp.joints)}; nodes {', '.join(lp.nodes)}")
        out += cut_table(m, dt)
    return "\n".join(out)
