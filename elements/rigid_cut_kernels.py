"""Compiled kernels of the rigid cuts (flexmb.elements.rigid_cut; docs/rigid_cut.md): the cut
forces of an iterate with the multiplier update (AL1, AL3), the penalty blocks of the iteration
matrix (AL2), and the Newton update of the cuts' internal state (AL4, AL11, AL13). The family's Python
methods and the compiled Newton steps (flexmb/solvers/element_step.py) call the same kernels, so
a step is the same bit for bit on either path.

Internal state per cut (State.elements["rigid_cut"], (n_el, 10)): columns LAM (0..5) the multipliers
λ in the cut's directions (zero on free rows), S the penalty factor (α = S × alpha_scale), SMAX its
largest value within the step, PHASE the Newton phase (-1: accepted, the cut force is λ; 0: the
first iterate of a step, force λ + αΦ; >= 1: later iterates, λ updated at the iterate) and PREV the
closure of the previous iterate relative to the tolerance, negative where the cut keeps its λ for the
rest of the step (AL13: closed, its closure no longer falling).

The forces' kernel takes its arrays grouped as the bushings' kernel does (elements/cut_kernels.py,
docs/architecture.md P6): the model's arrays of the cuts in one :class:`RigidCutArrays`, what it writes
per cut in one :class:`RigidCutResults`, each unpacked once at the top of the kernel. The compiled
steps pass their own plain tuples of the same fields in the same order (flexmb/solvers/element_step.py).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from flexmb.elements.cut_kernels import CUT_FRAMES, WORK, _deformation, add_generalized, cut_deformations
from flexmb.rotations import expm_into

__all__ = ["LAM", "S", "SMAX", "PHASE", "PREV", "N_STATE", "EPS", "KAPPA", "ESCALATION", "RigidCutArrays",
           "RigidCutResults", "rigid_cut_forces", "penalty_blocks", "rigid_cut_update", "closure_scales", "relative_closures",
           "closure_rates", "closure_wrenches", "gdot_times_v"]

LAM, S, SMAX, PHASE, PREV = slice(0, 6), 6, 7, 8, 9
N_STATE = 10
EPS = float(np.finfo(float).eps)
KAPPA = 1e4  # (AL7): β'α W >= κ in the cut's heaviest direction, the closure falls ~ 1e4 per iteration
ESCALATION = 100.0  # (AL11): α may grow up to this factor within a step
_L0 = 0  # first column of LAM (numba-friendly index)


class RigidCutArrays(NamedTuple("RigidCutFields", [*CUT_FRAMES,
                                                    ("mask", np.ndarray),  # held directions (tx, ..., rz) (bool) (n x 6)
                                                    ("alpha_scale", np.ndarray),  # α per unit penalty factor (AL7) (n x 6)
                                                    ("tol", np.ndarray),  # closure tolerance, translations [m] (AL4) (n)
                                                    ("tol_rot", np.ndarray)])):  # ... of the rotations [rad] (AL4) (n)
    """The rigid cuts' model arrays (n cuts) as the compiled iterates read them (elements/rigid_cut.py's
    RigidCutData and the family's prepared end indices): the cut frames (CUT_FRAMES of
    elements/cut_kernels.py), then the held directions ``mask`` (tx, ty, tz, rx, ry, rz), the penalty
    per unit penalty factor ``alpha_scale`` (AL7) and the closure tolerances ``tol`` [m] and ``tol_rot``
    [rad] (AL4)."""

    __slots__ = ()


class RigidCutResults(NamedTuple):
    """What rigid_cut_forces writes per cut."""

    d: np.ndarray  # the deformation, eq. (1)-(2) of elements/bushing.py                  (n x 6)
    G: np.ndarray  # its derivative ∂d/∂X over (x_a, θ_a, x_b, θ_b)                        (n x 6 x 12)
    A: np.ndarray  # the cut axes R_a E_a (columns, global)                               (n x 3 x 3)
    phi: np.ndarray  # the closure Φ = P d (AL0), zero on free rows                       (n x 6)
    alpha: np.ndarray  # the penalty α of this iterate (AL7), zero on free rows           (n x 6)
    lam: np.ndarray  # the multipliers λ of this iterate (AL3)                            (n x 6)
    force: np.ndarray  # the cut force λ + αΦ, λ once accepted (AL1, AL8)                 (n x 6)


@njit(cache=True)
def closure_scales(x, R, ia, ib, sa, sb, out):
    """Per cut the size of the numbers its closure's translations are computed from: the largest
    coordinate of its two ends' positions and cut points in the model frame [m] (out (n,))."""
    N = x.shape[0]
    for e in range(ia.size):
        m = 0.0
        for end, s in ((ia[e], sa[e]), (ib[e], sb[e])):
            if end == N:
                for i in range(3):
                    m = max(m, abs(s[i]))  # ground: the point itself (the origin at zero)
                continue
            for i in range(3):
                p = x[end, i] + R[end, i, 0] * s[0] + R[end, i, 1] * s[1] + R[end, i, 2] * s[2]
                m = max(m, abs(x[end, i]), abs(p))
        out[e] = m


