"""What the compiler chooses for loop cuts once the Model exists (issue 12.1; docs/cut_damping.md):
the damping of bushings and loop-closing beams the user left to it, and the effective masses that
choice, the rigid cuts' penalty (elements/rigid_cut.py (AL7)) and ``flexmb info``'s cut table rest
on. :func:`finish` is called by ``ModelBuilder.compile`` and returns the finished, immutable model.

At the start state (``model.initial_state()``: q0, u0, drives at t = 0), with every held cut
direction as a row (a bushing's directions of nonzero diagonal stiffness less its free rotation; a
rigid cut's; flexmb.analysis.rigid.CutFrames):

    J = P G B          the closure Jacobian (P: held rows, G: the cut's deformation derivative)   (D0)
    W = J_f M̄_ff⁻¹ J_fᵀ                 over the undriven coordinates f: a driven coordinate does
                                          not yield to a cut force                               (D1)
    m_eff,i = min(1 / W_ii, m_cap,i),   ω_i = √(k_i / m_eff,i)       per direction, as listed      (D2)

A cut's local dynamics are W_cc⁻¹ d'' + C d' + K d = 0 (W_cc: its own block of W). The default
damping gives every local mode of the cut the damping ratio ζ = 0.5 (the matrix form of the note,
exact per mode, where the per-direction c_i = 2 ζ √(k_i m_eff,i) gives ratios 0.38…0.59 on a
four-bar):

    M_c = S Ṽ diag(min(1/w̃_j, 1)) Ṽᵀ S,   S W_cc S = Ṽ diag(w̃) Ṽᵀ,   S = diag(√m_cap,i)          (D8)
    K_c Φ = M_c Φ Ω²  (Φᵀ M_c Φ = I),   C_c = 2 ζ M_c Φ Ω Φᵀ M_c                                    (D6)

M_c is W_cc⁻¹ with each eigen-mass capped at the loop's mass (D8): at a singular start (the folded
rhombus, where the loop has an extra mobility) W_cc loses rank and its inverse is unbounded; the
cap m_cap is the mass of the moving bodies and beams of the cut's loop (translations) and their
inertia about the cut point, Σ m |c - p|² + tr I (rotations) (the whole model's where the cut
closes no loop). Directions the cut leaves free (zero stiffness, the free rotation) get no damping;
a bushing that closes no loop (a spring between a body on a free joint and ground) is no cut and
stays undamped unless the user gives its damping. A cut on a loop whose joints are all fixed or
driven moves no free coordinate: its rows of W are zero, its m_eff inf, and a bushing there gets
the damping of its caps (c = 2 ζ √(k m_cap) per direction); a rigid cut there is redundant, and
refused when the drives open it at the start or the model has no free coordinate at all
(:func:`_check_prescribed_cuts`).

A flexible link (beam elements) that lies on a loop is a cut too; its axial mode gets ζ = 0.5 by
stiffness-proportional damping (Zahariev eq. 13):

    k_ax = 1 / Σ (L0_e / EA_e),  m_ax = m_eff,ends + m_link / 3,  ω_ax = √(k_ax/m_ax),  α = 2 ζ / ω_ax   (D4)

with m_eff,ends by (D1)-(D2) for the distance of its two end nodes, the link's own mass left out
(and the coordinates that only it moves), capped as (D8). Its bending modes then get ζ_b = α ω_b / 2
(the link's physical flexibility, lightly damped).

Also computed, for ``flexmb info``'s warnings (flexmb.app.describe): the rigid-equivalent cut forces
at the start, λ0 = W⁺ (c0 - J_f M̄_ff⁻¹ r0) (Gauss's principle; r0 the residual without the cuts at
u'_f = 0, c0 = J_d u'_d + J' u), stored per direction as ``start_force``.
"""

from __future__ import annotations

import dataclasses
import logging
from types import MappingProxyType

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from flexmb.analysis.monitors import flexible_link_ends
from flexmb.analysis.rigid import CutFrames, RigidModel
from flexmb.elements import FAMILIES
from flexmb.elements.bushing import DIRECTIONS
from flexmb.engine.assembly import Assembler, Evaluation
from flexmb.errors import ModelError
from flexmb.model import Model
from flexmb.state import State

