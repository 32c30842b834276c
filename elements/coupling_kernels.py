"""Compiled kernels of the coordinate couplings (elements/coupling.py; the equation numbers are those
of docs/coupling.md): the rows that pick one joint coordinate's rate out of node twists (C5)-(C7), the
couplings' forces, energies and node wrenches (C2)-(C4), (C8), and their iteration-matrix blocks (C9).

A coupling ``e`` has four node slots (``nodes[e]``: the declared parent and child of joint a, then of
joint b; index N is ground), and per end the joint's coordinates split into translations (``t_idx``,
``n_t`` of them) and rotations (``r_idx``, ``n_r``: revolute and universal angles and the three of a
ball), with ``own_t`` / ``own_pos`` saying which of them is the coupled coordinate.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from flexmb.elements.rigid_cut_kernels import EPS, ESCALATION, KAPPA, PHASE, PREV, SMAX, S, rigid_cut_update
from flexmb.elements.rigid_cut_kernels import N_STATE as CUT_STATE

__all__ = ["LAM", "S", "SMAX", "PHASE", "PREV", "MREF", "N_STATE", "KAPPA", "coordinate_row", "coupling_rows",
           "coupling_forces", "coupling_update", "coupling_blocks", "coupling_rates", "rows_transpose_times"]

# internal state per coupling (State.elements["coupling"], (n, N_STATE)): the rigid cuts' columns
# (elements/rigid_cut_kernels.py: the multiplier λ in column LAM, the penalty factor S (α = S m_ref), its
# largest value in the step SMAX, the Newton phase PHASE, the last relative closure PREV), then m_ref (C13),
# so that the rigid cuts' Newton update (AL3), (AL4), (AL11), (AL13) serves the couplings unchanged
# (coupling_update); docs/coupling.md §3 and §6
LAM = 0
MREF = CUT_STATE
N_STATE = CUT_STATE + 1


@njit(cache=True)
def _left_inverse_row(N, k, i, out):
    """Row ``i`` of (Nᵀ N)⁻¹ Nᵀ for the 3 x k matrix N (its columns independent; k <= 3) into out (3)."""
    if k == 0:
        out[:] = 0.0
        return
    W = np.empty((k, k))
    for a in range(k):
        for b in range(k):
            s = 0.0
            for c in range(3):
                s += N[c, a] * N[c, b]
            W[a, b] = s
    Wi = np.linalg.inv(W)
    for c in range(3):
        s = 0.0
        for a in range(k):
            s += Wi[i, a] * N[c, a]
        out[c] = s


@njit(cache=True)
def coordinate_row(S, t_idx, n_t, r_idx, n_r, own_t, own_pos, out):
    """(C6): the spatial row (j_v, j_w) (6) with (j_v, j_w) · S_k = δ for the columns S_k (v at the
    global origin, w) of the joint's coordinates k: picks the coordinate's rate from the joint's
    relative spatial twist. Rotation rows: (0, A_i), A = (N_rᵀN_r)⁻¹N_rᵀ of the rotation axes;
    translation rows: (B_i, -Aᵀ C_rᵀ B_i), B = (N_tᵀN_t)⁻¹N_tᵀ of the translation axes, C_r the
    rotation columns' v parts."""
    Nt = np.zeros((3, 3))
    Nr = np.zeros((3, 3))
    Cr = np.zeros((3, 3))
    for a in range(n_t):
        for c in range(3):
            Nt[c, a] = S[t_idx[a], c]
    for a in range(n_r):
        for c in range(3):
            Nr[c, a] = S[r_idx[a], 3 + c]
            Cr[c, a] = S[r_idx[a], c]
    row = np.zeros(3)
    if not own_t:
        _left_inverse_row(Nr, n_r, own_pos, row)
        for c in range(3):
            out[c] = 0.0
            out[3 + c] = row[c]
        return
    _left_inverse_row(Nt, n_t, own_pos, row)
    for c in range(3):
        out[c] = row[c]
        out[3 + c] = 0.0
    for a in range(n_r):  # j_w = -A^T (C_r^T j_v): the translation row blind to the rotations' columns
        ca = 0.0
        for c in range(3):
            ca += Cr[c, a] * row[c]
        arow = np.zeros(3)
        _left_inverse_row(Nr, n_r, a, arow)
        for c in range(3):
            out[3 + c] -= ca * arow[c]


