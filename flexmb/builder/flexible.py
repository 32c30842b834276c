"""Make a rigid link flexible: ``make_flexible(builder, link, n_elements, section)`` (issue 37).

The rigid link is a node (``link``) with its bodies, hung on its parent by a joint, with joints to
its children. It becomes a beam of ``n_elements`` co-rotational elements from ``start`` to ``end``
(by default the link's own frame origin and its child joint's point: between its joint frames),
clamped at ``start`` to the link node (the node itself where ``start`` is its origin, else a new
node ``<link>.0`` on a fixed joint ``<link>.start``); the child joints are re-hung on the beam's
last node ``<link>.<n>`` at their own points (the offset from the beam's end to a joint point stays
rigid). The link's bodies are replaced so that the mass, the centre of mass and, where a beam can
carry it, the inertia stay what they were (all at the assembly configuration):

    m = m_beam + m_r,   m_beam = rho A L                                                   (F1)

the remainder m_r goes to two end bodies ``<link>.a`` (on the start node) and ``<link>.b`` (on the
last node) with masses m_r (1 − λ), m_r λ and centres of mass

    p_a = (1 − κ) (A + d) + κ T,   p_b = (1 − κ) (B + d) + κ T,                              (F2)
    T = (m c − m_beam (A + B)/2) / m_r,   λ = clip((T − A)·e / L, 0, 1),   d = T − A − λ (B − A)

(A, B the beam's ends, e its unit axis, c the link's centre of mass), so m_a p_a + m_b p_b = m_r T and
the centre of mass is exact for every κ. κ = 0 puts the end masses at the beam's ends (offset by d
across it); but masses at the ends may hold more inertia than the rigid link has. With the second
moments Σ = tr(J)/2 I − J (J an inertia about the centre of mass; a mass distribution is physical
iff its Σ is positive semi-definite), the remainder's own second moment about T is

    Σ_r = Σ_link − Σ_beam(about c) − m_r (T − c)(T − c)ᵀ                                        (F3)

and the end masses' spread about T takes (1 − κ)² P of it, P = m_r λ (1 − λ) L² e eᵀ. κ is the
smallest value in [0, 1] that leaves Σ_r − (1 − κ)² P positive semi-definite (bisection); what is
left is split between the two end bodies as their own inertias, in proportion to their masses. The
inertia is then exact. Where Σ_r itself is not positive semi-definite (the beam alone holds more
inertia in some direction than the rigid link: a section too large), κ = 1 and the nearest physical
remainder (Σ_r's negative eigenvalues set to zero) is used; the :class:`FlexibleLink` report says how
much the inertia changed. A beam heavier than the link (m_beam > m) is refused.

What changes besides (say so where it matters): the link's elastic deformation, of course; loads,
bushings or cuts on the link node stay on it (the beam's start); the end bodies sit on the beam's end
nodes, so their inertia follows the end sections' rotations, not the beam's middle. The link's shapes
(flexmb.builder.shapes) are carried by the beam's nodes: each point by the node nearest to it along
the beam (its projection on the axis), so the drawn link follows the beam piecewise rigidly.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from flexmb.builder import arguments as args
from flexmb.builder.model_builder import ModelBuilder
from flexmb.builder.records import BeamSection, JointSpec, readonly
from flexmb.errors import ModelError

__all__ = ["FlexibleLink", "make_flexible", "beam_inertia"]


@dataclass(frozen=True)
class FlexibleLink:
    """What :func:`make_flexible` did to ``link``: the beam's ``nodes`` and ``elements``, the joints
    re-hung on its last node, the end ``bodies``; the rigid link's ``mass``, centre of mass ``com`` and
    ``inertia`` (about the centre of mass) and the flexible link's at the assembly configuration
    (``com_flexible``, ``inertia_flexible``), all global; ``beam_mass``, ``end_masses`` (a, b), ``kappa``
    (eq. F2: how far the end masses were pulled from the beam's ends towards the remainder's centre of
    mass, 0 = at the ends) and ``inertia_projected`` (eq. F3 had no physical solution)."""

    link: str
    nodes: tuple[str, ...]
    elements: tuple[str, ...]
    rehung: tuple[str, ...]
    bodies: tuple[str, ...]
    mass: float
    com: np.ndarray
    inertia: np.ndarray
    beam_mass: float
    end_masses: tuple[float, float]
    kappa: float
    inertia_projected: bool
    com_flexible: np.ndarray
    inertia_flexible: np.ndarray

    @property
    def inertia_change(self) -> float:
        """Largest entry of (flexible − rigid inertia) relative to the rigid inertia's largest entry."""
        return float(np.abs(self.inertia_flexible - self.inertia).max() / max(np.abs(self.inertia).max(), 1e-300))

    def text(self) -> str:
        """One paragraph: what the link became and what changed."""
        ma, mb = self.end_masses
        inertia = (f"inertia changed by {self.inertia_change:.3g} (relative; the beam holds more than the rigid link "
                   "in some direction)" if self.inertia_projected else "inertia kept")
        return (f"link '{self.link}': {len(self.elements)} beam elements of {self.beam_mass:.4g} kg and end bodies of "
                f"{ma:.4g} kg and {mb:.4g} kg (centres of mass pulled {self.kappa:.3g} of the way to the middle) "
                f"replace {self.mass:.4g} kg; mass and centre of mass kept, {inertia}; joints {list(self.rehung)} "
                f"now hang on node '{self.nodes[-1]}'.")