__all__ = ["ZETA", "finish", "cut_modes", "loop_caps"]

log = logging.getLogger("flexmb")

#: damping ratio of the default cut damping
ZETA = 0.5


def finish(model: Model) -> Model:
    """``model`` with the compiler's choices for its cuts (module docstring): the default damping of
    bushings (``auto_damping``) and loop-closing beams, the effective masses, the rigid cuts'
    penalty scales and the start forces. Unchanged (the same object) for a model without cuts."""
    bu = model.elements["bushing"]
    rc = model.elements.get("rigid_cut")
    links = _loop_links(model)
    if not bu.n and not (rc is not None and rc.n) and not links:
        return model
    asm = Assembler(model)
    st = model.initial_state()
    ev = asm.evaluate(st, elastic_cuts=False)
    free = model.free_u
    try:
        solve = _mass_solver(asm, ev, free)
    except (RuntimeError, ValueError) as exc:  # a singular M̄ (compile(require_mass=False)): nothing chosen
        log.warning("cut defaults not computed: the mass matrix is singular (%s); cut damping left at 0", exc)
        return model
    elements = dict(model.elements)
    if bu.n or (rc is not None and rc.n):
        elements.update(_cut_choices(model, asm, st, ev, free, solve))
    if links:
        elements["beam"] = _beam_choices(model, asm, ev, free, links)
    return dataclasses.replace(model, elements=MappingProxyType(elements))