@njit(cache=True)
def relative_closures(phi, tol, tol_rot, out):
    """max_i |Φ_i| / tolerance_i per cut (n,): translations against ``tol``, rotations ``tol_rot`` (AL4)."""
    for e in range(phi.shape[0]):
        t = 0.0
        r = 0.0
        for i in range(3):
            t = max(t, abs(phi[e, i]))
            r = max(r, abs(phi[e, 3 + i]))
        out[e] = max(t / tol[e], r / tol_rot[e])


@njit(cache=True)
def rigid_cut_forces(x, R, cuts, st, w, out):
    """The cuts ``cuts`` (a RigidCutArrays, or a tuple of its eleven arrays in its order) at the node
    poses x, R with internal state ``st`` (module docstring), into ``out`` (a RigidCutResults, or a tuple
    of its seven arrays): deformations d, G, A (elements/cut_kernels.py), the closure Φ = P d on the held
    rows ``mask``, the penalty α = S × alpha_scale there, the multipliers of this iterate λ = λ_st + αΦ
    after the first (AL3; λ_st where the cut keeps its λ, PREV < 0: AL13), the cut force λ + αΦ from the
    first iterate on, λ once accepted (AL1, AL8), its node wrenches added to w (residual sense).
    Returns (strain energy Σ λΦ + ½αΦ², position noise 16 eps κ' ℓ (N1))."""
    ia, ib, sa, Ea, sb, Eb, mode, mask, alpha_scale, _, _ = cuts  # tol, tol_rot: rigid_cut_update's
    d, G, A, phi, alpha, lam, force = out
    cut_deformations(x, R, ia, ib, sa, Ea, sb, Eb, mode, d, G, A)
    n = ia.size
    energy = 0.0
    for e in range(n):
        ph = st[e, PHASE]
        for i in range(6):
            if mask[e, i]:
                phi[e, i] = d[e, i]
                alpha[e, i] = st[e, S] * alpha_scale[e, i]
                lam[e, i] = st[e, _L0 + i] + (alpha[e, i] * phi[e, i] if ph >= 1 and st[e, PREV] >= 0.0 else 0.0)
            else:
                phi[e, i] = 0.0
                alpha[e, i] = 0.0
                lam[e, i] = 0.0
            force[e, i] = lam[e, i] + (alpha[e, i] * phi[e, i] if ph >= 0 else 0.0)
            energy += lam[e, i] * phi[e, i] + 0.5 * alpha[e, i] * phi[e, i] * phi[e, i]
    add_generalized(G, force, ia, ib, w)
    scale = np.empty(n)
    closure_scales(x, R, ia, ib, sa, sb, scale)
    noise = 0.0
    for e in range(n):
        grown = ESCALATION * st[e, S] / st[e, SMAX] if st[e, SMAX] > 0 else 0.0  # κ'/κ: the step's escalation (AL11)
        noise = max(noise, 16 * EPS * KAPPA * grown * scale[e])
    return energy, noise


@njit(cache=True)
def penalty_blocks(G, alpha, ck, out):
    """out[e] = ck Gᵀ diag(α) G (n, 12, 12): the cuts' blocks of the iteration matrix (AL2)."""
    for e in range(G.shape[0]):
        for i in range(12):
            for j in range(12):
                s = 0.0
                for k in range(6):
                    s += G[e, k, i] * alpha[e, k] * G[e, k, j]
                out[e, i, j] = ck * s


