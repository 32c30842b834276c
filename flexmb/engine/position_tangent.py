"""The position tangent β' K̄ of a rigid tree's residual (engine/tree_solver.py, module docstring): the
derivative of the node masses' inertia forces and weights Bᵀ f with respect to the coordinates,
applied to a vector in one O(n) pass down the tree and one up (:func:`position_tangent_times`:
position_tangent_setup once per factorization, then position_tangent_apply per product). Its
arrays are the TangentWork of engine/tree_data.py; tests/test_tree_solver.py checks the product
against central differences of the residual.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from flexmb.engine.iteration_matrix import spatial_node_blocks
from flexmb.engine.spatial_cross import _fx_add, _mx
from flexmb.engine.tree_data import tangent_work

__all__ = ["position_tangent_apply", "position_tangent_setup", "position_tangent_times"]

# rows of the scratch array Z of the position tangent's recursions
_E, _V, _DV, _DA, _EP, _VP, _DVP, _EB, _T1, _T2, _T3, _T4, _A = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12


@njit(cache=True, inline="always")
def _coord_step(kk, S, u, udot, Z, ie, iv, idv, dS):
    """One coordinate kk of position_tangent_apply: its axis' displacement dS = ε_frame × S_kk and
    the variation of its acceleration terms S u̇ + V_bias × S u into Z[_DA] (ε_frame = Z[ie],
    V_bias = Z[iv], δV_bias = Z[idv])."""
    _mx(Z, ie, S, kk, dS, kk)
    _mx(Z, idv, S, kk, Z, _T2)  # δV_bias × S
    _mx(Z, iv, dS, kk, Z, _T3)  # V_bias × δS
    uk, ak = u[kk], udot[kk]
    for i in range(6):
        Z[_DA, i] += dS[kk, i] * ak + (Z[_T2, i] + Z[_T3, i]) * uk


@njit(cache=True, inline="always")
def _advance(kk, S, u, xd, dS, Z):
    """The frame after axis kk: ε += S xd, V += S u, δV += δS u (rows _E, _V, _DV of Z)."""
    for i in range(6):
        Z[_E, i] += S[kk, i] * xd[kk]
        Z[_V, i] += S[kk, i] * u[kk]
        Z[_DV, i] += dS[kk, i] * u[kk]


@njit(cache=True, inline="always")
def _add_axis(kk, S, u, udot, Z, iv):
    """Axis kk of a joint into the frame's twist and acceleration (rows _V, _A of Z) in
    position_tangent_setup: A += S_kk u̇_kk + V_bias × S_kk u_kk, V += S_kk u_kk (V_bias = Z[iv])."""
    _mx(Z, iv, S, kk, Z, _T1)
    for i in range(6):
        Z[_A, i] += S[kk, i] * udot[kk] + Z[_T1, i] * u[kk]
        Z[_V, i] += S[kk, i] * u[kk]


@njit(cache=True, inline="always")
def _inertia_rows(I, i, a, b, r):
    """Row r of node i's spatial inertia I[i] (6, 6) times the twists a and b (6): ((I a)_r, (I b)_r)."""
    s1 = 0.0
    s2 = 0.0
    for q in range(6):
        s1 += I[i, r, q] * a[q]
        s2 += I[i, r, q] * b[q]
    return s1, s2