def _skew_moment(r: np.ndarray) -> np.ndarray:
    """|r|² I − r rᵀ: the inertia of a unit point mass at r about the origin."""
    return float(r @ r) * np.eye(3) - np.outer(r, r)


def _second_moment(J: np.ndarray) -> np.ndarray:
    return 0.5 * np.trace(J) * np.eye(3) - J


def _inertia(S: np.ndarray) -> np.ndarray:
    return np.trace(S) * np.eye(3) - S


def beam_inertia(section: BeamSection, length: float, frame: np.ndarray) -> tuple[float, np.ndarray]:
    """Mass and inertia about its middle (global, ``frame``: the section frame E0, columns e1 along the
    axis, e2, e3) of a straight beam as a rigid body: what its consistent mass gives for rigid motions
    (elements/beam/__init__.py eq. 5; rotary inertia rho Iy about e2, rho Iz about e3, rho (Iy + Iz)
    about the axis)."""
    m = section.rho * section.A * length
    local = np.diag([section.rho * (section.Iy + section.Iz) * length,
                     m * length**2 / 12 + section.rho * section.Iy * length,
                     m * length**2 / 12 + section.rho * section.Iz * length])
    return m, frame @ local @ frame.T


def _rigid_link(builder: ModelBuilder, link: str) -> tuple[list[str], float, np.ndarray, np.ndarray]:
    """The bodies on ``link`` and their mass, centre of mass and inertia about it (global)."""
    node = builder.nodes[link]
    names = [b.name for b in builder.bodies.values() if b.node == link]
    if not names:
        raise ModelError(f"make_flexible: node '{link}' has no body; a flexible link replaces a rigid one.")
    m, mc, J = 0.0, np.zeros(3), np.zeros((3, 3))
    for n in names:
        b = builder.bodies[n]
        m += b.mass
        mc += b.mass * (node.position + node.rotation @ b.com)
    c = mc / m
    for n in names:
        b = builder.bodies[n]
        p = node.position + node.rotation @ b.com
        J += node.rotation @ b.inertia @ node.rotation.T + b.mass * _skew_moment(p - c)
    return names, m, c, J


