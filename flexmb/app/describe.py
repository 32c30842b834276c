"""A readable description of a compiled model (``flexmb info``): counts, nodes, bodies,
elements, joints drawn as the spanning tree from ground, the loops and the elastic link that
cuts each, and the degrees of freedom."""

from __future__ import annotations

import numpy as np

__all__ = ["describe"]


def _fmt(v) -> str:
    return "(" + ", ".join(f"{x:.4g}" for x in np.asarray(v, dtype=float)) + ")"


def _listing(items: list[str], limit: int) -> list[str]:
    if len(items) <= limit:
        return items
    return items[:limit] + [f"  ... and {len(items) - limit} more"]


def describe(model, limit: int = 40) -> str:
    """Multi-line description of ``model``; long lists are cut after ``limit`` entries."""
    m = model
    nb, nbeam, nbus = len(m.body_names), len(m.beam_names), len(m.bushing_names)
    links = sorted(set(m.beam_link)) if nbeam else []
    auto = set(m.auto_free_nodes)
    user_joints = [k for k, n in enumerate(m.joint_names) if not n.endswith(":free")]
    particles = tuple(getattr(m, "particle_body_names", ()) or ())
    out = [
        f"nodes: {m.n_nodes}   rigid bodies: {nb}   particle bodies: {len(particles)}   beam elements: {nbeam} "
        f"in {len(links)} flexible link(s)   bushings: {nbus}",
        f"joints: {len(user_joints)} (+ {m.n_joints - len(user_joints)} free joints to ground for free nodes)   "
        f"drives: {m.driven.size}   joint springs: {m.spring_u.size}   loads: {len(m.loads)}   gravity: {_fmt(m.gravity)}",
        f"degrees of freedom: {m.n_u} velocity coordinates = {m.free_u.size} unknown + {m.driven.size} driven "
        f"({m.n_q} scalar coordinates, {m.n_ball} ball rotations)",
    ]
    body_of: dict[int, list[str]] = {}
    for name, node in zip(m.body_names, m.body_node):
        body_of.setdefault(int(node), []).append(name)
    out.append("nodes:")
    rows = []
    for i, name in enumerate(m.node_names):
        extra = []
        if i in body_of:
            extra.append("body " + ", ".join(body_of[i]))
        if name in auto:
            extra.append("free node")
        rows.append(f"  {name} at {_fmt(m.X0[i])}" + (f"  [{'; '.join(extra)}]" if extra else ""))
    out += _listing(rows, limit)
    if nb:
        out.append("rigid bodies:")
        rows = [f"  {n}: on node {m.node_names[int(nd)]}, mass {ms:.4g}, centre of mass {_fmt(c)} (node axes)"
                for n, nd, ms, c in zip(m.body_names, m.body_node, m.body_mass, m.body_com)]
        out += _listing(rows, limit)
    if particles:
        out.append("particle bodies:")
        pn = getattr(m, "particle_body_nodes", ())
        out += _listing([f"  {n}: particles on nodes {[m.node_names[i] for i in nodes]}" for n, nodes in zip(particles, pn)],
                        limit)
    if nbeam:
        out.append("elements:")
        rows = []
        for link in links:
            idx = [i for i, ln in enumerate(m.beam_link) if ln == link]
            L = float(np.sum(m.beam_L0[idx]))
            first, last = m.node_names[int(m.beam_a[idx[0]])], m.node_names[int(m.beam_b[idx[-1]])]
            rows.append(f"  flexible link {link}: {len(idx)} beam element(s) {m.beam_names[idx[0]]} .. "
                        f"{m.beam_names[idx[-1]]}, nodes {first} .. {last}, length {L:.4g}, mass {np.sum(m.beam_mass[idx]):.4g}")
        out += _listing(rows, limit)
    if nbus:
        out.append("bushings:")
        out += _listing([f"  {n}: {'ground' if a < 0 else m.node_names[int(a)]} - {m.node_names[int(b)]}"
                         for n, a, b in zip(m.bushing_names, m.bushing_a, m.bushing_b)], limit)
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
    out += _listing(rows, limit)
    if not m.loops:
        out.append("loops: none")
    else:
        out.append(f"loops: {len(m.loops)}")
        for i, lp in enumerate(m.loops, 1):
            out.append(f"  loop {i}: cut at {lp.cut}; joints {', '.join(lp.joints)}; nodes {', '.join(lp.nodes)}")
    return "\n".join(out)