@njit(cache=True)
def position_tangent_setup(tree, S, u, udot, Mb, x, w, work):
    """What position_tangent_apply needs at one state (axes S, u, u̇, node mass blocks Mb, positions
    x), once per factorization, into the TangentWork ``work``: the spatial inertias I (N,6,6) at the
    origin, the spatial accelerations A (N+1,6) (row N: ground), I V and I A (N,6), and F (N+1,6)
    the subtree sums of the node wrenches w (N,6, at the node origins) moved to the origin."""
    parent, child, uT, uR, uB = tree.parent, tree.child, tree.uT, tree.uR, tree.uB
    I, IV, IA, A, F = work.I, work.IV, work.IA, work.A, work.F
    nj = parent.size
    N = Mb.shape[0]
    spatial_node_blocks(Mb, x, I)
    V = np.zeros((N + 1, 6))
    Z = np.zeros((13, 6))
    for i in range(6):
        A[N, i] = 0.0
    for k in range(nj):
        p = parent[k]
        c = child[k]
        for i in range(6):
            Z[_V, i], Z[_A, i], Z[_VP, i] = V[p, i], A[p, i], V[p, i]
        for m in range(3):  # translations: bias velocity of the parent
            kk = uT[k, m]
            if kk >= 0:
                _add_axis(kk, S, u, udot, Z, _VP)
        for m in range(2):
            kk = uR[k, m]
            if kk >= 0:
                _add_axis(kk, S, u, udot, Z, _V)
        if uB[k, 0] >= 0:
            for i in range(6):
                Z[_VP, i] = Z[_V, i]
            for m in range(3):
                _add_axis(uB[k, m], S, u, udot, Z, _VP)
        for i in range(6):
            V[c, i], A[c, i] = Z[_V, i], Z[_A, i]
    for i in range(N):
        Vi, Ai = V[i], A[i]
        for r in range(6):
            IV[i, r], IA[i, r] = _inertia_rows(I, i, Vi, Ai, r)
        F[i, 0], F[i, 1], F[i, 2] = w[i, 0], w[i, 1], w[i, 2]
        F[i, 3] = w[i, 3] + x[i, 1] * w[i, 2] - x[i, 2] * w[i, 1]
        F[i, 4] = w[i, 4] + x[i, 2] * w[i, 0] - x[i, 0] * w[i, 2]
        F[i, 5] = w[i, 5] + x[i, 0] * w[i, 1] - x[i, 1] * w[i, 0]
    for r in range(6):
        F[N, r] = 0.0
    for k in range(nj - 1, -1, -1):
        p = parent[k]
        if p != N:
            for r in range(6):
                F[p, r] += F[child[k], r]


@njit(cache=True)
def position_tangent_apply(tree, coord_child, S, u, udot, work, gravity, xd, out):
    """out = K̄ xd from the TangentWork ``work`` of position_tangent_setup (see position_tangent_times);
    ``coord_child``: the child node of each coordinate's joint."""
    parent, child, uT, uR, uB = tree.parent, tree.child, tree.uT, tree.uR, tree.uB
    I, IV, IA, A, F = work.I, work.IV, work.IA, work.A, work.F
    nj = parent.size
    N = I.shape[0]
    n_u = S.shape[0]
    eps = np.zeros((N + 1, 6))
    V = np.zeros((N + 1, 6))
    dV = np.zeros((N + 1, 6))
    dA = np.zeros((N + 1, 6))
    dS = np.empty((n_u, 6))
    Z = np.zeros((13, 6))
    for k in range(nj):
        p = parent[k]
        c = child[k]
        for i in range(6):
            Z[_E, i], Z[_V, i], Z[_DV, i], Z[_DA, i] = eps[p, i], V[p, i], dV[p, i], dA[p, i]
            Z[_EP, i], Z[_VP, i], Z[_DVP, i] = eps[p, i], V[p, i], dV[p, i]
        for m in range(3):  # translations: frame and bias velocity of the parent
            kk = uT[k, m]
            if kk >= 0:
                _coord_step(kk, S, u, udot, Z, _EP, _VP, _DVP, dS)
        for m in range(3):
            kk = uT[k, m]
            if kk >= 0:
                _advance(kk, S, u, xd, dS, Z)
        for m in range(2):  # rotations: each carried by the frame after the axes before it
            kk = uR[k, m]
            if kk >= 0:
                _coord_step(kk, S, u, udot, Z, _E, _V, _DV, dS)
                _advance(kk, S, u, xd, dS, Z)
        if uB[k, 0] >= 0:  # ball: axes fixed in the child (frame after the ball), bias velocity before it
            for i in range(6):
                Z[_EB, i] = Z[_E, i]
            for m in range(3):
                kk = uB[k, m]
                for i in range(6):
                    Z[_EB, i] += S[kk, i] * xd[kk]
            for m in range(3):
                _coord_step(uB[k, m], S, u, udot, Z, _EB, _V, _DV, dS)
            for m in range(3):
                _advance(uB[k, m], S, u, xd, dS, Z)
            for i in range(6):
                Z[_E, i] = Z[_EB, i]
        for i in range(6):
            eps[c, i], V[c, i], dV[c, i], dA[c, i] = Z[_E, i], Z[_V, i], Z[_DV, i], Z[_DA, i]
    dF = np.zeros((N + 1, 6))
    _force_variations(eps, V, dV, dA, I, IV, IA, A, gravity, Z, dF)
    for k in range(nj - 1, -1, -1):
        p = parent[k]
        if p != N:
            for r in range(6):
                dF[p, r] += dF[child[k], r]
    for kk in range(n_u):
        c = coord_child[kk]
        s = 0.0
        for r in range(6):
            s += dS[kk, r] * F[c, r] + S[kk, r] * dF[c, r]
        out[kk] = s