def _end_bodies(m: float, c: np.ndarray, J: np.ndarray, m_beam: float, J_beam: np.ndarray, A: np.ndarray,
                B: np.ndarray) -> tuple[list[tuple[float, np.ndarray, np.ndarray]], float, bool]:
    """The two end bodies (mass, centre of mass, inertia about it; global) of eq. (F1)–(F3), κ, and
    whether the remainder's inertia had to be projected."""
    m_r = m - m_beam
    L = float(np.linalg.norm(B - A))
    e = (B - A) / L
    mid = 0.5 * (A + B)
    if m_r <= 1e-12 * m:
        return [], 1.0, bool(np.abs(J - J_beam - m_beam * _skew_moment(mid - c)).max() > 1e-12 * np.abs(J).max())
    T = (m * c - m_beam * mid) / m_r
    lam = float(np.clip((T - A) @ e / L, 0.0, 1.0))
    d = T - A - lam * (B - A)
    S_r = _second_moment(J) - _second_moment(J_beam + m_beam * _skew_moment(mid - c)) - m_r * np.outer(T - c, T - c)
    S_r = 0.5 * (S_r + S_r.T)
    scale = max(float(np.abs(_second_moment(J)).max()), 1e-300)
    ev, V = np.linalg.eigh(S_r)
    projected = bool(ev.min() < -1e-12 * scale)
    if projected:
        S_r = (V * np.maximum(ev, 0.0)) @ V.T
    P = m_r * lam * (1 - lam) * L**2 * np.outer(e, e)

    def fits(s: float) -> bool:
        return bool(np.linalg.eigvalsh(S_r - s * P).min() >= -1e-12 * scale)

    lo, hi = 0.0, 1.0  # s = (1 - κ)²: the largest that fits
    if fits(1.0):
        lo = 1.0
    else:
        for _ in range(80):
            mid_s = 0.5 * (lo + hi)
            lo, hi = (mid_s, hi) if fits(mid_s) else (lo, mid_s)
    s = lo
    kappa = 1.0 - float(np.sqrt(s))
    left = S_r - s * P
    bodies = []
    for frac, end in ((1.0 - lam, A + d), (lam, B + d)):
        p = (1.0 - kappa) * end + kappa * T
        bodies.append((m_r * frac, p, _inertia(frac * left)))
    return bodies, kappa, projected


def _default_z_hint(axis: np.ndarray, rotation: np.ndarray) -> np.ndarray:
    """The link axis most normal to the beam's axis."""
    k = int(np.argmin(np.abs(rotation.T @ axis)))
    return rotation[:, k]


def make_flexible(builder: ModelBuilder, link: str, n_elements: int, section: BeamSection,
                  start: Sequence[float] | None = None, end: Sequence[float] | None = None,
                  z_hint: Sequence[float] | None = None, damping: float | None = None) -> FlexibleLink:
    """Replace the rigid link on node ``link`` by ``n_elements`` beam elements of ``section`` (module
    docstring: eq. F1–F3 keep its mass, centre of mass and, where a beam can carry it, inertia).

    ``start``, ``end``: the beam's ends in the link's axes relative to its node (as a body's ``com``);
    default: the node's origin and the point of the one joint hanging on the node. Every joint hanging
    on the node is re-hung on the beam's last node. ``z_hint``: the section's e3 direction hint (global;
    default: the link axis most normal to the beam); ``damping``: the elements' stiffness-proportional
    factor α [s] (add_flexible_link). Returns a :class:`FlexibleLink` report."""
    who = f"make_flexible: link {link!r}"
    if not isinstance(builder, ModelBuilder):
        raise ModelError(f"{who}: builder = {builder!r} must be a flexmb ModelBuilder.")
    args.name(link, who, "link")
    if link not in builder.nodes:
        raise ModelError(f"{who}: unknown node {link!r}. Known nodes: {list(builder.nodes)[:20]}.")
    if not isinstance(section, BeamSection):
        raise ModelError(f"{who}: section = {section!r} must be a flexmb.BeamSection.")
    n_elements = args.integer(n_elements, who, "n_elements", low=1)
    node = builder.nodes[link]
    children = [j for j in builder.joints.values() if j.parent == link]
    if end is None:
        if len(children) != 1:
            raise ModelError(f"{who}: {len(children)} joints hang on it ({[j.name for j in children]}); give end, the "
                             "beam's last point in the link's axes.")
        j = children[0]
        B = j.point if j.point is not None else builder.nodes[j.child].position
    else:
        B = node.position + node.rotation @ args.vector(end, 3, who, "end")
    A = node.position + (np.zeros(3) if start is None else node.rotation @ args.vector(start, 3, who, "start"))
    L = float(np.linalg.norm(B - A))
    if L < 1e-9 * max(1.0, float(np.abs(A).max())):
        raise ModelError(f"{who}: the beam's ends coincide at {A.tolist()}; give start and end.")
    names, m, c, J = _rigid_link(builder, link)
    axis = (B - A) / L
    hint = _default_z_hint(axis, node.rotation) if z_hint is None else args.direction(z_hint, who, "z_hint")
    e2 = np.cross(hint, axis)
    if np.linalg.norm(e2) < 1e-9:
        raise ModelError(f"{who}: z_hint {list(hint)} is parallel to the beam's axis; give another direction.")
    e2 /= np.linalg.norm(e2)
    E0 = np.stack([axis, e2, np.cross(axis, e2)], axis=1)
    m_beam, J_mid = beam_inertia(section, L, E0)
    if m_beam > m * (1 + 1e-12):
        raise ModelError(f"{who}: the beam (rho A L = {m_beam:.4g} kg) is heavier than the rigid link ({m:.4g} kg); "
                         "give a lighter section.")
    bodies, kappa, projected = _end_bodies(m, c, J, m_beam, J_mid, A, B)
    at_origin = np.linalg.norm(A - node.position) <= 1e-12 * max(1.0, float(np.abs(A).max()))
    nodes = builder.add_flexible_link(link, A, B, n_elements, section, node_a=link if at_origin else None,
                                      z_hint=hint, damping=damping)
    if not at_origin:
        builder.add_joint(f"{link}.start", "fixed", link, nodes[0], point=A)
    tip = nodes[-1]
    _remove_bodies(builder, names)
    added, masses = [], []
    for tag, nd, (mass, p, Jb) in zip("ab", (nodes[0], tip), bodies):
        masses.append(mass)
        if mass <= 0.0:
            continue
        spec = builder.nodes[nd]
        added.append(builder.add_body(f"{link}.{tag}", nd, mass, spec.rotation.T @ (p - spec.position),
                                      spec.rotation.T @ Jb @ spec.rotation))
    _recarry_shapes(builder, link, nodes, A, axis, L)
    rehung = tuple(j.name for j in children)
    for j in children:
        _rehang(builder, j, tip)
    # the flexible link's mass properties at assembly, summed from what was added
    m_f = m_beam + sum(masses)
    c_f = (m_beam * 0.5 * (A + B) + sum(mass * p for mass, p, _ in bodies)) / m_f
    J_f = J_mid + m_beam * _skew_moment(0.5 * (A + B) - c_f)
    for mass, p, Jb in bodies:
        J_f = J_f + Jb + mass * _skew_moment(p - c_f)
    return FlexibleLink(link, tuple(nodes), tuple(f"{link}.e{i}" for i in range(n_elements)), rehung, tuple(added),
                        m, readonly(c), readonly(J), m_beam, (masses[0], masses[1]) if masses else (0.0, 0.0),
                        kappa, projected, readonly(c_f), readonly(J_f))


