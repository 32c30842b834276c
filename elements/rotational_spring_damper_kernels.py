"""Compiled kernels of the rotational spring-dampers (flexmb.elements.rotational_spring_damper; equations
(R1)-(R12) of docs/rotational_spring_damper.md): the angle, rate, torque, node moments, energy and power of
every element at one state, and its blocks of the iteration matrix. The family's Python methods and the
compiled Newton steps (flexmb/solvers/element_families.py) call the same kernels, so a step is the same
bit for bit on either path.

Conventions (those of elements/spring_damper_kernels.py): node orientations R (N, 3, 3) and twists V
(N, 6) = (v, ω) without a ground row; an end index equal to N is ground (identity axes, at rest); w
(N + 1, 6) the node wrenches in the residual's sense, row N ground (discarded). Per element e: ``mode``
AXIS (a torsion spring about an axis carried by node a) or FREE (isotropic, on the rotation vector);
g[e] (3) the angle's gradient with respect to node b's virtual rotation (R5) (AXIS) or the rotation
vector ψ (R8) (FREE); angle, rate, torque the scalars of the output (R4), (R10).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from flexmb.elements.spring_damper_kernels import EXACT, MATERIAL, TIME_STEP

__all__ = ["AXIS", "FREE", "MATERIAL", "TIME_STEP", "EXACT", "FULL", "RHO_MIN", "rotational_forces", "rotational_blocks",
           "log_map", "inverse_left_jacobian"]

#: the element kinds: a torsion spring about an axis (R1)-(R7), an isotropic spring on the rotation vector (R8)-(R10)
AXIS, FREE = 0, 1
#: rotational_blocks' fourth mode: the complete (unsymmetric) tangent (R6), (R9), for the tests
FULL = 3
#: (R12): below this length of its reference vector's projection the angle about the axis is undefined
RHO_MIN = 1e-6


@njit(cache=True)
def log_map(E, psi):
    """The rotation vector ψ (3) of the rotation matrix E (3, 3) into ``psi`` (R8): angle in [0, π]; near
    π its direction from E's symmetric part (sign by E's skew part)."""
    sx, sy, sz = 0.5 * (E[2, 1] - E[1, 2]), 0.5 * (E[0, 2] - E[2, 0]), 0.5 * (E[1, 0] - E[0, 1])
    sn = math.sqrt(sx * sx + sy * sy + sz * sz)
    ct = min(1.0, max(-1.0, 0.5 * (E[0, 0] + E[1, 1] + E[2, 2] - 1.0)))
    theta = math.atan2(sn, ct)
    if ct >= 0.0:  # θ <= π/2: ψ = s θ / sin θ, s = sin θ n
        f = 1.0 + sn * sn / 6.0 if sn < 1e-6 else theta / sn
        psi[0], psi[1], psi[2] = f * sx, f * sy, f * sz
        return
    # θ > π/2: (E + Eᵀ)/2 - cos θ I = (1 - cos θ) n nᵀ; the column of its largest diagonal entry
    i = 0
    for j in range(1, 3):
        if E[j, j] > E[i, i]:
            i = j
    col = np.empty(3)
    for j in range(3):
        col[j] = 0.5 * (E[j, i] + E[i, j]) - (ct if j == i else 0.0)
    nrm = math.sqrt(col[0] * col[0] + col[1] * col[1] + col[2] * col[2])
    sign = 1.0 if col[0] * sx + col[1] * sy + col[2] * sz >= 0.0 else -1.0
    f = sign * theta / nrm if nrm > 0.0 else 0.0
    psi[0], psi[1], psi[2] = f * col[0], f * col[1], f * col[2]


@njit(cache=True)
def inverse_left_jacobian(psi, J):
    """J = J_l(ψ)⁻¹ = I - ½[ψ]× + β [ψ]×², β = (1 - (θ/2) cot(θ/2)) / θ² (R9), into J (3, 3)."""
    t2 = psi[0] * psi[0] + psi[1] * psi[1] + psi[2] * psi[2]
    th = math.sqrt(t2)
    if th < 1e-4:
        beta = 1.0 / 12.0 + t2 / 720.0
    else:
        beta = (1.0 - 0.5 * th / math.tan(0.5 * th)) / t2
    x, y, z = psi[0], psi[1], psi[2]
    # [ψ]×² = ψψᵀ - θ² I
    for i in range(3):
        for j in range(3):
            J[i, j] = beta * (psi[i] * psi[j] - (t2 if i == j else 0.0)) + (1.0 if i == j else 0.0)
    J[0, 1] += 0.5 * z
    J[0, 2] -= 0.5 * y
    J[1, 0] -= 0.5 * z
    J[1, 2] += 0.5 * x
    J[2, 0] += 0.5 * y
    J[2, 1] -= 0.5 * x


@njit(cache=True)
def _axis_angle(Ra, Rb, ea, ua, ub, ref, g, basis):
    """(R1)-(R5) of one AXIS element: its angle (within half a turn of the reference angle ``ref``: the last
    accepted step's, (R3)) and ρ; g (3) ∂φ/∂θ_b; basis (4, 3) = (e, u, v, u_b) global."""
    for i in range(3):
        basis[0, i] = Ra[i, 0] * ea[0] + Ra[i, 1] * ea[1] + Ra[i, 2] * ea[2]
        basis[1, i] = Ra[i, 0] * ua[0] + Ra[i, 1] * ua[1] + Ra[i, 2] * ua[2]
        basis[3, i] = Rb[i, 0] * ub[0] + Rb[i, 1] * ub[1] + Rb[i, 2] * ub[2]
    e, u, wb = basis[0], basis[1], basis[3]
    basis[2, 0] = e[1] * u[2] - e[2] * u[1]
    basis[2, 1] = e[2] * u[0] - e[0] * u[2]
    basis[2, 2] = e[0] * u[1] - e[1] * u[0]
    v = basis[2]
    cc = wb[0] * u[0] + wb[1] * u[1] + wb[2] * u[2]
    ss = wb[0] * v[0] + wb[1] * v[1] + wb[2] * v[2]
    h = wb[0] * e[0] + wb[1] * e[1] + wb[2] * e[2]
    r2 = cc * cc + ss * ss
    d = math.atan2(ss, cc) - ref
    d -= 2.0 * math.pi * math.floor((d + math.pi) / (2.0 * math.pi))  # (R3): the branch nearest the reference
    if r2 > 0.0:
        f = h / r2
        for i in range(3):
            g[i] = e[i] - f * (cc * u[i] + ss * v[i])  # (R5)
    return ref + d, math.sqrt(r2)


@njit(cache=True)
def rotational_forces(R, V, rot, w, out):
    """Every rotational spring-damper at the node orientations R and twists V, ``rot`` = (ia, ib, mode, ea, ua, ub,
    C, k, c, rest, T0, ref) its arrays (ends ia, ib, N = ground; the fields of RotationalSpringDamperData, then the
    reference angles of (R3): the element state, the angles of the last accepted step): (R1)-(R5) or
    (R8), the torque (R6) or (R10) into ``out`` = (g, angle, rate, torque, energy, power), its node moments (R7)
    added to w, its energy and dissipated power (R11). An AXIS element whose reference vector ρ falls below
    RHO_MIN (R12) adds nothing (all its values zero). Returns the first such element, or -1."""
    ia, ib, mode, ea, ua, ub, C, k, c, rest, T0, ref = rot
    g, angle, rate, torque, energy, power = out
    N = R.shape[0]
    bad = -1
    eye = np.eye(3)
    basis, E, tmp, psi, T, wr = np.empty((4, 3)), np.empty((3, 3)), np.empty((3, 3)), np.empty(3), np.empty(3), np.empty(3)
    for e in range(ia.size):
        a, b = ia[e], ib[e]
        Ra = eye if a == N else R[a]
        for i in range(3):  # the relative angular velocity ω_b - ω_a
            wr[i] = V[b, 3 + i] - (0.0 if a == N else V[a, 3 + i])
        if mode[e] == 0:  # AXIS
            phi, rho = _axis_angle(Ra, R[b], ea[e], ua[e], ub[e], ref[e], g[e], basis)
            if rho < RHO_MIN:  # (R12)
                if bad < 0:
                    bad = e
                g[e, 0] = g[e, 1] = g[e, 2] = 0.0
                angle[e] = rate[e] = torque[e] = energy[e] = power[e] = 0.0
                continue
            d = phi - rest[e]
            r = g[e, 0] * wr[0] + g[e, 1] * wr[1] + g[e, 2] * wr[2]  # (R4)
            f = k[e] * d + c[e] * r + T0[e]  # (R6)
            angle[e], rate[e], torque[e] = phi, r, f
            energy[e] = 0.5 * k[e] * d * d + T0[e] * d  # (R11)
            power[e] = c[e] * r * r
            for i in range(3):
                T[i] = g[e, i] * f
        else:  # FREE: E = R_b C R_aᵀ, ψ = log E (R8)
            for i in range(3):
                for j in range(3):
                    tmp[i, j] = R[b, i, 0] * C[e, 0, j] + R[b, i, 1] * C[e, 1, j] + R[b, i, 2] * C[e, 2, j]
            for i in range(3):
                for j in range(3):
                    E[i, j] = tmp[i, 0] * Ra[j, 0] + tmp[i, 1] * Ra[j, 1] + tmp[i, 2] * Ra[j, 2]
            log_map(E, psi)
            th = math.sqrt(psi[0] * psi[0] + psi[1] * psi[1] + psi[2] * psi[2])
            r = (psi[0] * wr[0] + psi[1] * wr[1] + psi[2] * wr[2]) / th if th > 0.0 else 0.0
            pw = 0.0
            for i in range(3):
                g[e, i] = psi[i]
                T[i] = k[e] * psi[i] + c[e] * wr[i]  # (R10)
                pw += wr[i] * wr[i]
            angle[e], rate[e] = th, r
            torque[e] = math.sqrt(T[0] * T[0] + T[1] * T[1] + T[2] * T[2])
            energy[e] = 0.5 * k[e] * th * th  # (R11)
            power[e] = c[e] * pw
        for i in range(3):  # (R7), residual sense; row N (ground) is discarded
            w[a, 3 + i] -= T[i]
            w[b, 3 + i] += T[i]
    return bad


@njit(cache=True)
def _axis_gradient_b(Ra, Rb, ea, ua, ub, rest, D):
    """∂g/∂θ_b (3, 3) of one AXIS element at fixed node a (R6a) into D."""
    g, basis = np.empty(3), np.empty((4, 3))
    _axis_angle(Ra, Rb, ea, ua, ub, rest, g, basis)
    e, u, v, wb = basis[0], basis[1], basis[2], basis[3]
    cc = wb[0] * u[0] + wb[1] * u[1] + wb[2] * u[2]
    ss = wb[0] * v[0] + wb[1] * v[1] + wb[2] * v[2]
    h = wb[0] * e[0] + wb[1] * e[1] + wb[2] * e[2]
    r2 = cc * cc + ss * ss
    p = cc * u + ss * v
    we, wu, wv, wp = np.cross(wb, e), np.cross(wb, u), np.cross(wb, v), np.cross(wb, p)
    for i in range(3):
        for j in range(3):
            D[i, j] = (-p[i] * we[j] - h * (u[i] * wu[j] + v[i] * wv[j])) / r2 + 2.0 * h * p[i] * wp[j] / (r2 * r2)


@njit(cache=True)
def rotational_blocks(R, V, rot, tangents, g, torque, ck, cc, blk_mode, out):
    """out[e] (n, 12, 12): the iteration-matrix block of every rotational spring-damper over (x_a, θ_a, x_b,
    θ_b) (translations zero): (R13) for ``blk_mode`` TIME_STEP and MATERIAL, its symmetric part of the
    complete tangent (R14) for EXACT, the complete (unsymmetric) tangent (R6), (R9) for FULL (R and V, the node
    orientations and twists, are read by these two only). ``rot`` as for rotational_forces; ``tangents`` = (k,
    c): ∂T/∂φ, ∂T/∂φ' (a torque law's at the iterate); ``g``, ``torque`` those of rotational_forces."""
    ia, ib, mode, ea, ua, ub, rest = rot[0], rot[1], rot[2], rot[3], rot[4], rot[5], rot[9]
    k, c = tangents
    N = R.shape[0]
    eye = np.eye(3)
    A, B, D, Da, wr = np.empty((3, 3)), np.empty((3, 3)), np.empty((3, 3)), np.empty((3, 3)), np.empty(3)
    for e in range(ia.size):
        a, b = ia[e], ib[e]
        out[e, :, :] = 0.0
        if mode[e] == 0:  # AXIS: k g gᵀ, c g gᵀ over (θ_a, θ_b) with signs (+, -; -, +)
            s = ck * k[e] + cc * c[e]
            for i in range(3):
                for j in range(3):
                    A[i, j] = s * (g[e, i] * g[e, j])
                    B[i, j] = A[i, j]
            if blk_mode == EXACT or blk_mode == FULL:
                Ra = eye if a == N else R[a]
                _axis_gradient_b(Ra, R[b], ea[e], ua[e], ub[e], rest[e], D)
                gv = g[e]
                for i in range(3):
                    wr[i] = V[b, 3 + i] - (0.0 if a == N else V[a, 3 + i])
                for i in range(3):  # D_a = -[g]× - D_b (R6b)
                    for j in range(3):
                        Da[i, j] = -D[i, j]
                Da[0, 1] += gv[2]
                Da[0, 2] -= gv[1]
                Da[1, 0] -= gv[2]
                Da[1, 2] += gv[0]
                Da[2, 0] += gv[1]
                Da[2, 1] -= gv[0]
                # rows b: ∂(g T)/∂θ_b = T D_b + g (k gᵀ + c ω_relᵀ D_b), ∂(g T)/∂θ_a = T D_a + g (-k gᵀ + c ω_relᵀ D_a)
                T = torque[e]
                for i in range(3):
                    for j in range(3):
                        wd_b = wr[0] * D[0, j] + wr[1] * D[1, j] + wr[2] * D[2, j]
                        wd_a = wr[0] * Da[0, j] + wr[1] * Da[1, j] + wr[2] * Da[2, j]
                        B[i, j] += ck * (T * D[i, j] + c[e] * gv[i] * wd_b)  # rows b, columns b
                        A[i, j] = -(-A[i, j] + ck * (T * Da[i, j] + c[e] * gv[i] * wd_a))  # -(rows b, columns a)
                # A: minus the (b, a) block; B: the (b, b) block; the (a, ·) rows are their negatives
                _axis_fill(A, B, blk_mode == EXACT, out[e])
                continue
            _pair_fill(A, A, out[e])
        else:  # FREE: k (J_l⁻¹ over (b, b), J_r⁻¹ over (a, a)) and c (I ⊗ P)
            inverse_left_jacobian(g[e], D)
            for i in range(3):
                for j in range(3):
                    sym = 0.5 * (D[i, j] + D[j, i])
                    if blk_mode == TIME_STEP or blk_mode == MATERIAL:  # (R13): sym(J_l⁻¹) ⊗ P
                        A[i, j] = ck * k[e] * sym + (cc * c[e] if i == j else 0.0)
                        B[i, j] = A[i, j]
                    else:  # the (b, b) block and minus the (a, b) block
                        B[i, j] = ck * k[e] * (sym if blk_mode == EXACT else D[i, j]) + (cc * c[e] if i == j else 0.0)
                        A[i, j] = ck * k[e] * D[i, j] + (cc * c[e] if i == j else 0.0)
            if blk_mode == TIME_STEP or blk_mode == MATERIAL:
                _pair_fill(A, A, out[e])
            else:
                for i in range(3):
                    for j in range(3):
                        out[e, 9 + i, 9 + j] = B[i, j]
                        # (a, a): k J_r⁻¹ = k (J_l⁻¹)ᵀ, symmetric part the same as (b, b)
                        out[e, 3 + i, 3 + j] = B[j, i] if blk_mode == FULL else B[i, j]
                        out[e, 3 + i, 9 + j] = -A[i, j]  # (a, b): -k J_l⁻¹
                        out[e, 9 + i, 3 + j] = -A[j, i]  # (b, a): -k J_r⁻¹ = -(k J_l⁻¹)ᵀ


@njit(cache=True)
def _pair_fill(A, B, out):
    """out (12, 12) = [[B, -A], [-A, B]] over (θ_a, θ_b) (A, B symmetric)."""
    for i in range(3):
        for j in range(3):
            out[3 + i, 3 + j] = B[i, j]
            out[9 + i, 9 + j] = B[i, j]
            out[3 + i, 9 + j] = -A[i, j]
            out[9 + i, 3 + j] = -A[i, j]


@njit(cache=True)
def _axis_fill(A, B, symmetric, out):
    """An AXIS element's complete tangent from its rows b (B = (b, b), A = -(b, a)), rows a their negatives
    (R6): out over (θ_a, θ_b) = [[A, -B], [-A, B]]; with ``symmetric`` its symmetric part (R14)."""
    for i in range(3):
        for j in range(3):
            out[9 + i, 9 + j] = B[i, j]
            out[9 + i, 3 + j] = -A[i, j]
            out[3 + i, 3 + j] = A[i, j]
            out[3 + i, 9 + j] = -B[i, j]
    if symmetric:
        for i in range(12):
            for j in range(i + 1, 12):
                s = 0.5 * (out[i, j] + out[j, i])
                out[i, j] = s
                out[j, i] = s