@njit(cache=True)
def _force_variations(eps, V, dV, dA, I, IV, IA, A, gravity, Z, dF):
    """Per node δf = δI A + I δA + δV ×* I V + V ×* (δI V + I δV) - δ weight, δI y = ε ×* (I y) - I (ε × y),
    into dF (rows of the N nodes), for position_tangent_apply's frame moves ε, velocities V, their
    variations δV and δA; Z: its work rows."""
    N = I.shape[0]
    for i in range(N):
        _mx(eps, i, A, i, Z, _T1)  # ε × A
        _mx(eps, i, V, i, Z, _T2)  # ε × V
        for r in range(6):
            Z[_T1, r] = dA[i, r] - Z[_T1, r]  # z1 = δA - ε × A
            Z[_T2, r] = dV[i, r] - Z[_T2, r]  # z2 = δV - ε × V
        z1, z2 = Z[_T1], Z[_T2]
        for r in range(6):
            dF[i, r], Z[_T3, r] = _inertia_rows(I, i, z1, z2, r)  # y = I z2, then + ε ×* I V
        _fx_add(eps, i, IA, i, dF, i)
        _fx_add(eps, i, IV, i, Z, _T3)
        _fx_add(dV, i, IV, i, dF, i)
        _fx_add(V, i, Z, _T3, dF, i)
        # weight m g at the centre of mass c: its moment (m c) × g varies by (m v_ε + ω_ε × m c) × g
        m = I[i, 0, 0]
        mc0, mc1, mc2 = I[i, 1, 5], I[i, 2, 3], I[i, 0, 4]
        w0, w1, w2 = eps[i, 3], eps[i, 4], eps[i, 5]
        d0 = m * eps[i, 0] + (w1 * mc2 - w2 * mc1)
        d1 = m * eps[i, 1] + (w2 * mc0 - w0 * mc2)
        d2 = m * eps[i, 2] + (w0 * mc1 - w1 * mc0)
        dF[i, 3] -= d1 * gravity[2] - d2 * gravity[1]
        dF[i, 4] -= d2 * gravity[0] - d0 * gravity[2]
        dF[i, 5] -= d0 * gravity[1] - d1 * gravity[0]


def position_tangent_times(tree, coord_child, S, u, udot, Mb, x, w, gravity, xd, out):
    """out = K̄ xd: the derivative of the node masses' residual Bᵀ f (f_i = I_i A_i + V_i ×* I_i V_i
    - weight_i, spatial at the origin; Featherstone 2008, eq. 2.67) with respect to the coordinates
    in the direction xd, at fixed u and u̇. A variation δq moves each node's frame by ε (the path
    sum of S δq), every axis k by δS_k = ε_frame(k) × S_k (frame(k): the parent for translations,
    the frame after the axes before it for rotations, the child for the three ball axes), the
    inertias by δI v = ε ×* (I v) - I (ε × v), and the velocities and accelerations through the
    axes, while gravity keeps its direction; then δr_a = δS_aᵀ F_a + S_aᵀ δF_a with F the subtree
    sums of f. Mb (N,6,6), x (N,3): node mass blocks and positions; w (N,6): the node wrenches at
    the node origins (Evaluation.node_wrenches) at u̇. One pass down the tree and one up, O(n)
    (position_tangent_setup, then position_tangent_apply); tests/test_tree_solver.py checks it
    against central differences of the residual. ``tree``: the JointTree (engine/tree_data.py)."""
    work = tangent_work(Mb.shape[0])
    position_tangent_setup(tree, S, u, udot, Mb, x, w, work)
    position_tangent_apply(tree, coord_child, S, u, udot, work, gravity, xd, out)