@njit(cache=True)
def rigid_cut_update(st, lam, phi, mask, alpha_scale, tol, tol_rot, scale, nxt, alpha_next):
    """The Newton update of the cuts after an iterate (AL3, AL4, AL11): the next internal state into
    ``nxt`` (λ of this iterate, the phase advanced, the penalty raised tenfold where the closure
    stagnates above round-off after the third iterate, up to SMAX (AL11), λ kept for the rest of the
    step where a closed cut's closure stagnates (PREV < 0, AL13)) and the penalties of the next
    matrix into ``alpha_next``. ``scale``: closure_scales of the iterate. Returns (settled: every cut
    within its tolerance, changed: a penalty grew, the first stuck cut or -1: open, stagnating at its
    largest penalty after the eighth iterate)."""
    n = st.shape[0]
    rel = np.empty(n)
    relative_closures(phi, tol, tol_rot, rel)
    settled = True
    changed = False
    stuck = -1
    for e in range(n):
        for j in range(st.shape[1]):
            nxt[e, j] = st[e, j]
        for i in range(6):
            nxt[e, _L0 + i] = lam[e, i]
        nxt[e, PHASE] = max(st[e, PHASE], 0.0) + 1.0
        open_ = rel[e] > 1.0
        settled = settled and not open_
        noise = 64 * EPS * max(scale[e] / tol[e], 1.0 / tol_rot[e])
        prev = abs(st[e, PREV])
        slow = nxt[e, PHASE] >= 3 and rel[e] > 0.3 * prev
        grow = slow and rel[e] > noise and nxt[e, S] < nxt[e, SMAX]
        if slow and open_ and not grow and nxt[e, PHASE] >= 8 and rel[e] > 0.7 * prev and stuck < 0:
            stuck = e
        if grow:
            nxt[e, S] = min(10.0 * nxt[e, S], nxt[e, SMAX])
            changed = True
        # (AL13): a closed cut whose closure no longer falls (at round-off, or along a direction its rows
        # hold only at second order) keeps its multipliers for the rest of the step (PREV < 0)
        held = not open_ and (st[e, PREV] < 0.0 or slow)
        nxt[e, PREV] = -rel[e] if held else rel[e]
    for e in range(n):
        for i in range(6):
            alpha_next[e, i] = nxt[e, S] * alpha_scale[e, i] if mask[e, i] else 0.0
    return settled, changed, stuck


@njit(cache=True)
def closure_rates(G, mask, V, ia, ib, out):
    """P G (V_a, V_b) per cut (n, 6) for node twists or accelerations V (N, 6) (ground, index N, at rest)."""
    N = V.shape[0]
    for e in range(ia.size):
        for i in range(6):
            s = 0.0
            if mask[e, i]:
                for j in range(6):
                    if ia[e] != N:
                        s += G[e, i, j] * V[ia[e], j]
                    if ib[e] != N:
                        s += G[e, i, 6 + j] * V[ib[e], j]
            out[e, i] = s


@njit(cache=True)
def closure_wrenches(G, mask, f, ia, ib, w):
    """w (N + 1, 6) = Gᵀ Pᵀ f: the node wrenches of cut forces f (n, 6) on the held rows (row N ground)."""
    w[:] = 0.0
    add_generalized(G, f, ia, ib, w, mask)


@njit(cache=True)
def gdot_times_v(x, R, V, ia, ib, sa, Ea, sb, Eb, mode, mask, out):
    """P Ġ V per cut (n, 6): G differentiated along the node motions, by a central difference of the
    ends' poses moved by ± ε their twists V (N, 6) (ε = 1e-6 / max(1, |V|) over the cuts' ends), times
    the twists."""
    N = x.shape[0]
    n = ia.size
    vmax = 0.0
    for e in range(n):
        for end in (ia[e], ib[e]):
            if end != N:
                for j in range(6):
                    vmax = max(vmax, abs(V[end, j]))
    eps = 1e-6 / max(1.0, vmax)
    xa, xb, rot = np.empty(3), np.empty(3), np.empty(3)
    Ra, Rb, Q = np.empty((3, 3)), np.empty((3, 3)), np.empty((3, 3))
    Gp, Gm, d, A = np.empty((6, 12)), np.empty((6, 12)), np.empty(6), np.empty((3, 3))
    work = np.empty((WORK, 3, 3))
    Ve = np.empty(12)
    for e in range(n):
        for j in range(6):
            Ve[j] = 0.0 if ia[e] == N else V[ia[e], j]
            Ve[6 + j] = 0.0 if ib[e] == N else V[ib[e], j]
        for sgn in (1.0, -1.0):
            _moved(x, R, ia[e], N, sgn * eps, Ve[:6], xa, Ra, rot, Q)
            _moved(x, R, ib[e], N, sgn * eps, Ve[6:], xb, Rb, rot, Q)
            _deformation(xa, Ra, xb, Rb, sa[e], Ea[e], sb[e], Eb[e], mode[e], (d, Gp if sgn > 0 else Gm, A), work)
        for i in range(6):
            s = 0.0
            if mask[e, i]:
                for j in range(12):
                    s += (Gp[i, j] - Gm[i, j]) / (2 * eps) * Ve[j]
            out[e, i] = s


@njit(cache=True, inline="always")
def _moved(x, R, i, N, h, v, xo, Ro, rot, Q):
    """Node i's pose moved by h times its twist v (6): x + h v[:3], expm(h v[3:]) R (ground: h v from the
    origin and identity, v being zero there)."""
    for k in range(3):
        rot[k] = h * v[3 + k]
    expm_into(rot, Q)
    for r in range(3):
        xo[r] = (0.0 if i == N else x[i, r]) + h * v[r]
        for c in range(3):
            if i == N:
                Ro[r, c] = Q[r, c]
            else:
                Ro[r, c] = Q[r, 0] * R[i, 0, c] + Q[r, 1] * R[i, 1, c] + Q[r, 2] * R[i, 2, c]
