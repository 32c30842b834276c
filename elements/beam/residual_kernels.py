"""Compiled (numba) residual pass of the co-rotational beam (re-exported by
:mod:`flexmb.elements.beam.kernels`): the co-rotated frame and local deformations of each element
(_corotated, eq. 1–4 of :mod:`flexmb.elements.beam`), elastic and damping forces, the
consistent-mass inertia forces (eq. 5–6) and the weight (eq. 7), summed into the nodes
(``residual``); the mass forces of the node accelerations (``mass_forces``, eq. 5) and both in one
pass (``residual_and_mass_forces``). Elements on several threads as described in
elements/beam/kernels.py: one contiguous slice per thread, each element's node forces in a row of
their own, added to the nodes afterwards element after element (the one-thread sums bit for bit).
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from flexmb.rotations import jl_inv_into, logm_into

__all__ = ["residual", "residual_and_mass_forces", "mass_forces", "mass_pattern"]


@njit(cache=True, inline="always")
def _node_pair(v, ia, ib, out):
    """out (12) = (v[ia], v[ib]): the rows (6 each) of the element's two nodes ia, ib in ``v`` (N, 6) (node
    velocities or accelerations), copied in place (no views)."""
    for i in range(6):
        out[i], out[6 + i] = v[ia, i], v[ib, i]


@njit(cache=True, inline="always")
def _corotated(x, R, beam, e, Rr, p, Bl, k, work):
    """Co-rotated frame Rr[k] (3,3), local deformations p[k] (7), Bl[k] (7,12) and Wr (3,12)
    (eq. 1–4) of element e of ``beam`` (BeamArrays) at node positions x and orientations R; returns
    the current chord length. ``work`` = (Wr (3,12), T (2,3,3), A, J (3,3), th (3)): work arrays. The
    axes r1, r2, r3 and the mean section axis q are kept in
    scalars, and every array is indexed in place (no views: no reference counting per element);
    each value is the same expression as the 3-vector formulas."""
    ia, ib, C1, C2, L0 = beam.a[e], beam.b[e], beam.C1, beam.C2, beam.L0[e]
    Wr, T, A, J, th = work
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
def residual(beam, motion, g, load_factor, bias, out, threads=1):
    """Adds every beam's (``beam``: BeamArrays, at the node ``motion``: NodeMotion) inertia (eq. 6, with M zeta),
    minus its elastic, damping (Zahariev eq. 13) and weight (eq. 7) forces, to the node wrenches ``bias`` (N,6).
    Stores in ``out`` (BeamResults) the co-rotated frames (n,3,3), local forces K_l p (n,7) and per element (n,4):
    strain energy, dissipated power, kinetic energy, weight potential; and what the element matrices need at this
    state (eq. 1–4): local deformations p (n,7), Bl (n,7,12) and the chord length l (n) (add_element_matrices).
    (beam.Mnz, beam.nz_r, beam.nz_c): the local masses' values (n, nnz) at their shared nonzero pattern
    (mass_pattern).

    The inertia terms are formed in the co-rotated frame (v_l = R~^T V, spin W_l = W_r V):
    R~ [W_l x P_l + M_l (zeta_l - W_l x v_l) - (w_l x P_l at the rotations)] - W_r^T sum P_l x v_l,
    which is eq. (6) plus M zeta rotated into the frame (the cross products are frame-invariant).

    Every value is the same sum in the same order as the plain dense loops; loops run with the
    output entries innermost where that vectorises, products with a zero entry of K_l are skipped
    when that cannot change a bit (_local_stiffness_times), and the frame, p and Bl are written
    straight into the outputs. Each element's node forces are added to ``bias`` after all of
    them are formed, element after element (on several threads too: module docstring)."""
    none = np.empty((0, 6))
    residual_and_mass_forces(beam, motion, g, load_factor, bias, none, none, out, threads)


@njit(cache=True)
def residual_and_mass_forces(beam, motion, g, load_factor, bias, acc, mf, out, threads=1):
    """:func:`residual` and, in the same pass over the elements, :func:`mass_forces` of the node
    accelerations ``acc`` (N,6) added to ``mf`` (N,6) (acc of 0 rows: residual only): each element's
    frame and local mass are read once. The values are those of the two separate passes bit for
    bit (each sum the same products in the same order)."""
    n = beam.a.size
    F = np.empty((n, 12))
    Fm = np.empty((n if acc.shape[0] else 0, 12))
    if threads > 1:
        _residual_threads(beam, motion, g, load_factor, F, out, acc, Fm, threads)
    else:
        _residual_range(0, n, beam, motion, g, load_factor, F, out, acc, Fm)
    _add_node_pairs(beam.a, beam.b, F, bias)
    if acc.shape[0]:
        _add_node_pairs(beam.a, beam.b, Fm, mf)


@njit(cache=True, parallel=True)
def _residual_threads(beam, motion, g, load_factor, F, out, acc, Fm, nt):
    """_residual_range over the elements in ``nt`` contiguous slices, one per thread (module docstring)."""
    n = beam.a.size
    for c in prange(nt):
        _residual_range(c * n // nt, (c + 1) * n // nt, beam, motion, g, load_factor, F, out, acc, Fm)


@njit(cache=True)
def _add_node_pairs(a, b, F, out):
    """out[a[e]] += F[e, :6] and out[b[e]] += F[e, 6:], element after element (the order of the sums)."""
    for e in range(a.size):
        ia, ib = a[e], b[e]
        for i in range(6):
            out[ia, i] += F[e, i]
            out[ib, i] += F[e, 6 + i]


@njit(cache=True, inline="always")
def _elastic_damping_forces(Bl, Kl, e, ae, Ve, pe, pdot, fl, s1, h, f, fl_out):
    """Element e's elastic and damping node forces f = Bl^T (K_l p + alpha K_l Bl V) (12, Zahariev
    eq. 13; Bl = Bl[e], K_l = Kl[e], alpha = ``ae``, p = ``pe``, V = ``Ve``), its local forces
    K_l p into fl_out[e]; returns its strain energy and dissipated power. ``pdot`` (Bl V), ``fl``,
    ``s1`` (K_l pdot), ``h`` (7 each): work arrays."""
    q0 = q1 = q2 = q3 = q4 = q5 = q6 = 0.0  # pdot = Bl Ve: seven independent sums, j ascending
    for j in range(12):
        vj = Ve[j]
        q0 += Bl[e, 0, j] * vj
        q1 += Bl[e, 1, j] * vj
        q2 += Bl[e, 2, j] * vj
        q3 += Bl[e, 3, j] * vj
        q4 += Bl[e, 4, j] * vj
        q5 += Bl[e, 5, j] * vj
        q6 += Bl[e, 6, j] * vj
    pdot[0], pdot[1], pdot[2], pdot[3], pdot[4], pdot[5], pdot[6] = q0, q1, q2, q3, q4, q5, q6
    _local_stiffness_times(Kl, e, pe, pdot, fl, s1)
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
            f[j] += Bl[e, i, j] * hi
    return U, Pd


@njit(cache=True, inline="always")
def _local_velocities(frames, e, Wr, Ve, zeta, ia, ib, vl, zl, Om):
    """Element e's node velocities in its co-rotated frame Rr = frames[e], v_l = Rr^T V blockwise
    (``vl``, 12), its spin W_l = Wr V (``Om``, 3) and ``zl`` = zeta_l - W_l x v_l (12, zeta_l: the
    nodes' ``zeta`` rows ia, ib in the frame), for the inertia forces (eq. 6)."""
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


@njit(cache=True, inline="always")
def _local_mass_pass(Mnz, e, nz_r, nz_c, vl, zl, al, Pl, fl_, ml):
    """Pl = M_l vl, fl_ = M_l zl and ml = M_l al (12 each) in one pass over the mass pattern (M_l's
    values: Mnz[e] at (nz_r, nz_c), mass_pattern; eq. 5-6): row by row, each row's three sums in
    registers, the products in order. Pl and fl_ are zeroed first; ml's rows outside the pattern
    are left as they were."""
    for i in range(12):
        Pl[i] = 0.0
        fl_[i] = 0.0
    t, nt = 0, nz_r.size
    while t < nt:
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


@njit(cache=True, inline="always")
def _inertia_forces(frames, e, Wr, vl, Pl, Om, fl_, t1, f):
    """Adds element e's inertia forces (eq. 6, with M zeta: residual's docstring) to its node forces
    ``f`` (12): R~ [W_l x P_l + fl_ - (w_l x P_l at the rotations)] - Wr^T sum P_l x v_l, with
    P_l = ``Pl``, v_l = ``vl``, W_l = ``Om``, fl_ = M_l (zeta_l - W_l x v_l) on entry (overwritten);
    returns the kinetic energy. ``t1`` (12): work array."""
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
    return T


@njit(cache=True, inline="always")
def _weight_forces(frames, e, Wr, Bl, x, ia, ib, g, lm, L0e, pe, f):
    """Subtracts element e's weight (eq. 7; gravity ``g``, mass times load factor ``lm``, rest
    length ``L0e``, local deformations ``pe``) from its node forces ``f`` (12) (the bias holds
    inertial minus applied forces); returns its weight potential. The section offset c, the weight
    mg and Rr^T (c x mg) are kept in scalars (the same values as 3-vectors)."""
    lf = lm / 12.0 * L0e
    dl1 = L0e / 12.0 * (pe[3] - pe[6])
    dl2 = L0e / 12.0 * (pe[5] - pe[2])
    c0 = frames[e, 0, 1] * dl1 + frames[e, 0, 2] * dl2
    c1 = frames[e, 1, 1] * dl1 + frames[e, 1, 2] * dl2
    c2 = frames[e, 2, 1] * dl1 + frames[e, 2, 2] * dl2
    mg0, mg1, mg2 = lm * g[0], lm * g[1], lm * g[2]
    Wg = 0.0
    Wg -= mg0 * (0.5 * (x[ia, 0] + x[ib, 0]) + c0)
    Wg -= mg1 * (0.5 * (x[ia, 1] + x[ib, 1]) + c1)
    Wg -= mg2 * (0.5 * (x[ia, 2] + x[ib, 2]) + c2)
    g0 = c1 * mg2 - c2 * mg1
    g1 = c2 * mg0 - c0 * mg2
    g2 = c0 * mg1 - c1 * mg0
    tmp0 = frames[e, 0, 0] * g0 + frames[e, 1, 0] * g1 + frames[e, 2, 0] * g2
    tmp1 = frames[e, 0, 1] * g0 + frames[e, 1, 1] * g1 + frames[e, 2, 1] * g2
    tmp2 = frames[e, 0, 2] * g0 + frames[e, 1, 2] * g1 + frames[e, 2, 2] * g2
    gy = lf * (frames[e, 0, 1] * g[0] + frames[e, 1, 1] * g[1] + frames[e, 2, 1] * g[2])
    gz = lf * (frames[e, 0, 2] * g[0] + frames[e, 1, 2] * g[1] + frames[e, 2, 2] * g[2])
    for j in range(12):
        fg = Wr[0, j] * tmp0 + Wr[1, j] * tmp1 + Wr[2, j] * tmp2
        fg += gy * (Bl[e, 3, j] - Bl[e, 6, j]) + gz * (Bl[e, 5, j] - Bl[e, 2, j])
        f[j] -= fg
    f[0] -= 0.5 * mg0
    f[6] -= 0.5 * mg0
    f[1] -= 0.5 * mg1
    f[7] -= 0.5 * mg1
    f[2] -= 0.5 * mg2
    f[8] -= 0.5 * mg2
    return Wg


@njit(cache=True)
def _residual_range(lo, hi, beam, motion, g, load_factor, F, out, acc, Fm):
    """Elements lo:hi of :func:`residual_and_mass_forces`: each one's node forces (12) into F[e], and
    with ``acc`` its mass forces into Fm[e], instead of the sums. The structures' fields are read
    once here; the per-element pieces (inlined) take plain arrays and this call's work arrays."""
    a, b, _, _, L0, Kl, alpha, _, nz_r, nz_c, mass, Mnz = beam
    x, R, V, zeta = motion
    frames, fl_out, energies, p_out, Bl_out, chord = out
    with_acc = acc.shape[0] > 0
    Ae = np.empty(12)
    al = np.zeros(12)
    ml = np.empty(12)
    Wr = np.empty((3, 12))
    Tw = np.empty((2, 3, 3))
    A = np.empty((3, 3))
    J = np.empty((3, 3))
    th = np.empty(3)
    work = (Wr, Tw, A, J, th)  # _corotated's
    pe, fl, pdot, s1, h = np.empty(7), np.empty(7), np.empty(7), np.empty(7), np.empty(7)  # 7: deformations, forces
    Ve, vl, zl, Pl = np.empty(12), np.empty(12), np.empty(12), np.empty(12)  # 12: the nodes' velocities,
    t1, fl_, f = np.empty(12), np.empty(12), np.empty(12)  # accelerations and forces
    Om = np.empty(3)
    for e in range(lo, hi):
        ia, ib = a[e], b[e]
        _node_pair(V, ia, ib, Ve)
        chord[e] = _corotated(x, R, beam, e, frames, p_out, Bl_out, e, work)
        for i in range(7):
            pe[i] = p_out[e, i]
        U, Pd = _elastic_damping_forces(Bl_out, Kl, e, alpha[e], Ve, pe, pdot, fl, s1, h, f, fl_out)
        _local_velocities(frames, e, Wr, Ve, zeta, ia, ib, vl, zl, Om)  # inertia in the co-rotated frame
        if with_acc:  # the mass forces' local accelerations (mass_forces: Rr^T blockwise)
            _node_pair(acc, ia, ib, Ae)
            _rot_blocks(frames, e, Ae, al, True)
            for i in range(12):
                ml[i] = 0.0
        _local_mass_pass(Mnz, e, nz_r, nz_c, vl, zl, al, Pl, fl_, ml)
        if with_acc:
            _rot_blocks(frames, e, ml, Fm[e], False)
        T = _inertia_forces(frames, e, Wr, vl, Pl, Om, fl_, t1, f)
        Wg = _weight_forces(frames, e, Wr, Bl_out, x, ia, ib, g, load_factor * mass[e], L0[e], pe, f)
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
        _node_pair(acc, a[e], b[e], Ae)
        _rot_blocks(frames, e, Ae, t1, True)
        _local_mass_times(Mnz, e, nz_r, nz_c, t1, t2)
        _rot_blocks(frames, e, t2, F[e], False)