@njit(cache=True)
def coupling_rows(S, x, nodes, tree_child, t_idx, n_t, r_idx, n_r, own_t, own_pos, ratio, G):
    """(C7): G (n, 24) = ∂g/∂(node twists) over the four slots of each coupling: for each end the
    spatial row j of (C6) as a node-twist row (j_v, j_w + j_v × x) at the joint's child (+) and
    parent (-), times -r for end a and 1 for end b. ``tree_child`` (n, 2): the tree child of each end's
    joint (its declared child or parent: slot 1 or 0 of the end)."""
    N = x.shape[0]
    j = np.empty(6)
    for e in range(nodes.shape[0]):
        for s in range(24):
            G[e, s] = 0.0
        for end in range(2):
            coordinate_row(S, t_idx[e, end], n_t[e, end], r_idx[e, end], n_r[e, end], own_t[e, end], own_pos[e, end], j)
            f = -ratio[e] if end == 0 else 1.0
            for slot in range(2):
                node = nodes[e, 2 * end + slot]
                if node == N:
                    continue  # ground does not move: its row is never used
                sign = f if node == tree_child[e, end] else -f
                base = 6 * (2 * end + slot)
                jxw = np.empty(3)  # j_v × x
                jxw[0] = j[1] * x[node, 2] - j[2] * x[node, 1]
                jxw[1] = j[2] * x[node, 0] - j[0] * x[node, 2]
                jxw[2] = j[0] * x[node, 1] - j[1] * x[node, 0]
                for c in range(3):
                    G[e, base + c] += sign * j[c]
                    G[e, base + 3 + c] += sign * (j[3 + c] + jxw[c])


@njit(cache=True)
def coupling_forces(q, u, arrays, st, G, w, out):
    """``arrays`` = (qa, qb, ua, ub, ratio, offset, k, c, rigid, nodes, lever), ``out`` = (g, ġ, f, λ, α,
    energy, power, ell): (C2)-(C4), (C8), (C11)-(C12): per coupling the gap g = q_b - r q_a - c0, its rate
    ġ = u_b - r u_a, the force f (elastic: k g + c ġ; rigid: λ + α g with α = S m_ref, the multiplier of
    this iterate λ = λ_st + α g after the first (C11), λ_st where the coupling keeps its λ (PREV < 0,
    docs/rigid_cut.md (AL13)), λ alone once accepted), its node wrenches Gᵀ f added to w (N + 1, 6;
    residual sense), the strain energy (½ k g², rigid λ g + ½ α g²), the dissipated power c ġ² and ell,
    the size |q_b| + |r q_a| + |c0| the gap is computed from. Returns (the sums of energy and power, the
    position noise (C16): 16 eps κ' ell times ``lever`` (the model's size for a rotation q_b, else 1), κ'
    = κ times the step's escalation (AL11))."""
    qa, qb, ua, ub, ratio, offset, k, c, rigid, nodes, lever = arrays
    g, gdot, force, lam, alpha, energy, power, ell = out
    E = 0.0
    P = 0.0
    noise = 0.0
    for e in range(qa.size):
        g[e] = q[qb[e]] - ratio[e] * q[qa[e]] - offset[e]
        gdot[e] = u[ub[e]] - ratio[e] * u[ua[e]]
        ell[e] = abs(q[qb[e]]) + abs(ratio[e] * q[qa[e]]) + abs(offset[e])
        if rigid[e]:
            ph = st[e, PHASE]
            alpha[e] = st[e, S] * st[e, MREF]
            lam[e] = st[e, LAM] + (alpha[e] * g[e] if ph >= 1 and st[e, PREV] >= 0.0 else 0.0)
            force[e] = lam[e] + (alpha[e] * g[e] if ph >= 0 else 0.0)
            energy[e] = lam[e] * g[e] + 0.5 * alpha[e] * g[e] * g[e]
            power[e] = 0.0
            grown = ESCALATION * st[e, S] / st[e, SMAX] if st[e, SMAX] > 0 else 0.0  # κ'/κ (AL11)
            noise = max(noise, 16 * EPS * KAPPA * grown * ell[e] * lever[e])
        else:
            alpha[e] = 0.0
            lam[e] = 0.0
            force[e] = k[e] * g[e] + c[e] * gdot[e]
            energy[e] = 0.5 * k[e] * g[e] * g[e]
            power[e] = c[e] * gdot[e] * gdot[e]
        E += energy[e]
        P += power[e]
        for slot in range(4):
            node = nodes[e, slot]
            for i in range(6):
                w[node, i] += G[e, 6 * slot + i] * force[e]
    return E, P, noise


