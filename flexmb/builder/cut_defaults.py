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
(elements/rigid_cut_start.py, check_prescribed_cuts).

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
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from flexmb.analysis.monitors import flexible_link_ends
from flexmb.analysis.rigid import RigidModel, has_cuts
from flexmb.elements import FAMILIES
from flexmb.elements.cut_contract import ZETA, CutFrames, CutStart, cut_modes
from flexmb.engine.assembly import Assembler, Evaluation
from flexmb.errors import ModelError
from flexmb.model import Model
from flexmb.state import State

__all__ = ["ZETA", "finish", "cut_modes", "loop_caps"]

log = logging.getLogger("flexmb")


def finish(model: Model) -> Model:
    """``model`` with the compiler's choices for its cuts (module docstring): the default damping of
    bushings (``auto_damping``) and loop-closing beams, the effective masses, the rigid cuts'
    penalty scales and the start forces. Unchanged (the same object) for a model without cuts."""
    cuts = has_cuts(model)
    links = _loop_links(model)
    if not cuts and not links:
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
    if cuts:
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


def _overflow_error(kind: str, name: str, what: str) -> ModelError:
    """The ModelError of cut ``name`` (a ``kind``: its family's label) whose start quantities ``what`` overflow."""
    return ModelError(f"compile: {kind} '{name}': {what} at the start is not finite (overflow): the masses of "
                      "its loop are too small, or its stiffness too large, for floating point; give physical masses, "
                      "inertias and stiffnesses.")


def _cut_label(model: Model, c: int) -> str:
    """What cut ``c`` of model_cuts(model) is called (its family's label)."""
    first = 0
    for name, data in model.elements.items():
        fam = FAMILIES.get(name)
        if fam is not None and fam.cut and data.n:
            if c < first + data.n:
                return fam.label
            first += data.n
    return "cut"


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
            c = int(rows[j, 0])
            raise _overflow_error(_cut_label(model, c), cuts.names[c], "the inverse mass it moves (M̄⁻¹ Jᵀ)") from None
    with np.errstate(all="ignore"):
        W = Jf @ Z
        W = 0.5 * (W + W.T)
    if not np.isfinite(W).all():
        j = int(np.argmax(~np.isfinite(W).all(axis=1)))
        c = int(rows[j, 0])
        raise _overflow_error(_cut_label(model, c), cuts.names[c], "the inverse mass it moves (J M̄⁻¹ Jᵀ)")
    # rigid-equivalent start forces (Gauss's principle), for info's softness warning; nan where they overflow
    r0 = ev.residual(np.where(np.isin(np.arange(model.n_u), free), 0.0, st.udot))
    c0 = J[:, model.driven] @ st.udot[model.driven] + _gamma(rm, st)
    try:
        with np.errstate(all="ignore"):
            lam = np.linalg.pinv(W, rcond=1e-10, hermitian=True) @ (c0 - Jf @ solve(r0[free])) if W.size else np.zeros(0)
    except (_Overflow, np.linalg.LinAlgError):
        lam = np.full(len(rows), np.nan)
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
    return _family_choices(model, cuts, rows, (W, Jf, d, J @ st.u, c0), (m_eff, regular, force, caps))


def _family_choices(model: Model, cuts: CutFrames, rows: np.ndarray, row_values: tuple, cut_values: tuple) -> dict:
    """Each cut family's data with its choices made (ElementFamily.cut_defaults) from its part of the
    start quantities: ``row_values`` (W, J_f, closure, rate, acceleration) over the held ``rows``,
    ``cut_values`` (m_eff, regular, force, caps) per cut of ``cuts`` (model_cuts: the families one after
    the other in registry order)."""
    W, Jf, d, v, acc = row_values
    m_eff, regular, force, caps = cut_values
    on_loop = frozenset(e for lp in model.loops for e in lp.elements)
    out = {}
    first = 0
    for name, data in model.elements.items():
        fam = FAMILIES.get(name)
        if fam is None or not fam.cut or not data.n:
            continue
        own = slice(first, first + data.n)
        sel = np.flatnonzero((rows[:, 0] >= first) & (rows[:, 0] < first + data.n))

        def overflow(c: int, what: str, first: int = first, label: str = fam.label) -> ModelError:
            return _overflow_error(label, cuts.names[first + c], what)

        start = CutStart(fam.cut_frames(model, data), rows[sel] - np.array([first, 0]), W[np.ix_(sel, sel)], Jf[sel],
                         d[sel], v[sel], acc[sel], m_eff[own], regular[own], force[own], caps[own], on_loop, overflow)
        out[name] = fam.cut_defaults(model, data, start)
        first += data.n
    return out


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
