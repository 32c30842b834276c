"""Compiled kernels of the spring-dampers (flexmb.elements.spring_damper; equations (S1)-(S11) of
docs/spring_damper.md): the length, rate, tension, node wrenches, energy and power of every element
at one state, and its blocks of the iteration matrix. The family's Python methods and the compiled
Newton steps (flexmb/solvers/element_step.py) call the same kernels, so a step is the same bit for
bit on either path.

Conventions (those of elements/cut_kernels.py): node arrays x (N, 3), R (N, 3, 3), V (N, 6) without
a ground row; an end index equal to N is ground (the origin, identity axes, at rest); w (N + 1, 6)
the node wrenches in the residual's sense, row N ground (discarded). Per element e: G[e] (12) the
row ∂l/∂X of (S3) over (x_a, θ_a, x_b, θ_b), nv[e] the direction n, ra[e], rb[e] the arms R s of the
points (zero for a ground end), l, ldot, F the length, rate and tension.

spring_damper_forces takes its arrays grouped as the family groups them (as the beams' kernels do,
elements/beam/kernel_data.py): the model's arrays in one :class:`SpringDamperArrays`, what it writes
per element in one :class:`SpringDamperResults`. It reads their first nine fields by position, so the
compiled steps pass their own prepared tuples, which begin with the same fields in the same order and
carry more after them (the force laws of flexmb/solvers/law_step.py, the tangents of the blocks).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

__all__ = ["MATERIAL", "TIME_STEP", "EXACT", "spring_damper_forces", "spring_damper_blocks", "SpringDamperArrays",
           "SpringDamperResults"]

#: the blocks spring_damper_blocks forms: (S10) material only, (S8) the time step's, (S9) the exact tangent
MATERIAL, TIME_STEP, EXACT = 0, 1, 2


class SpringDamperArrays(NamedTuple):
    """The spring-dampers' model arrays (n elements) as spring_damper_forces reads them
    (flexmb.elements.spring_damper.SpringDamperData and the family's prepared end indices)."""

    ia: np.ndarray  # end a's node (int64; N = ground)                                     (n)
    ib: np.ndarray  # end b's node (int64)                                                 (n)
    sa: np.ndarray  # point a in node a's axes (global for a ground end) [m]               (n x 3)
    sb: np.ndarray  # point b in node b's axes [m]                                         (n x 3)
    k: np.ndarray  # stiffness (S4) [N/m]                                                  (n)
    c: np.ndarray  # damping (S4) [N s/m]                                                  (n)
    L0: np.ndarray  # free length (S4) [m]                                                 (n)
    F0: np.ndarray  # preload (S4) [N]                                                     (n)
    lmin: np.ndarray  # the shortest length with a direction (S11) [m]                     (n)


class SpringDamperResults(NamedTuple):
    """What spring_damper_forces writes per element."""

    G: np.ndarray  # ∂l/∂X over (x_a, θ_a, x_b, θ_b) (S3)                                   (n x 12)
    nv: np.ndarray  # the direction n (S2)                                                 (n x 3)
    ra: np.ndarray  # the arm R_a s_a of point a (zero for a ground end)                   (n x 3)
    rb: np.ndarray  # the arm R_b s_b of point b                                           (n x 3)
    l: np.ndarray  # the length (S1) [m]                                                   (n)
    ldot: np.ndarray  # its rate l' (S3) [m/s]                                             (n)
    F: np.ndarray  # the tension (S4) [N]                                                  (n)
    energy: np.ndarray  # the strain energy (S6) [J]                                       (n)
    power: np.ndarray  # the dissipated power c l'² (S6) [W]                               (n)


@njit(cache=True)
def spring_damper_forces(x, R, V, springs, w, out):
    """Every spring-damper of ``springs`` (a SpringDamperArrays, or a tuple that begins with its nine
    arrays in its order; ends ia, ib, N = ground) at the node poses x, R and twists V, into ``out`` (a
    SpringDamperResults, or a tuple that begins with its nine arrays): (S1)-(S3) into G, nv, ra, rb, l,
    ldot, the tension (S4) into F, its energy and dissipated power (S6); its node wrenches (S5) added to
    w. An element shorter than ``lmin`` (S11) adds nothing (its F, energy, power, ldot and G are zero).
    Returns the first such element, or -1."""
    ia, ib, sa, sb, k, c, L0, F0, lmin = springs[:9]
    G, nv, ra, rb, l, ldot, F, energy, power = out[:9]
    N = x.shape[0]
    short = -1
    pa, pb, d, n = np.empty(3), np.empty(3), np.empty(3), np.empty(3)
    for e in range(ia.size):
        a, b = ia[e], ib[e]
        for i in range(3):
            if a == N:
                ra[e, i] = 0.0
                pa[i] = sa[e, i]
            else:
                ra[e, i] = R[a, i, 0] * sa[e, 0] + R[a, i, 1] * sa[e, 1] + R[a, i, 2] * sa[e, 2]
                pa[i] = x[a, i] + ra[e, i]
            rb[e, i] = R[b, i, 0] * sb[e, 0] + R[b, i, 1] * sb[e, 1] + R[b, i, 2] * sb[e, 2]
            pb[i] = x[b, i] + rb[e, i]
            d[i] = pb[i] - pa[i]
        length = np.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
        l[e] = length
        if length < lmin[e]:  # (S11): no direction; the caller names the element (NaN compares False: passed on)
            if short < 0:
                short = e
            for j in range(12):
                G[e, j] = 0.0
            for i in range(3):
                nv[e, i] = 0.0
            ldot[e] = F[e] = energy[e] = power[e] = 0.0
            continue
        for i in range(3):
            n[i] = d[i] / length
            nv[e, i] = n[i]
        # (S3): G = [-n, -(ra x n), n, rb x n]
        for i in range(3):
            G[e, i] = -n[i]
            G[e, 6 + i] = n[i]
        G[e, 3] = -(ra[e, 1] * n[2] - ra[e, 2] * n[1])
        G[e, 4] = -(ra[e, 2] * n[0] - ra[e, 0] * n[2])
        G[e, 5] = -(ra[e, 0] * n[1] - ra[e, 1] * n[0])
        G[e, 9] = rb[e, 1] * n[2] - rb[e, 2] * n[1]
        G[e, 10] = rb[e, 2] * n[0] - rb[e, 0] * n[2]
        G[e, 11] = rb[e, 0] * n[1] - rb[e, 1] * n[0]
        rate = 0.0
        for j in range(6):
            if a != N:
                rate += G[e, j] * V[a, j]
            rate += G[e, 6 + j] * V[b, j]
        ldot[e] = rate
        stretch = length - L0[e]
        f = k[e] * stretch + c[e] * rate + F0[e]  # (S4)
        F[e] = f
        energy[e] = 0.5 * k[e] * stretch * stretch + F0[e] * stretch  # (S6)
        power[e] = c[e] * rate * rate
        for j in range(6):  # (S5), residual sense
            w[a, j] += G[e, j] * f
            w[b, j] += G[e, 6 + j] * f
    return short


@njit(cache=True)
def spring_damper_blocks(G, nv, ra, rb, l, F, k, c, ck, cc, mode, out):
    """out[e] (n, 12, 12): the iteration-matrix block of every spring-damper: (S8) for ``mode``
    TIME_STEP, (S9) for EXACT, (S10) for MATERIAL.
    The string term (F/l) HᵀPH is formed as (PH)ᵀ(PH), PH = H - n G: symmetric and positive
    semi-definite in floating point too."""
    Q = np.empty((3, 12))
    for e in range(G.shape[0]):
        s = ck * k[e] + cc * c[e]
        for i in range(12):
            for j in range(12):
                out[e, i, j] = s * (G[e, i] * G[e, j])  # exactly symmetric
        if mode == MATERIAL or F[e] == 0.0:
            continue
        f = F[e] if mode == EXACT else max(F[e], 0.0)
        if f != 0.0:
            # Q = P H = H - n G with H = [-I, [ra]x, I, -[rb]x] (S3)
            for r in range(3):
                for j in range(12):
                    Q[r, j] = -nv[e, r] * G[e, j]
                Q[r, r] -= 1.0
                Q[r, 6 + r] += 1.0
            ax, ay, az = ra[e, 0], ra[e, 1], ra[e, 2]
            bx, by, bz = rb[e, 0], rb[e, 1], rb[e, 2]
            Q[0, 4] -= az
            Q[0, 5] += ay
            Q[1, 3] += az
            Q[1, 5] -= ax
            Q[2, 3] -= ay
            Q[2, 4] += ax
            Q[0, 10] += bz
            Q[0, 11] -= by
            Q[1, 9] -= bz
            Q[1, 11] += bx
            Q[2, 9] += by
            Q[2, 10] -= bx
            g = ck * f / l[e]
            for i in range(12):
                for j in range(12):
                    out[e, i, j] += g * (Q[0, i] * Q[0, j] + Q[1, i] * Q[1, j] + Q[2, i] * Q[2, j])
        if mode == EXACT:  # (S9): F sym(L), L_θaθa = -[n]x[ra]x, L_θbθb = [n]x[rb]x; [n]x[r]x = r nᵀ - (n·r) I
            fa = ck * F[e]
            na = nv[e, 0] * ra[e, 0] + nv[e, 1] * ra[e, 1] + nv[e, 2] * ra[e, 2]
            nb = nv[e, 0] * rb[e, 0] + nv[e, 1] * rb[e, 1] + nv[e, 2] * rb[e, 2]
            for i in range(3):
                for j in range(3):
                    sa_ = 0.5 * (ra[e, i] * nv[e, j] + nv[e, i] * ra[e, j])
                    sb_ = 0.5 * (rb[e, i] * nv[e, j] + nv[e, i] * rb[e, j])
                    if i == j:
                        sa_ -= na
                        sb_ -= nb
                    out[e, 3 + i, 3 + j] -= fa * sa_
                    out[e, 9 + i, 9 + j] += fa * sb_