# ------------------------------------------------------------------------------------------ helpers
def _mass_solver(asm: Assembler, ev: Evaluation, free: np.ndarray, M: sp.spmatrix | None = None):
    M = asm.mbar(ev, free) if M is None else M
    lu = spla.splu(sp.csc_matrix(M))

    def solve(r: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            x = lu.solve(np.asarray(r, dtype=float))
        if not np.all(np.isfinite(x)):
            raise _Overflow("non-finite solution")
        return x

    return solve


class _Overflow(ValueError):
    """M̄⁻¹ r is not finite (masses or forces beyond floating point)."""


def _overflow_error(model: Model, cuts: CutFrames, c: int, what: str) -> ModelError:
    """The ModelError of a cut whose start quantities ``what`` overflow."""
    kind = "rigid cut" if cuts.rigid[c] else "bushing"
    return ModelError(f"compile: {kind} '{cuts.names[c]}': {what} at the start is not finite (overflow): the masses of "
                      "its loop are too small, or its stiffness too large, for floating point; give physical masses, "
                      "inertias and stiffnesses.")


def loop_caps(model: Model, members: set[str], point: np.ndarray) -> tuple[float, float]:
    """(D8): the translational and rotational caps of a cut's effective masses: mass of the moving
    bodies and beams on the loops the cut (its elements ``members``) lies on, and their inertia
    about ``point`` (Σ m |c - p|² + tr I); the whole model's where it lies on no loop."""
    loops = [lp for lp in model.loops if members & set(lp.elements)]
    nodes = None if not loops else {model.node_index(n) for lp in loops for n in lp.nodes if n != "ground"}
    bodies = model.elements["body"]
    m_t = m_r = 0.0
    for i in range(bodies.n):
        k = int(bodies.node[i])
        if nodes is not None and k not in nodes:
            continue
        m = float(abs(bodies.mass[i]))
        R = model.R0[k]
        c = model.X0[k] + R @ bodies.com[i]
        m_t += m
        m_r += m * float(np.sum((c - point) ** 2)) + float(np.trace(bodies.inertia[i]))
    beams = model.elements["beam"]
    for e in range(beams.n):
        a, b = int(beams.a[e]), int(beams.b[e])
        if nodes is not None and not (a in nodes or b in nodes):
            continue
        c = 0.5 * (model.X0[a] + model.X0[b])
        m_t += float(beams.mass[e])
        m_r += float(beams.mass[e]) * (float(np.sum((c - point) ** 2)) + beams.L0[e] ** 2 / 12)
    return max(m_t, 1e-300), max(m_r, 1e-300)


def cut_modes(W: np.ndarray, K: np.ndarray, cap: np.ndarray, zeta: float = ZETA) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(D8), (D6) for one cut's active rows: the capped mass M_c, the damping C_c and the local
    mode frequencies Ω (rad/s) from its block W (n, n) of (D1), stiffness K (n, n) and caps (n,)."""
    s = np.sqrt(cap)
    w, V = np.linalg.eigh(s[:, None] * W * s[None, :])
    inv = np.where(w > 1.0, 1.0 / np.maximum(w, 1e-300), 1.0)
    Mc = s[:, None] * (V * inv) @ V.T * s[None, :]
    Mc = 0.5 * (Mc + Mc.T)
    lam, Phi = sla.eigh(0.5 * (K + K.T), Mc)
    om = np.sqrt(np.maximum(lam, 0.0))
    C = 2 * zeta * Mc @ Phi @ np.diag(om) @ Phi.T @ Mc
    return Mc, 0.5 * (C + C.T), om


def _gamma(rm: RigidModel, st: State) -> np.ndarray:
    """J' u: the closure's velocity-product acceleration (central difference along the motion)."""
    if not np.any(st.u):
        return np.zeros(len(rm.cut_names))
    eps = 1e-6 / max(1.0, float(np.abs(st.u).max()))
    return (rm._constraint_rate(st.retract(rm.model, eps * st.u))
            - rm._constraint_rate(st.retract(rm.model, -eps * st.u))) / (2 * eps)


def _cut_choices(model: Model, asm: Assembler, st: State, ev: Evaluation, free: np.ndarray, solve) -> dict:
    """Effective masses, start forces, default damping of bushings, penalty scales of rigid cuts."""
    rm = RigidModel(model)
    cuts: CutFrames = rm.cuts
    d, J = rm.closure(st, ev)
    Jf = J[:, free]
    rows = np.argwhere(cuts.mask)  # (cut, direction) of each row of J
    # M̄_ff⁻¹ J_fᵀ; with no free coordinate (a loop of fixed or driven joints) W is the zero (rows, rows):
    # no row moves a free coordinate, so every m_eff is inf and the caps (D8) set damping and penalty
    Z = np.zeros((free.size, Jf.shape[0]))
    for j, row in enumerate(Jf if free.size else ()):
        try:
            Z[:, j] = solve(row)
        except _Overflow:
            raise _overflow_error(model, cuts, int(rows[j, 0]), "the inverse mass it moves (M̄⁻¹ Jᵀ)") from None
    with np.errstate(all="ignore"):
        W = Jf @ Z
        W = 0.5 * (W + W.T)
    if not np.isfinite(W).all():
        j = int(np.argmax(~np.isfinite(W).all(axis=1)))
        raise _overflow_error(model, cuts, int(rows[j, 0]), "the inverse mass it moves (J M̄⁻¹ Jᵀ)")
    # rigid-equivalent start forces (Gauss's principle), for info's softness warning; nan where they overflow
    r0 = ev.residual(np.where(np.isin(np.arange(model.n_u), free), 0.0, st.udot))
    c0 = J[:, model.driven] @ st.udot[model.driven] + _gamma(rm, st)
    try:
        with np.errstate(all="ignore"):
            lam = np.linalg.pinv(W, rcond=1e-10, hermitian=True) @ (c0 - Jf @ solve(r0[free])) if W.size else np.zeros(0)
    except (_Overflow, np.linalg.LinAlgError):
        lam = np.full(len(rows), np.nan)
    _check_prescribed_cuts(model, cuts, rows, d, J @ st.u, c0)
    diag = np.diag(W)
    scale = max(float(diag.max(initial=0.0)), 1e-300)
    m_eff = np.full((cuts.n, 6), np.inf)
    regular = np.zeros((cuts.n, 6), bool)  # rows that move free coordinates at the start (not capped from 1/0)
    force = np.zeros((cuts.n, 6))
    caps = np.zeros((cuts.n, 2))
    for c in range(cuts.n):
        P = model.X0[cuts.b[c]] + model.R0[cuts.b[c]] @ cuts.sb[c]
        caps[c] = loop_caps(model, {cuts.names[c]}, P)
    for j, (c, i) in enumerate(rows):
        cap = caps[c, 0 if i < 3 else 1]
        regular[c, i] = diag[j] > 1e-14 * scale
        m_eff[c, i] = min(1.0 / diag[j], cap) if regular[c, i] else np.inf  # inf: moves no free coordinate
        force[c, i] = lam[j]
    out = {}
    bu = model.elements["bushing"]
    C = np.array(bu.C, dtype=float)
    on_loop = {e for lp in model.loops for e in lp.elements}
    for c in np.flatnonzero(~cuts.rigid):
        if not bu.auto_damping[c] or bu.names[c] not in on_loop:  # a bushing on no loop is a plain spring: undamped
            continue
        sel = np.flatnonzero(rows[:, 0] == c)
        if not sel.size:
            continue
        dirs = rows[sel, 1]
        cap = np.where(dirs < 3, caps[c, 0], caps[c, 1])
        try:
            with np.errstate(all="ignore"):
                _, Cc, om = cut_modes(W[np.ix_(sel, sel)], bu.K[c][np.ix_(dirs, dirs)], cap)
        except (ValueError, np.linalg.LinAlgError):  # non-finite values refused by eigh
            Cc = np.full((dirs.size, dirs.size), np.nan)
        if not np.isfinite(Cc).all():
            raise _overflow_error(model, cuts, c, f"its default damping (zeta = {ZETA} on its stiffness "
                                  f"{np.diag(bu.K[c]).tolist()} and the masses of its loop, at most {caps[c].tolist()})")
        C[c] = 0.0
        C[c][np.ix_(dirs, dirs)] = Cc
        log.info("bushing '%s': default damping (zeta = %g) on %s, diagonal %s, local modes %s rad/s", bu.names[c], ZETA,
                 ", ".join(DIRECTIONS[i] for i in dirs), np.array2string(np.diag(Cc), precision=4),
                 np.array2string(om, precision=4))
    nb = bu.n
    out["bushing"] = dataclasses.replace(bu, **_frozen(C=C, m_eff=m_eff[:nb], start_force=force[:nb]))
    rc = model.elements.get("rigid_cut")
    if rc is not None and rc.n:
        me = m_eff[nb:]
        fin = np.where(regular[nb:] & rc.mask, me, 0.0)  # (AL7): the largest m_eff of the rows that move
        m_t = fin[:, :3].max(axis=1)
        m_r = fin[:, 3:].max(axis=1)
        with np.errstate(over="ignore", invalid="ignore"):
            size = np.float64(model.size)
            m_t = np.where(m_t > 0, m_t, caps[nb:, 0])
            m_r = np.where(m_r > 0, m_r, m_t * size**2)
        scale_rows = np.where(np.arange(6) < 3, m_t[:, None], m_r[:, None])
        given = ~np.isnan(rc.penalty)
        scale_rows[given] = rc.penalty[given, None]
        if not np.isfinite(scale_rows).all():
            c = nb + int(np.argmax(~np.isfinite(scale_rows).all(axis=1)))
            raise _overflow_error(model, cuts, c, f"its penalty scale (the mass of its loop {caps[c].tolist()}, times the "
                                  f"square of the model's size {size:.3g} m for the rotations)")
        # held rows that depend on the others at the start (an overconstrained loop, e.g. Bricard's): no singular
        # configuration is reached when the closure Jacobian has this many near-zero singular values (AL12)
        sel = rows[:, 0] >= nb
        Jr = Jf[sel] * np.where(rows[sel, 1] >= 3, model.size, 1.0)[:, None]
        redundancy = int(sel.sum() - np.linalg.matrix_rank(Jr, tol=1e-10 * max(np.abs(Jr).max(initial=0.0), 1e-300))) \
            if Jr.size else int(sel.sum())
        out["rigid_cut"] = dataclasses.replace(rc, redundancy=redundancy, **_frozen(m_eff=me, alpha_scale=scale_rows))
    return out


def _prescribed_path(model: Model, a: int, b: int) -> list[str] | None:
    """The joints of the tree path between nodes ``a`` (-1: ground) and ``b`` when none of them has a
    free coordinate (all fixed or driven: a cut between a and b closes a loop that nothing can move),
    else None."""
    eon = model.tree.edge_of_node
    path = set(model.tree.ancestors(int(eon[b]))) ^ (set() if a < 0 else set(model.tree.ancestors(int(eon[a]))))
    driven = set(model.driven.tolist())
    for k in path:
        u0 = int(model.joint_u_start[k])
        if any(u not in driven for u in range(u0, u0 + model.joint_kinds[k].n_u)):
            return None
    return [model.joint_names[k] for k in sorted(path)]


def _check_prescribed_cuts(model: Model, cuts: CutFrames, rows: np.ndarray, d: np.ndarray, v: np.ndarray,
                           acc: np.ndarray) -> None:
    """Refuse a rigid cut on a loop whose joints are all fixed or driven (no coordinate can yield to
    it) when the drives open it at the start: its closure d above its tolerance, or its rate v or
    acceleration acc (J u' of the drives plus J' u) not zero to round-off. Such a loop is held by its
    drives alone: a cut that the drives keep closed is redundant and allowed (its multipliers stay
    at what its closure's round-off gives, about zero), except in a model with no undriven coordinate
    at all, where the rigid cuts' projections (elements/rigid_cut.py (AL5), (AL6)) have nothing to
    solve for: refused, a bushing holds such a loop instead (its force from its stiffness)."""
    rc = model.elements.get("rigid_cut")
    if rc is None or not rc.n:
        return
    nb = model.elements["bushing"].n
    if not model.free_u.size:
        name = cuts.names[nb]
        raise ModelError(
            f"compile: rigid cut '{name}': every coordinate of the model is fixed or driven (inverse dynamics), so "
            "nothing can yield to the cut: it holds no motion, its force is not determined by the equations, and its "
            "projections, which solve for the undriven coordinates, have none. Cut the loop with "
            f"ModelBuilder.add_bushing('{name}', ...) instead (its stiffness then gives the cut force), or leave a "
            "coordinate undriven.")
    with np.errstate(over="ignore", invalid="ignore"):
        size = max(1.0, float(np.ptp(model.X0, axis=0).max(initial=0.0)))
        st = model.initial_state()
        u_max = np.abs(st.u).max(initial=0.0)
        a_max = np.abs(st.udot).max(initial=0.0) + u_max**2
    for c in range(nb, cuts.n):
        sel = np.flatnonzero(rows[:, 0] == c)
        joints = _prescribed_path(model, int(cuts.a[c]), int(cuts.b[c])) if sel.size else None
        if joints is None:
            continue
        i = c - nb
        ref = np.where(rows[sel, 1] < 3, size, 1.0)  # round-off scale of a translation [m] or rotation [rad] row
        for what, val, limit, unit in (("open by", d[sel], np.full(sel.size, rc.tol[i]), ("m", "rad")),
                                       ("opening at the rate", v[sel], 1e-9 * ref * u_max, ("m/s", "rad/s")),
                                       ("opening with the acceleration", acc[sel], 1e-6 * ref * a_max, ("m/s²", "rad/s²"))):
            over = np.flatnonzero(np.abs(val) > limit)
            if over.size:
                k = int(over[np.argmax(np.abs(val[over]))])
                dr = int(rows[sel[k], 1])
                tol = f" (its tolerance: {rc.tol[i]:.3g} {unit[dr >= 3]})" if what == "open by" else ""
                via = f"the joints {joints}, all fixed or driven," if joints else "no joint"
                raise ModelError(
                    f"compile: rigid cut '{cuts.names[c]}' closes a loop through {via} so no coordinate can move to "
                    f"close it, and at t = 0 the drives and initial coordinates leave it {what} {abs(val[k]):.4g} "
                    f"{unit[dr >= 3]} in direction {DIRECTIONS[dr]}{tol}. Give drives (and q0 of the fixed and driven "
                    "joints) that keep the cut closed, leave a joint of the loop undriven, or cut the loop with "
                    f"ModelBuilder.add_bushing('{cuts.names[c]}', ...) (elastic).")


def _frozen(**arrays: np.ndarray) -> dict[str, np.ndarray]:
    out = {}
    for k, a in arrays.items():
        a = np.ascontiguousarray(a)
        a.setflags(write=False)
        out[k] = a
    return out


def _loop_links(model: Model) -> list[str]:
    """The flexible links (beam elements grouped by ``link``) that lie on a loop."""
    beams = model.elements["beam"]
    if not beams.n:
        return []
    on_loop = {e for lp in model.loops for e in lp.elements}
    return list(dict.fromkeys(lk for e, lk in zip(beams.names, beams.link) if e in on_loop))


def _beam_choices(model: Model, asm: Assembler, ev: Evaluation, free: np.ndarray, links: list[str]):
    """(D4) for every loop-closing link: m_axial for all, α for those left to the compiler."""
    beams = model.elements["beam"]
    fam = FAMILIES["beam"]
    alpha = np.array(beams.alpha, dtype=float)
    m_axial = np.array(beams.m_axial, dtype=float)
    try:
        ends = flexible_link_ends(model)
    except Exception as exc:  # noqa: BLE001 — a link that is no chain of beams: no default for it
        log.info("beam cut defaults skipped: %s", exc)
        return beams
    link_of = np.asarray(beams.link)
    M_all = asm.mbar(ev, free).tocsc()
    B = ev.B[:, free].tocsc()
    N = model.n_nodes
    masses = fam.blocks(model, beams, None, ev.elements["beam"], ev.kin, 0.0, 0.0, 1.0, False, False)
    for link in links:
        sel = np.flatnonzero(link_of == link)
        if link not in ends:
            continue
        a, b = ends[link]
        # M̄ without this link's own mass: Bᵀ M_link B subtracted
        dof = []
        for e in sel:
            dof.append(np.concatenate([6 * beams.a[e] + np.arange(6), 6 * beams.b[e] + np.arange(6)]))
        rr = np.concatenate([np.repeat(d, 12) for d in dof])
        cc = np.concatenate([np.tile(d, 12) for d in dof])
        Ml = sp.csc_matrix((np.concatenate([masses[e].ravel() for e in sel]), (rr, cc)), shape=(6 * N, 6 * N))
        Mw = sp.csc_matrix(M_all - B.T @ Ml @ B)  # sparse: a long link has thousands of coordinates
        d = Mw.diagonal()
        keep = d > 1e-12 * max(float(d.max(initial=0.0)), 1e-300)
        e_ax = ev.kin.x[b] - ev.kin.x[a]
        L = float(np.linalg.norm(e_ax))
        w = np.zeros((N, 6))
        w[a, :3] -= e_ax / L
        w[b, :3] += e_ax / L
        Jrow = ev.project(w)[free]
        m_link = float(np.sum(beams.mass[sel]))
        cap = loop_caps(model, {beams.names[e] for e in sel}, 0.5 * (model.X0[a] + model.X0[b]))[0]
        if np.any(np.abs(Jrow[~keep]) > 1e-9 * max(float(np.abs(Jrow).max()), 1e-300)):
            m_ends = 0.0  # an end moves with a coordinate only the link's mass moves
        else:
            Jr = Jrow[keep]
            try:
                Wl = float(Jr @ spla.splu(sp.csc_matrix(Mw[keep][:, keep])).solve(Jr)) if Jr.size else 0.0
            except RuntimeError:  # the ends' mass matrix without the link is singular: take the cap (D8)
                Wl = 0.0
            m_ends = min(1.0 / Wl, cap) if Wl > 1e-300 else cap
        k_ax = 1.0 / float(np.sum(1.0 / beams.Kl[sel, 0, 0]))
        m_ax = m_ends + m_link / 3.0
        m_axial[sel] = m_ax
        auto = beams.auto_damping[sel]
        if auto.any():
            om = np.sqrt(k_ax / m_ax)
            alpha[sel[auto]] = 2 * ZETA / om
            log.info("flexible link '%s' closes a loop: default damping alpha = %.4g s (axial mode %.5g rad/s, zeta = %g)",
                     link, 2 * ZETA / om, om, ZETA)
    return dataclasses.replace(beams, **_frozen(alpha=alpha, m_axial=m_axial))
