"""Compiled kernels of the prescribed-length actuators (flexmb.elements.actuator; equations
(A1)-(A9) of docs/actuator.md): the length, its rate and the closure Φ = l - L(t) of every actuator,
the force of an augmented-Lagrangian iterate with its node wrenches, the penalty blocks, and the
velocity-product term of the length's second derivative.

Conventions (those of elements/spring_damper_kernels.py): node arrays x (N, 3), R (N, 3, 3), V (N, 6)
without a ground row; an end index equal to N is ground; w (N + 1, 6) the node wrenches in the
residual's sense, row N ground (discarded). The internal state ``st`` (n, N_STATE) has the columns of
elements/rigid_cut_kernels.py (LAM: the multiplier in its first column, S, SMAX, PHASE, PREV) and
MREF, the actuator's reference mass of (A6). The closure, multiplier and penalty arrays are (n, 6)
with the actuator's row in column 0 and zeros elsewhere, so that the rigid cuts' Newton update
(rigid_cut_kernels.rigid_cut_update) serves the actuators unchanged.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from flexmb.elements.rigid_cut_kernels import EPS, ESCALATION, KAPPA, PHASE, PREV, SMAX, S
from flexmb.elements.rigid_cut_kernels import N_STATE as CUT_STATE
from flexmb.elements.spring_damper_kernels import spring_damper_forces

__all__ = ["MREF", "N_STATE", "actuator_forces", "actuator_blocks", "length_rates", "velocity_product"]

#: column of the reference mass m_ref [kg] of (A6) in the internal state; N_STATE columns in all
MREF = CUT_STATE
N_STATE = CUT_STATE + 1


@njit(cache=True)
def actuator_forces(x, R, V, ends, L, lmin, st, w, geometry, out):
    """Every actuator (``ends`` = (ia, ib, sa, sb): end nodes and points) at the node poses x, R and
    twists V with the prescribed lengths L (n,): the geometry (A1)-(A2) into ``geometry`` = (G (n, 12),
    nv, ra, rb, l, ldot) (the spring-damper's kernel with no force), and into ``out`` = (phi, alpha,
    lam, force, ell): the closure Φ = l - L (A3) into phi[:, 0], the penalty α = S m_ref into
    alpha[:, 0], the multiplier of this iterate λ = λ_st + αΦ after the first (A5) into lam[:, 0], the
    force λ + αΦ from the first iterate on and λ once accepted (A4), and into ell (n,) the largest
    coordinate ℓ of its ends and points [m] (the size its closure is computed from); its node wrenches
    Gᵀ F added to w (residual sense). Returns
    (the first actuator shorter than ``lmin`` or -1, strain energy Σ λΦ + ½αΦ², position noise
    16 eps κ' ℓ with ℓ the largest coordinate of the ends and points (docs/rigid_cut.md (N1)))."""
    ia, ib, sa, sb = ends
    G, nv, ra, rb, l, ldot = geometry
    phi, alpha, lam, force, ell = out
    n = ia.size
    zero = np.zeros(n)
    scratch_w = np.zeros_like(w)
    F, energy_e, power = np.empty(n), np.empty(n), np.empty(n)
    short = spring_damper_forces(x, R, V, (ia, ib, sa, sb, zero, zero, zero, zero, lmin), scratch_w,
                                 (G, nv, ra, rb, l, ldot, F, energy_e, power))
    N = x.shape[0]
    energy = 0.0
    noise = 0.0
    for e in range(n):
        for i in range(6):
            phi[e, i] = 0.0
            alpha[e, i] = 0.0
            lam[e, i] = 0.0
            force[e, i] = 0.0
        ph = st[e, PHASE]
        p = l[e] - L[e]
        a = st[e, S] * st[e, MREF]
        lm = st[e, 0] + (a * p if ph >= 1 and st[e, PREV] >= 0.0 else 0.0)  # (AL13): kept once held
        f = lm + (a * p if ph >= 0 else 0.0)
        phi[e, 0], alpha[e, 0], lam[e, 0], force[e, 0] = p, a, lm, f
        energy += lm * p + 0.5 * a * p * p
        for j in range(6):
            w[ia[e], j] += G[e, j] * f
            w[ib[e], j] += G[e, 6 + j] * f
        scale = 0.0
        for i in range(3):
            if ia[e] != N:
                scale = max(scale, abs(x[ia[e], i]), abs(x[ia[e], i] + ra[e, i]))
            else:
                scale = max(scale, abs(sa[e, i]))
            scale = max(scale, abs(x[ib[e], i]), abs(x[ib[e], i] + rb[e, i]))
        ell[e] = scale
        grown = ESCALATION * st[e, S] / st[e, SMAX] if st[e, SMAX] > 0 else 0.0
        noise = max(noise, 16 * EPS * KAPPA * grown * scale)
    return short, energy, noise


@njit(cache=True)
def actuator_blocks(G, alpha, ck, out):
    """out[e] = ck α_e G_eᵀ G_e (n, 12, 12): the actuators' penalty blocks of the iteration matrix (A7)."""
    for e in range(G.shape[0]):
        s = ck * alpha[e, 0]
        for i in range(12):
            for j in range(12):
                out[e, i, j] = s * (G[e, i] * G[e, j])


@njit(cache=True)
def length_rates(G, V, ia, ib, out):
    """G (V_a, V_b) per actuator (n,) for node twists or accelerations V (N, 6) (ground, index N, at rest)."""
    N = V.shape[0]
    for e in range(ia.size):
        s = 0.0
        for j in range(6):
            if ia[e] != N:
                s += G[e, j] * V[ia[e], j]
            s += G[e, 6 + j] * V[ib[e], j]
        out[e] = s


@njit(cache=True)
def velocity_product(V, ia, ib, nv, ra, rb, l, out):
    """Ġ V per actuator (n,) (A8): n·(ω_b×(ω_b×r_b) - ω_a×(ω_a×r_a)) + (|Δṗ|² - (n·Δṗ)²) / l, Δṗ the
    relative velocity of the two points, so that l'' = G a + Ġ V for node accelerations a."""
    N = V.shape[0]
    dp, cen = np.empty(3), np.empty(3)
    for e in range(ia.size):
        for i in range(3):
            dp[i] = 0.0
            cen[i] = 0.0
        for end, r, sgn in ((ia[e], ra[e], -1.0), (ib[e], rb[e], 1.0)):
            if end == N:
                continue
            v0, v1, v2 = V[end, 0], V[end, 1], V[end, 2]
            w0, w1, w2 = V[end, 3], V[end, 4], V[end, 5]
            c0 = w1 * r[2] - w2 * r[1]  # ω × r
            c1 = w2 * r[0] - w0 * r[2]
            c2 = w0 * r[1] - w1 * r[0]
            dp[0] += sgn * (v0 + c0)
            dp[1] += sgn * (v1 + c1)
            dp[2] += sgn * (v2 + c2)
            cen[0] += sgn * (w1 * c2 - w2 * c1)  # ω × (ω × r)
            cen[1] += sgn * (w2 * c0 - w0 * c2)
            cen[2] += sgn * (w0 * c1 - w1 * c0)
        along = nv[e, 0] * dp[0] + nv[e, 1] * dp[1] + nv[e, 2] * dp[2]
        sq = dp[0] * dp[0] + dp[1] * dp[1] + dp[2] * dp[2]
        out[e] = nv[e, 0] * cen[0] + nv[e, 1] * cen[1] + nv[e, 2] * cen[2] + (sq - along * along) / l[e]