@njit(cache=True)
def coupling_update(st, lam, g, ell, rigid, tol, nxt, alpha_next):
    """The Newton update of the couplings after an iterate: the rigid cuts' (rigid_cut_kernels.rigid_cut_update,
    docs/rigid_cut.md (AL3), (AL4), (AL11), (AL13)) on each rigid coupling's one row, the gap g against ``tol``
    (C14), ``ell`` its size (round-off): the next state into ``nxt`` (λ of this iterate, the phase advanced, the
    penalty raised tenfold where the gap stagnates, up to SMAX) and the next matrix's penalties α = S m_ref into
    ``alpha_next`` (n,); elastic couplings keep no state (λ 0, phase -1). Returns (settled: every rigid coupling
    within its tolerance, changed: a penalty grew, the first stuck coupling or -1: open, its gap stagnating at
    the largest penalty)."""
    n = st.shape[0]
    lam6, phi6, scale6, a6 = np.zeros((n, 6)), np.zeros((n, 6)), np.zeros((n, 6)), np.empty((n, 6))
    mask = np.zeros((n, 6), dtype=np.bool_)
    for e in range(n):
        if rigid[e]:
            mask[e, 0] = True
            lam6[e, 0] = lam[e]
            phi6[e, 0] = g[e]
            scale6[e, 0] = st[e, MREF]
    settled, changed, stuck = rigid_cut_update(st, lam6, phi6, mask, scale6, tol, np.full(n, np.inf), ell, nxt, a6)
    for e in range(n):
        alpha_next[e] = a6[e, 0]
        if not rigid[e]:
            nxt[e, LAM] = 0.0
            nxt[e, PHASE] = -1.0
    return settled, changed, stuck


@njit(cache=True)
def coupling_blocks(G, k, c, alpha, rigid, ck, cc, out):
    """(C9): out[e] = (ck k + cc c) GᵀG for an elastic coupling, ck α GᵀG for a rigid one (n, 24, 24)."""
    for e in range(G.shape[0]):
        f = ck * alpha[e] if rigid[e] else ck * k[e] + cc * c[e]
        for i in range(24):
            for j in range(24):
                out[e, i, j] = f * G[e, i] * G[e, j]


@njit(cache=True)
def coupling_rates(v, ua, ub, ratio, rig, out):
    """Φ_q v = v_b - r v_a (C12) of the rigid couplings ``rig`` (n_rigid,) into ``out`` (n_rigid,), for velocities
    or accelerations v of all coordinates."""
    for i in range(rig.size):
        e = rig[i]
        out[i] = v[ub[e]] - ratio[e] * v[ua[e]]


@njit(cache=True)
def rows_transpose_times(ua, ub, ratio, rig, pos, f, out):
    """Φ_q,fᵀ f (C12) on the free coordinates into ``out`` (n_f,): the rigid couplings' rows e_b - r e_a with the
    forces f (n_rigid,), ``pos`` each coordinate's position among the free ones or -1; each coupling's terms added
    in the couplings' order."""
    out[:] = 0.0
    for i in range(rig.size):
        e = rig[i]
        if pos[ub[e]] >= 0:
            out[pos[ub[e]]] += f[i]
        if pos[ua[e]] >= 0:
            out[pos[ua[e]]] -= ratio[e] * f[i]