# ---------------------------------------------------------------------- record surgery
# The builder has no call that removes a body, moves a joint or changes a record (every add_* only
# adds). These change its record tables directly; they belong in the builder's record tables as methods (then
# ModelBuilder.make_flexible delegates here in one line).

def _remove_bodies(builder: ModelBuilder, names: list[str]) -> None:
    for n in names:
        del builder._bodies[n]


def _rehang(builder: ModelBuilder, joint: JointSpec, parent: str) -> None:
    builder._joints[joint.name] = dataclasses.replace(joint, parent=parent)


def _recarry_shapes(builder: ModelBuilder, link: str, nodes: list[str], A: np.ndarray, axis: np.ndarray,
                    L: float) -> None:
    """Points of shapes carried by ``link`` move to the beam node nearest along the axis (module docstring)."""
    table = builder._elements.get("shape", {})
    spec0 = builder.nodes[link]
    X = np.array([builder.nodes[n].position for n in nodes])
    Rn = [builder.nodes[n].rotation for n in nodes]
    n_el = len(nodes) - 1
    for name, rec in list(table.items()):
        on = np.array([n == link for n in rec.nodes])
        if not on.any():
            continue
        pts = np.array(rec.points, dtype=float)
        g = spec0.position + pts[on] @ spec0.rotation.T  # global, at assembly
        k = np.clip(np.rint((g - A) @ axis / L * n_el), 0, n_el).astype(int)
        new_nodes = list(rec.nodes)
        for i, (row, kk) in enumerate(zip(np.flatnonzero(on), k)):
            new_nodes[row] = nodes[kk]
            pts[row] = Rn[kk].T @ (g[i] - X[kk])
        table[name] = dataclasses.replace(rec, nodes=tuple(new_nodes), points=readonly(pts))
