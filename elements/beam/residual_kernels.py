"""Compiled (numba) kernels of the co-rotational beam: the hot path of every Newton iteration.

They compute, element by element in one pass, exactly what the vectorised test oracles of
:mod:`flexmb.elements.beam.reference` compute (tests/test_beam_compiled.py compares both): the
co-rotated frame and local deformations (eq. 1–4 of :mod:`flexmb.elements.beam`), elastic and
damping forces, the consistent-mass inertia forces (eq. 5–6), the weight (eq. 7), and, for the
iteration matrix, the element matrices ck K + cc C + cm M with K the material stiffness plus the
string (axial force) geometric stiffness. The compiled Newton iterates take the residual and the
mass forces of the node accelerations in one pass (residual_and_mass_forces: each element's frame
and mass read once, the same values as the two passes).

Given ``threads`` > 1 (flexmb/engine/parallel.py, threads_for: from PARALLEL_MIN elements on, when
numba has more than one thread) the three per-element passes split the elements into one contiguous
slice per thread; each element's node forces (or matrix products) go into a row of their own and are
added to the nodes afterwards, element after element: the same sums in the same order as on one
thread, so the result does not depend on the threads (tests/test_beam_threads.py). A worker process
of a sweep gets one thread (flexmb.app.executors).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from flexmb.engine.iteration_matrix import _free_node_block, add_values, element_columns, scatter_block
from flexmb.rotations import jl_inv_into, logm_into

__all__ = ["residual", "residual_and_mass_forces", "mass_forces", "element_matrices", "add_element_matrices",
           "mass_pattern"]


@njit(cache=True, inline="always")
def _corotated(x, R, ia, ib, C1, C2, e, L0, Rr, p, Bl, k, Wr, T, A, J, th):
    """Co-rotated frame Rr[k] (3,3), local deformations p[k] (7), Bl[k] (7,12) and Wr (3,12)
    (eq. 1–4) of element e between nodes ia and ib; returns the current chord length. T (2,3,3),
    A, J (3,3), th (3): work arrays. The axes r1, r2, r3 and the mean section axis q are kept in
    scalars, and every array is indexed in place (no views: no reference counting per element);
    each value is the same expression as the 3-vector formulas."""
    d0, d1, d2 = x[ib, 0] - x[ia, 0], x[ib, 1] - x[ia, 1], x[ib, 2] - x[ia, 2]
    l = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
    r10, r11, r12 = d0 / l, d1 / l, d2 / l
    for i in range(3):  # T[0] = R1 C1, T[1] = R2 C2 (matmul3_into)
        for j in range(3):
            T[0, i, j] = R[ia, i, 0] * C1[e, 0, j] + R[ia, i, 1] * C1[e, 1, j] + R[ia, i, 2] * C1[e, 2, j]
    for i in range(3):
        for j in range(3):
            T[1, i, j] = R[ib, i, 0] * C2[e, 0, j] + R[ib, i, 1] * C2[e, 1, j] + R[ib, i, 2] * C2[e, 2, j]
    q0, q1, q2 = 0.5 * (T[0, 0, 1] + T[1, 0, 1]), 0.5 * (T[0, 1, 1] + T[1, 1, 1]), 0.5 * (T[0, 2, 1] + T[1, 2, 1])
    r30, r31, r32 = r11 * q2 - r12 * q1, r12 * q0 - r10 * q2, r10 * q1 - r11 * q0  # r1 x q
    n3 = np.sqrt(r30 * r30 + r31 * r31 + r32 * r32)
    r30, r31, r32 = r30 / n3, r31 / n3, r32 / n3
    r20, r21, r22 = r31 * r12 - r32 * r11, r32 * r10 - r30 * r12, r30 * r11 - r31 * r10  # r3 x r1
    Rr[k, 0, 0], Rr[k, 0, 1], Rr[k, 0, 2] = r10, r20, r30
    Rr[k, 1, 0], Rr[k, 1, 1], Rr[k, 1, 2] = r11, r21, r31
    Rr[k, 2, 0], Rr[k, 2, 1], Rr[k, 2, 2] = r12, r22, r32
    p[k, 0] = l - L0
    qa = r10 * q0 + r11 * q1 + r12 * q2
    qb = r20 * q0 + r21 * q1 + r22 * q2
    # Wr rows (eq. 3)
    for j in range(12):
        Wr[0, j] = Wr[1, j] = Wr[2, j] = 0.0
    Wr[1, 0], Wr[1, 1], Wr[1, 2] = r30 / l, r31 / l, r32 / l
    Wr[1, 6], Wr[1, 7], Wr[1, 8] = -r30 / l, -r31 / l, -r32 / l
    Wr[2, 0], Wr[2, 1], Wr[2, 2] = -r20 / l, -r21 / l, -r22 / l
    Wr[2, 6], Wr[2, 7], Wr[2, 8] = r20 / l, r21 / l, r22 / l
    w = qa / qb
    for j in range(12):
        Wr[0, j] = w * Wr[1, j]
    for s in range(2):
        t0, t1, t2 = T[s, 0, 1], T[s, 1, 1], T[s, 2, 1]
        o = 6 * s + 3
        Wr[0, o] += 0.5 * (t1 * r32 - t2 * r31) / qb  # T[:, 1] x r3
        Wr[0, o + 1] += 0.5 * (t2 * r30 - t0 * r32) / qb
        Wr[0, o + 2] += 0.5 * (t0 * r31 - t1 * r30) / qb
    for j in range(12):
        Bl[k, 0, j] = 0.0
    Bl[k, 0, 0], Bl[k, 0, 1], Bl[k, 0, 2] = -r10, -r11, -r12
    Bl[k, 0, 6], Bl[k, 0, 7], Bl[k, 0, 8] = r10, r11, r12
    for s in range(2):
        for j in range(3):  # A = Rr^T T
            A[0, j] = r10 * T[s, 0, j] + r11 * T[s, 1, j] + r12 * T[s, 2, j]
            A[1, j] = r20 * T[s, 0, j] + r21 * T[s, 1, j] + r22 * T[s, 2, j]
            A[2, j] = r30 * T[s, 0, j] + r31 * T[s, 1, j] + r32 * T[s, 2, j]
        logm_into(A, th)
        p[k, 1 + 3 * s], p[k, 2 + 3 * s], p[k, 3 + 3 * s] = th[0], th[1], th[2]
        jl_inv_into(th, J)
        # rows 1+3s.. of Bl = J (M - Wr), M = Rr^T in the columns of node s's rotation
        j00, j01, j02 = J[0, 0], J[0, 1], J[0, 2]
        j10, j11, j12 = J[1, 0], J[1, 1], J[1, 2]
        j20, j21, j22 = J[2, 0], J[2, 1], J[2, 2]
        for j in range(12):
            m0, m1, m2 = -Wr[0, j], -Wr[1, j], -Wr[2, j]
            Bl[k, 1 + 3 * s, j] = j00 * m0 + j01 * m1 + j02 * m2
            Bl[k, 2 + 3 * s, j] = j10 * m0 + j11 * m1 + j12 * m2
            Bl[k, 3 + 3 * s, j] = j20 * m0 + j21 * m1 + j22 * m2
        o = 6 * s + 3
        for c in range(3):  # the node's rotation columns again, with Rr^T
            j = o + c
            m0, m1, m2 = -Wr[0, j] + Rr[k, c, 0], -Wr[1, j] + Rr[k, c, 1], -Wr[2, j] + Rr[k, c, 2]
            Bl[k, 1 + 3 * s, j] = j00 * m0 + j01 * m1 + j02 * m2
            Bl[k, 2 + 3 * s, j] = j10 * m0 + j11 * m1 + j12 * m2
            Bl[k, 3 + 3 * s, j] = j20 * m0 + j21 * m1 + j22 * m2
    return l


@njit(cache=True, inline="always")
def _rot_blocks(Rr, k, v, out, transpose):
    """Blockwise Rr[k] v (or Rr[k]^T v) for a 12-vector of four 3-blocks."""
    for b in range(4):
        for i in range(3):
            s = 0.0
            for j in range(3):
                s += (Rr[k, j, i] if transpose else Rr[k, i, j]) * v[3 * b + j]
            out[3 * b + i] = s


@njit(cache=True, inline="always")
def _local_mass_times(Mnz, k, nz_r, nz_c, v, out):
    """out = M_l v for element k's local consistent mass given by its nonzero values Mnz[k] at the
    pattern (nz_r, nz_c) (mass_pattern)."""
    for i in range(12):
        out[i] = 0.0
    t, nt = 0, nz_r.size
    while t < nt:  # row by row (mass_pattern's order): each row's sum in a register, products in order
        r_ = nz_r[t]
        s = 0.0
        while t < nt and nz_r[t] == r_:
            s += Mnz[k, t] * v[nz_c[t]]
            t += 1
        out[r_] = s


@njit(cache=True, inline="always")
def _local_stiffness_times(Kl, k, p, pdot, fl, s1):
    """fl = K p and s1 = K pdot (K = Kl[k] (7,7), one element's local stiffness; p, pdot: 7-vectors),
    each entry summed over j ascending as the dense product. When p and pdot are finite the
    products with a zero entry of K are skipped (they are ±0, and a sum started at +0 is never -0,
    so adding them changes nothing); otherwise every product is formed, so a NaN or inf propagates
    as in the dense product."""
    z = 0.0
    for j in range(7):
        z += p[j] * 0.0 + pdot[j] * 0.0
    if z == 0.0:
        for i in range(7):
            s0 = 0.0
            t = 0.0
            for j in range(7):
                c = Kl[k, i, j]
                if c != 0.0:
                    s0 += c * p[j]
                    t += c * pdot[j]
            fl[i] = s0
            s1[i] = t
    else:
        for i in range(7):
            s0 = 0.0
            t = 0.0
            for j in range(7):
                s0 += Kl[k, i, j] * p[j]
                t += Kl[k, i, j] * pdot[j]
            fl[i] = s0
            s1[i] = t


@njit(cache=True)
def residual(a, b, x, R, V, zeta, C1, C2, L0, Kl, alpha, Mnz, nz_r, nz_c, mass, g, load_factor, bias, frames, fl_out,
             energies, p_out, Bl_out, chord, threads=1):
    """Adds every beam's inertia (eq. 6, with M zeta), minus its elastic, damping (Zahariev eq. 13)
    and weight (eq. 7) forces, to the node wrenches ``bias`` (N,6). Stores the co-rotated frames
    (n,3,3), local forces K_l p (n,7) and per element (n,4): strain energy, dissipated power,
    kinetic energy, weight potential; and what the element matrices need at this state (eq. 1–4):
    local deformations p (n,7), Bl (n,7,12) and the chord length l (n) (add_element_matrices).
    (Mnz, nz_r, nz_c): the local masses' values (n, nnz) at their shared nonzero pattern (mass_pattern).

    The inertia terms are formed in the co-rotated frame (v_l = R~^T V, spin W_l = W_r V):
    R~ [W_l x P_l + M_l (zeta_l - W_l x v_l) - (w_l x P_l at the rotations)] - W_r^T sum P_l x v_l,
    which is eq. (6) plus M zeta rotated into the frame (the cross products are frame-invariant).

    Every value is the same sum in the same order as the plain dense loops; loops run with the
    output entries innermost where that vectorises, products with a zero entry of K_l are skipped
    when that cannot change a bit (_local_stiffness_times), and the frame, p and Bl are written
    straight into the outputs. Each element's node forces are added to ``bias`` after all of
    them are formed, element after element (on several threads too: module docstring)."""
    none = np.empty((0, 6))
    residual_and_mass_forces(a, b, x, R, V, zeta, C1, C2, L0, Kl, alpha, Mnz, nz_r, nz_c, mass, g, load_factor, bias, none,
                             none, frames, fl_out, energies, p_out, Bl_out, chord, threads)


@njit(cache=True)
def residual_and_mass_forces(a, b, x, R, V, zeta, C1, C2, L0, Kl, alpha, Mnz, nz_r, nz_c, mass, g, load_factor, bias, acc,
                             mf, frames, fl_out, energies, p_out, Bl_out, chord, threads=1):
    """:func:`residual` and, in the same pass over the elements, :func:`mass_forces` of the node
    accelerations ``acc`` (N,6) added to ``mf`` (N,6) (acc of 0 rows: residual only): each element's
    frame and local mass are read once. The values are those of the two separate passes bit for
    bit (each sum the same products in the same order)."""
    n = a.size
    F = np.empty((n, 12))
    Fm = np.empty((n if acc.shape[0] else 0, 12))
    if threads > 1:
        _residual_threads(a, b, x, R, V, zeta, C1, C2, L0, Kl, alpha, Mnz, nz_r, nz_c, mass, g, load_factor, F, frames,
                          fl_out, energies, p_out, Bl_out, chord, acc, Fm, threads)
    else:
        _residual_range(0, n, a, b, x, R, V, zeta, C1, C2, L0, Kl, alpha, Mnz, nz_r, nz_c, mass, g, load_factor, F, frames,
                        fl_out, energies, p_out, Bl_out, chord, acc, Fm)
    _add_node_pairs(a, b, F, bias)
    if acc.shape[0]:
        _add_node_pairs(a, b, Fm, mf)


@njit(cache=True, parallel=True)
def _residual_threads(a, b, x, R, V, zeta, C1, C2, L0, Kl, alpha, Mnz, nz_r, nz_c, mass, g, load_factor, F, frames, fl_out,
                      energies, p_out, Bl_out, chord, acc, Fm, nt):
    """_residual_range over the elements in ``nt`` contiguous slices, one per thread (module docstring)."""
    n = a.size
    for c in prange(nt):
        _residual_range(c * n // nt, (c + 1) * n // nt, a, b, x, R, V, zeta, C1, C2, L0, Kl, alpha, Mnz, nz_r, nz_c, mass, g,
                        load_factor, F, frames, fl_out, energies, p_out, Bl_out, chord, acc, Fm)


@njit(cache=True)
def _add_node_pairs(a, b, F, out):
    """out[a[e]] += F[e, :6] and out[b[e]] += F[e, 6:], element after element (the order of the sums)."""
    for e in range(a.size):
        ia, ib = a[e], b[e]
        for i in range(6):
            out[ia, i] += F[e, i]
            out[ib, i] += F[e, 6 + i]


@njit(cache=True)
def _residual_range(lo, hi, a, b, x, R, V, zeta, C1, C2, L0, Kl, alpha, Mnz, nz_r, nz_c, mass, g, load_factor, F, frames,
                    fl_out, energies, p_out, Bl_out, chord, acc, Fm):
    """Elements lo:hi of :func:`residual_and_mass_forces`: each one's node forces (12) into F[e], and
    with ``acc`` its mass forces into Fm[e], instead of the sums."""
    with_acc = acc.shape[0] > 0
    Ae = np.empty(12)
    al = np.zeros(12)
    ml = np.empty(12)
    Wr = np.empty((3, 12))
    Tw = np.empty((2, 3, 3))
    A = np.empty((3, 3))
    J = np.empty((3, 3))
    th = np.empty(3)
    pe = np.empty(7)
    Ve = np.empty(12)
    vl = np.empty(12)
    zl = np.empty(12)
    Pl = np.empty(12)
    t1 = np.empty(12)
    fl_ = np.empty(12)
    fl = np.empty(7)
    pdot = np.empty(7)
    s1 = np.empty(7)
    h = np.empty(7)
    f = np.empty(12)
    Om = np.empty(3)
    tmp = np.empty(3)
    c = np.empty(3)
    mg = np.empty(3)
    for e in range(lo, hi):
        ia, ib = a[e], b[e]
        for i in range(6):
            Ve[i], Ve[6 + i] = V[ia, i], V[ib, i]
        chord[e] = _corotated(x, R, ia, ib, C1, C2, e, L0[e], frames, p_out, Bl_out, e, Wr, Tw, A, J, th)
        for i in range(7):
            pe[i] = p_out[e, i]
        # elastic and damping: f = Bl^T (K p + alpha K Bl V)  (the bias holds inertial minus applied)
        q0 = q1 = q2 = q3 = q4 = q5 = q6 = 0.0  # pdot = Bl Ve: seven independent sums, j ascending
        for j in range(12):
            vj = Ve[j]
            q0 += Bl_out[e, 0, j] * vj
            q1 += Bl_out[e, 1, j] * vj
            q2 += Bl_out[e, 2, j] * vj
            q3 += Bl_out[e, 3, j] * vj
            q4 += Bl_out[e, 4, j] * vj
            q5 += Bl_out[e, 5, j] * vj
            q6 += Bl_out[e, 6, j] * vj
        pdot[0], pdot[1], pdot[2], pdot[3], pdot[4], pdot[5], pdot[6] = q0, q1, q2, q3, q4, q5, q6
        _local_stiffness_times(Kl, e, pe, pdot, fl, s1)
        ae = alpha[e]
        U = 0.0
        Pd = 0.0
        for i in range(7):
            fl_out[e, i] = fl[i]
            fd = ae * s1[i]
            U += 0.5 * pe[i] * fl[i]
            Pd += pdot[i] * fd
            h[i] = fl[i] + fd
        for j in range(12):
            f[j] = 0.0
        for i in range(7):
            hi = h[i]
            for j in range(12):
                f[j] += Bl_out[e, i, j] * hi
        # inertia in the co-rotated frame
        for k in range(4):
            for i in range(3):
                vl[3 * k + i] = frames[e, 0, i] * Ve[3 * k] + frames[e, 1, i] * Ve[3 * k + 1] + frames[e, 2, i] * Ve[3 * k + 2]
        o0 = o1 = o2 = 0.0  # Om = Wr Ve
        for j in range(12):
            vj = Ve[j]
            o0 += Wr[0, j] * vj
            o1 += Wr[1, j] * vj
            o2 += Wr[2, j] * vj
        Om[0], Om[1], Om[2] = o0, o1, o2
        for k in range(2):
            node = ia if k == 0 else ib
            for hh in range(2):
                for i in range(3):
                    zl[6 * k + 3 * hh + i] = (frames[e, 0, i] * zeta[node, 3 * hh] + frames[e, 1, i] * zeta[node, 3 * hh + 1]
                                              + frames[e, 2, i] * zeta[node, 3 * hh + 2])
        for k in range(4):  # zl <- zeta_l - W_l x v_l
            o = 3 * k
            zl[o] -= Om[1] * vl[o + 2] - Om[2] * vl[o + 1]
            zl[o + 1] -= Om[2] * vl[o] - Om[0] * vl[o + 2]
            zl[o + 2] -= Om[0] * vl[o + 1] - Om[1] * vl[o]
        # Pl = Ml vl and fl_ = Ml zl in one pass over the mass pattern (Ml's values: Mnz[e])
        for i in range(12):
            Pl[i] = 0.0
            fl_[i] = 0.0
        if with_acc:  # the mass forces' local accelerations (mass_forces: Rr^T blockwise)
            for i in range(6):
                Ae[i], Ae[6 + i] = acc[ia, i], acc[ib, i]
            _rot_blocks(frames, e, Ae, al, True)
            for i in range(12):
                ml[i] = 0.0
        t, nt = 0, nz_r.size
        while t < nt:  # row by row (mass_pattern's order): the rows' sums in registers, products in order
            r_ = nz_r[t]
            s0 = s1_ = s2 = 0.0
            while t < nt and nz_r[t] == r_:
                m, c_ = Mnz[e, t], nz_c[t]
                s0 += m * vl[c_]
                s1_ += m * zl[c_]
                s2 += m * al[c_]
                t += 1
            Pl[r_] = s0
            fl_[r_] = s1_
            ml[r_] = s2
        if with_acc:
            _rot_blocks(frames, e, ml, Fm[e], False)
        T = 0.0
        for i in range(12):
            T += 0.5 * vl[i] * Pl[i]
        s30 = s31 = s32 = 0.0
        for k in range(4):
            o = 3 * k
            fl_[o] += Om[1] * Pl[o + 2] - Om[2] * Pl[o + 1]
            fl_[o + 1] += Om[2] * Pl[o] - Om[0] * Pl[o + 2]
            fl_[o + 2] += Om[0] * Pl[o + 1] - Om[1] * Pl[o]
            s30 += Pl[o + 1] * vl[o + 2] - Pl[o + 2] * vl[o + 1]
            s31 += Pl[o + 2] * vl[o] - Pl[o] * vl[o + 2]
            s32 += Pl[o] * vl[o + 1] - Pl[o + 1] * vl[o]
        for k in (1, 3):  # Hamel term of the spatial angular velocities
            o = 3 * k
            fl_[o] -= vl[o + 1] * Pl[o + 2] - vl[o + 2] * Pl[o + 1]
            fl_[o + 1] -= vl[o + 2] * Pl[o] - vl[o] * Pl[o + 2]
            fl_[o + 2] -= vl[o] * Pl[o + 1] - vl[o + 1] * Pl[o]
        _rot_blocks(frames, e, fl_, t1, False)
        for j in range(12):
            f[j] += t1[j] - (Wr[0, j] * s30 + Wr[1, j] * s31 + Wr[2, j] * s32)
        # weight (eq. 7): -f_g into the bias
        lf = load_factor * mass[e] / 12.0 * L0[e]
        dl1 = L0[e] / 12.0 * (pe[3] - pe[6])
        dl2 = L0[e] / 12.0 * (pe[5] - pe[2])
        for i in range(3):
            c[i] = frames[e, i, 1] * dl1 + frames[e, i, 2] * dl2
            mg[i] = load_factor * mass[e] * g[i]
        Wg = 0.0
        for i in range(3):
            Wg -= mg[i] * (0.5 * (x[ia, i] + x[ib, i]) + c[i])
        g0 = c[1] * mg[2] - c[2] * mg[1]
        g1 = c[2] * mg[0] - c[0] * mg[2]
        g2 = c[0] * mg[1] - c[1] * mg[0]
        for i in range(3):
            tmp[i] = frames[e, 0, i] * g0 + frames[e, 1, i] * g1 + frames[e, 2, i] * g2
        gy = lf * (frames[e, 0, 1] * g[0] + frames[e, 1, 1] * g[1] + frames[e, 2, 1] * g[2])
        gz = lf * (frames[e, 0, 2] * g[0] + frames[e, 1, 2] * g[1] + frames[e, 2, 2] * g[2])
        for j in range(12):
            fg = Wr[0, j] * tmp[0] + Wr[1, j] * tmp[1] + Wr[2, j] * tmp[2]
            fg += gy * (Bl_out[e, 3, j] - Bl_out[e, 6, j]) + gz * (Bl_out[e, 5, j] - Bl_out[e, 2, j])
            f[j] -= fg
        for i in range(3):
            f[i] -= 0.5 * mg[i]
            f[6 + i] -= 0.5 * mg[i]
        for j in range(12):
            F[e, j] = f[j]
        energies[e, 0] = U
        energies[e, 1] = Pd
        energies[e, 2] = T
        energies[e, 3] = Wg


def mass_pattern(Ml: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The local masses Ml (n,12,12) as the kernels read them: their values (n, nnz) at the nonzero
    pattern (rows, cols) they share, row by row, and that pattern; the values of an element side by
    side (a fifth of its dense block's memory for the consistent mass: fewer bytes per pass)."""
    r, c = np.nonzero(np.any(Ml != 0.0, axis=0)) if len(Ml) else (np.zeros(0, int), np.zeros(0, int))
    r, c = r.astype(np.int64), c.astype(np.int64)
    return np.ascontiguousarray(np.asarray(Ml)[:, r, c], dtype=float).reshape(len(Ml), r.size), r, c


@njit(cache=True)
def mass_forces(a, b, frames, Mnz, nz_r, nz_c, acc, out, threads=1):
    """Adds the element masses times the node accelerations acc (N,6) to out (N,6) (eq. 5);
    (Mnz, nz_r, nz_c): the local masses' values at their nonzero pattern (mass_pattern: the same sums as the dense
    product without its zero terms, bit for bit). Elements on several threads as :func:`residual`."""
    n = a.size
    F = np.empty((n, 12))
    if threads > 1:
        _mass_forces_threads(a, b, frames, Mnz, nz_r, nz_c, acc, F, threads)
    else:
        _mass_forces_range(0, n, a, b, frames, Mnz, nz_r, nz_c, acc, F)
    _add_node_pairs(a, b, F, out)


@njit(cache=True, parallel=True)
def _mass_forces_threads(a, b, frames, Mnz, nz_r, nz_c, acc, F, nt):
    """_mass_forces_range over ``nt`` contiguous slices of the elements, one per thread."""
    n = a.size
    for c in prange(nt):
        _mass_forces_range(c * n // nt, (c + 1) * n // nt, a, b, frames, Mnz, nz_r, nz_c, acc, F)


@njit(cache=True)
def _mass_forces_range(lo, hi, a, b, frames, Mnz, nz_r, nz_c, acc, F):
    """Elements lo:hi of :func:`mass_forces`: each one's node forces (12) into F[e]."""
    Ae = np.empty(12)
    t1 = np.empty(12)
    t2 = np.empty(12)
    for e in range(lo, hi):
        ia, ib = a[e], b[e]
        for i in range(6):
            Ae[i], Ae[6 + i] = acc[ia, i], acc[ib, i]
        _rot_blocks(frames, e, Ae, t1, True)
        _local_mass_times(Mnz, e, nz_r, nz_c, t1, t2)
        _rot_blocks(frames, e, t2, F[e], False)


@njit(cache=True, inline="always")
def _formed(i, h, skip):
    """Whether row i of an element matrix is formed in node h's columns (6h:6h + 6): not where
    ``skip`` (ElementScatter.skip, m = 2) has the bit of the block (node of row i, h)."""
    return not (skip >> (2 * (i // 6) + h)) & 1


@njit(cache=True)
def _element_matrix(Rr, Bl, p0, l, Kl, alpha, Ml, ck, cc, cm, material_only, KB, MR, acc, out, skip=0):
    """out (12,12) = ck K + cc C + cm M of one element at its co-rotated frame Rr, Bl (7,12), axial
    strain p0 and chord l (element_matrices); acc: a work row (12). Each entry is the sum of its
    products in the order of the dense loops (k ascending); the loops run with the entries
    innermost so that they vectorise without changing any sum, and products with a zero factor of
    K_l, Bl or M_l are skipped (a zero product added to a sum started at +0 changes nothing): the
    values are those of the dense products bit for bit. ``skip`` (:func:`_formed`): node blocks
    not formed (their entries are left as they were, but for the string stiffness's)."""
    for i in range(7):  # KB = K_l Bl
        for j in range(12):
            KB[i, j] = 0.0
        for k in range(7):
            c = Kl[i, k]
            if c != 0.0:
                for j in range(12):
                    KB[i, j] += c * Bl[k, j]
    cmat = ck + cc * alpha
    for i in range(12):  # Bl^T KB
        for h in range(2):
            if not _formed(i, h, skip):
                continue
            o = 6 * h
            for j in range(6):
                acc[o + j] = 0.0
            for k in range(7):
                c = Bl[k, i]
                if c != 0.0:
                    for j in range(6):
                        acc[o + j] += c * KB[k, o + j]
            for j in range(6):
                out[i, o + j] = cmat * acc[o + j]
    if not material_only:
        N = Kl[0, 0] * p0 / l * ck
        for i in range(3):
            for j in range(3):
                Pij = N * ((1.0 if i == j else 0.0) - Rr[i, 0] * Rr[j, 0])
                out[i, j] += Pij
                out[6 + i, 6 + j] += Pij
                out[i, 6 + j] -= Pij
                out[6 + i, j] -= Pij
    if cm != 0.0:
        # M = R~ Ml R~^T: MR = Ml R~^T (blockwise), then R~ MR
        for i in range(12):
            for bj in range(4):
                if not _formed(i, bj // 2, skip):
                    continue
                m0 = 0.0
                m1 = m2 = m0
                for k in range(3):
                    c = Ml[i, 3 * bj + k]
                    if c != 0.0:
                        m0 += c * Rr[0, k]
                        m1 += c * Rr[1, k]
                        m2 += c * Rr[2, k]
                MR[i, 3 * bj], MR[i, 3 * bj + 1], MR[i, 3 * bj + 2] = m0, m1, m2
        for bi in range(4):
            for h in range(2):
                if not _formed(3 * bi, h, skip):
                    continue
                o = 6 * h
                for i in range(3):
                    for j in range(6):
                        acc[o + j] = 0.0
                    for k in range(3):
                        c = Rr[i, k]
                        for j in range(6):
                            acc[o + j] += c * MR[3 * bi + k, o + j]
                    for j in range(6):
                        out[3 * bi + i, o + j] += cm * acc[o + j]


@njit(cache=True)
def element_matrices(a, b, x, R, C1, C2, L0, Kl, alpha, Ml, ck, cc, cm, material_only, out):
    """out (n,12,12) = ck K + cc C + cm M per element: K = Bl^T K_l Bl plus the string stiffness
    N/l [[P, -P], [-P, P]] (P = I - r1 r1^T, unless ``material_only``), C = alpha Bl^T K_l Bl,
    M = R~ M_l R~^T."""
    Rr = np.empty((1, 3, 3))
    p = np.empty((1, 7))
    Bl = np.empty((1, 7, 12))
    Wr = np.empty((3, 12))
    T = np.empty((2, 3, 3))
    A = np.empty((3, 3))
    J = np.empty((3, 3))
    th = np.empty(3)
    KB = np.empty((7, 12))
    MR = np.empty((12, 12))
    acc = np.empty(12)
    for e in range(a.size):
        l = _corotated(x, R, a[e], b[e], C1, C2, e, L0[e], Rr, p, Bl, 0, Wr, T, A, J, th)
        _element_matrix(Rr[0], Bl[0], p[0, 0], l, Kl[e], alpha[e], Ml[e], ck, cc, cm, material_only, KB, MR, acc, out[e])


@njit(cache=True)
def add_element_matrices(frames, Bl, p, chord, Kl, alpha, Ml, ck, cc, cm, material_only, nodes, anc_ptr, anc_coord,
                         pos_ptr, pos, S, x, max_ne, skip, data, threads=1, plan=None):
    """data[pos] += B_eᵀ (ck K + cc C + cm M) B_e for every element: each element's matrix
    (element_matrices, from the frames, Bl, p and chord of the residual at this state) built in a
    (12,12) buffer and scattered at once into the iteration matrix's values ``data``
    (flexmb.engine.iteration_matrix: element_columns, scatter_block; ElementScatter's arrays).
    The same arithmetic as element_matrices followed by the scatter, bit for bit, but for an element
    between two free nodes: its matrix is formed in the nodes' coordinates at once, only where it
    has positions (_free_pair_matrix: the same values to round-off, without the (12,12) buffers
    and their products by B_e); ``skip`` (n,) or empty: node blocks without positions, not formed
    (ElementScatter.lower_only). On several
    threads (module docstring) with ``plan`` = (doff, dmap) of ElementScatter.thread_plan
    for these threads, each thread adds its elements' products to ``data`` itself but those at the
    seams with an earlier slice, which are stored and added afterwards in element order; without a
    plan every product is stored (scatter_block's values) and all are added in element order
    (add_values). Either way each value is the same sum in the same order as on one thread."""
    n = frames.shape[0]
    if threads > 1 and plan is not None:
        doff, dmap = plan
        values = np.empty(pos.size)  # only the seam elements' entries are written
        _element_matrices_threads(frames, Bl, p, chord, Kl, alpha, Ml, ck, cc, cm, material_only, nodes, anc_ptr, anc_coord,
                                  pos_ptr, pos, S, x, max_ne, skip, data, values, doff, dmap, threads)
        for e in range(n):  # the seams' stored products, in element order
            if doff[e] >= 0:
                o, d = pos_ptr[e], doff[e]
                for j in range(pos_ptr[e + 1] - o):
                    if dmap[d + j] >= 0:
                        data[pos[o + j]] += values[o + j]
    elif threads > 1:
        values = np.empty(pos.size)
        _element_matrices_threads(frames, Bl, p, chord, Kl, alpha, Ml, ck, cc, cm, material_only, nodes, anc_ptr, anc_coord,
                                  pos_ptr, pos, S, x, max_ne, skip, data, values, np.empty(0, dtype=np.int64),
                                  np.empty(0, dtype=np.int64), threads)
        add_values(pos, values, data)
    else:
        _element_matrices_range(0, n, frames, Bl, p, chord, Kl, alpha, Ml, ck, cc, cm, material_only, nodes, anc_ptr,
                                anc_coord, pos_ptr, pos, S, x, max_ne, skip, data, np.empty(0))


@njit(cache=True, parallel=True)
def _element_matrices_threads(frames, Bl, p, chord, Kl, alpha, Ml, ck, cc, cm, material_only, nodes, anc_ptr, anc_coord,
                              pos_ptr, pos, S, x, max_ne, skip, data, values, doff, dmap, nt):
    """_element_matrices_range over ``nt`` contiguous slices of the elements, one per thread: with
    ``doff`` empty every product stored in ``values``; else (ElementScatter.thread_plan) added to
    ``data`` by the thread, but for the elements at a seam (doff[e] >= 0), whose products are
    stored at their entries in ``values`` and only those without a slot (dmap < 0) added at once."""
    n = frames.shape[0]
    for c in prange(nt):
        lo, hi = c * n // nt, (c + 1) * n // nt
        if doff.size == 0:
            _element_matrices_range(lo, hi, frames, Bl, p, chord, Kl, alpha, Ml, ck, cc, cm, material_only, nodes, anc_ptr,
                                    anc_coord, pos_ptr, pos, S, x, max_ne, skip, data, values)
        else:
            _slice_with_seams(lo, hi, frames, Bl, p, chord, Kl, alpha, Ml, ck, cc, cm, material_only, nodes, anc_ptr,
                              anc_coord, pos_ptr, pos, S, x, max_ne, skip, data, values, doff, dmap)


@njit(cache=True)
def _slice_with_seams(lo, hi, frames, Bl, p, chord, Kl, alpha, Ml, ck, cc, cm, material_only, nodes, anc_ptr, anc_coord,
                      pos_ptr, pos, S, x, max_ne, skip, data, values, doff, dmap):
    """Elements lo:hi (one thread's slice) in element order: runs of elements without a seam added
    to ``data`` (_element_matrices_range), each seam element's products stored in ``values`` and
    those without a slot in ``dmap`` then added, the others left for after the threads."""
    none = np.empty(0)
    start = lo
    for e in range(lo, hi):
        if doff[e] < 0:
            continue
        if start < e:
            _element_matrices_range(start, e, frames, Bl, p, chord, Kl, alpha, Ml, ck, cc, cm, material_only, nodes, anc_ptr,
                                    anc_coord, pos_ptr, pos, S, x, max_ne, skip, data, none)
        _element_matrices_range(e, e + 1, frames, Bl, p, chord, Kl, alpha, Ml, ck, cc, cm, material_only, nodes, anc_ptr,
                                anc_coord, pos_ptr, pos, S, x, max_ne, skip, data, values)
        o, d = pos_ptr[e], doff[e]
        for j in range(pos_ptr[e + 1] - o):
            q = pos[o + j]
            if q >= 0 and dmap[d + j] < 0:
                data[q] += values[o + j]
        start = e + 1
    if start < hi:
        _element_matrices_range(start, hi, frames, Bl, p, chord, Kl, alpha, Ml, ck, cc, cm, material_only, nodes, anc_ptr,
                                anc_coord, pos_ptr, pos, S, x, max_ne, skip, data, none)


@njit(cache=True)
def _element_matrices_range(lo, hi, frames, Bl, p, chord, Kl, alpha, Ml, ck, cc, cm, material_only, nodes, anc_ptr,
                            anc_coord, pos_ptr, pos, S, x, max_ne, skip, data, values):
    """Elements lo:hi of :func:`add_element_matrices` (into ``data``, or stored in ``values``:
    scatter_block)."""
    E = np.empty((12, 12))
    KB = np.empty((7, 12))
    MR = np.empty((12, 12))
    acc = np.empty(12)
    Be = np.zeros((12, max_ne))
    H = np.empty((12, max_ne))
    first = np.empty(3, dtype=np.int64)
    G = np.empty((7, 12))
    T = np.empty((4, 3, 3))
    for e in range(lo, hi):
        ne = element_columns(nodes, e, anc_ptr, anc_coord, S, x, Be, first)
        if ne == 12 and first[1] == 6 and _free_node_block(Be, 0, 0, 6) and _free_node_block(Be, 6, 6, 6):
            _free_pair_matrix(frames, Bl, p, chord, Kl, alpha, Ml, e, ck, cc, cm, material_only, Be, G, KB, T, MR, pos,
                              pos_ptr[e], data, values)
            continue
        sk = skip[e] if skip.size else 0
        _element_matrix(frames[e], Bl[e], p[e, 0], chord[e], Kl[e], alpha[e], Ml[e], ck, cc, cm, material_only, KB, MR, acc,
                        E, sk)
        scatter_block(E, Be, H, first, 2, ne, pos, pos_ptr[e], data, values, sk)


@njit(cache=True, inline="always")
def _free_pair_matrix(frames, Bl, p, chord, Kl, alpha, Ml, e, ck, cc, cm, material_only, Be, G, KG, T, MT, pos, off, data,
                      values):
    """B_eᵀ (ck K + cc C + cm M) B_e of element e between two free nodes, whose B_e is
    diag(I, R_a, I, R_b) (the node rotations R in Be's rotation blocks: scatter_block's fast path),
    formed in the nodes' coordinates at once and only at the entries with a position (pos >= 0: the
    lower triangle, 78 of 144, on the factors' pattern): with G = Bl B_e (7,12) the stiffness and
    damping are (ck + cc alpha) Gᵀ K_l G plus the string stiffness on the translations (as in
    _element_matrix), and with T = R~ᵀ B_e (4 blocks Rrᵀ, Rrᵀ R_a, Rrᵀ, Rrᵀ R_b) the mass is
    Tᵀ M_l T. The same matrix as _element_matrix then scatter_block to round-off (other sums). The entries
    of a row are formed three columns at a time (a node block's), the three sums side by side: each
    entry the same sum in the same order as alone, bit for bit; a 3-block without a position is skipped,
    the few entries of a formed block without one are computed and not written."""
    store = values.size > 0
    for k in range(7):  # G = Bl B_e
        for h in range(2):
            o = 6 * h
            for j in range(3):
                G[k, o + j] = Bl[e, k, o + j]
            b0, b1, b2 = Bl[e, k, o + 3], Bl[e, k, o + 4], Bl[e, k, o + 5]
            for j in range(3):
                G[k, o + 3 + j] = b0 * Be[o + 3, o + 3 + j] + b1 * Be[o + 4, o + 3 + j] + b2 * Be[o + 5, o + 3 + j]
    for i in range(7):  # KG = K_l G
        for j in range(12):
            KG[i, j] = 0.0
        for k in range(7):
            c = Kl[e, i, k]
            if c != 0.0:
                for j in range(12):
                    KG[i, j] += c * G[k, j]
    for b in range(4):  # T = R~ᵀ B_e, blockwise
        o = 3 * b  # the block's first row (and column) of B_e
        for i in range(3):
            f0, f1, f2 = frames[e, 0, i], frames[e, 1, i], frames[e, 2, i]
            for j in range(3):
                if b % 2 == 0:
                    T[b, i, j] = frames[e, j, i]
                else:
                    T[b, i, j] = f0 * Be[o, o + j] + f1 * Be[o + 1, o + j] + f2 * Be[o + 2, o + j]
    if cm != 0.0:  # MT = M_l T (column block by column block)
        for i in range(12):
            for cb in range(4):
                m0 = m1 = m2 = 0.0
                for k in range(3):
                    c = Ml[e, i, 3 * cb + k]
                    if c != 0.0:
                        m0 += c * T[cb, k, 0]
                        m1 += c * T[cb, k, 1]
                        m2 += c * T[cb, k, 2]
                MT[i, 3 * cb], MT[i, 3 * cb + 1], MT[i, 3 * cb + 2] = m0, m1, m2
    cmat = ck + cc * alpha[e]
    N = 0.0 if material_only else Kl[e, 0, 0] * p[e, 0] / chord[e] * ck
    for r in range(12):
        rb, rr = r // 3, r % 3
        o = off + 12 * r
        for cb in range(4):  # the columns of a 3-block at once: three independent sums (each as one entry's)
            c = 3 * cb
            q0, q1, q2 = pos[o + c], pos[o + c + 1], pos[o + c + 2]
            if q0 < 0 and q1 < 0 and q2 < 0:
                continue
            s0 = s1 = s2 = 0.0
            for k in range(7):
                g = G[k, r]
                s0 += g * KG[k, c]
                s1 += g * KG[k, c + 1]
                s2 += g * KG[k, c + 2]
            v0, v1, v2 = cmat * s0, cmat * s1, cmat * s2
            if rb % 2 == 0 and cb % 2 == 0:  # translations: the string stiffness N/l (I - r1 r1ᵀ), ± by node
                f = frames[e, rr, 0]
                P0 = N * ((1.0 if rr == 0 else 0.0) - f * frames[e, 0, 0])
                P1 = N * ((1.0 if rr == 1 else 0.0) - f * frames[e, 1, 0])
                P2 = N * ((1.0 if rr == 2 else 0.0) - f * frames[e, 2, 0])
                if rb == cb:
                    v0 += P0
                    v1 += P1
                    v2 += P2
                else:
                    v0 += -P0
                    v1 += -P1
                    v2 += -P2
            if cm != 0.0:
                i0 = 3 * rb
                t0, t1, t2 = T[rb, 0, rr], T[rb, 1, rr], T[rb, 2, rr]
                v0 += cm * (t0 * MT[i0, c] + t1 * MT[i0 + 1, c] + t2 * MT[i0 + 2, c])
                v1 += cm * (t0 * MT[i0, c + 1] + t1 * MT[i0 + 1, c + 1] + t2 * MT[i0 + 2, c + 1])
                v2 += cm * (t0 * MT[i0, c + 2] + t1 * MT[i0 + 1, c + 2] + t2 * MT[i0 + 2, c + 2])
            if store:
                if q0 >= 0:
                    values[o + c] = v0
                if q1 >= 0:
                    values[o + c + 1] = v1
                if q2 >= 0:
                    values[o + c + 2] = v2
            else:
                if q0 >= 0:
                    data[q0] += v0
                if q1 >= 0:
                    data[q1] += v1
                if q2 >= 0:
                    data[q2] += v2
