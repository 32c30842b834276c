"""Compiled (numba) element matrices of the co-rotational beam for the iteration matrix
(re-exported by :mod:`flexmb.elements.beam.kernels`): ck K + cc C + cm M per element, with K the
material stiffness plus the string (axial force) geometric stiffness, C = alpha times the material
stiffness and M the consistent mass in the co-rotated frame (``element_matrices``), and their
products B_eᵀ (...) B_e scattered into the iteration matrix's values (``add_element_matrices``,
the pattern maps of flexmb/engine/iteration_matrix.py), on one thread or on several as described
in elements/beam/kernels.py (the one-thread sums bit for bit).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from flexmb.elements.beam.residual_kernels import _corotated
from flexmb.engine.block_scatter import _free_node_block, add_values, element_columns, scatter_block

__all__ = ["element_matrices", "add_element_matrices"]


@njit(cache=True, inline="always")
def _formed(i, h, skip):
    """Whether row i of an element matrix is formed in node h's columns (6h:6h + 6): not where
    ``skip`` (ElementScatter.skip, m = 2) has the bit of the block (node of row i, h)."""
    return not (skip >> (2 * (i // 6) + h)) & 1


@njit(cache=True)
def _element_matrix(Rr, Bl, p0, l, beam, e, weights, work, out, skip=0):
    """out (12,12) = ck K + cc C + cm M (``weights``: MatrixWeights) of element e of ``beam``
    (BeamArrays) at its co-rotated frame Rr, Bl (7,12), axial strain p0 and chord l
    (element_matrices); ``work`` = (KB (7,12), MR (12,12), acc (12)): work arrays. Each entry is the sum of its
    products in the order of the dense loops (k ascending); the loops run with the entries
    innermost so that they vectorise without changing any sum, and products with a zero factor of
    K_l, Bl or M_l are skipped (a zero product added to a sum started at +0 changes nothing): the
    values are those of the dense products bit for bit. ``skip`` (:func:`_formed`): node blocks
    not formed (their entries are left as they were, but for the string stiffness's)."""
    Kl, alpha, Ml = beam.Kl[e], beam.alpha[e], beam.Ml[e]
    ck, cc, cm, material_only = weights
    KB, MR, acc = work
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
def element_matrices(beam, x, R, weights, out):
    """out (n,12,12) = ck K + cc C + cm M (``weights``: MatrixWeights) per element of ``beam``
    (BeamArrays) at node positions x and orientations R: K = Bl^T K_l Bl plus the string stiffness
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
    work, mwork = (Wr, T, A, J, th), (KB, MR, acc)
    for e in range(beam.a.size):
        l = _corotated(x, R, beam, e, Rr, p, Bl, 0, work)
        _element_matrix(Rr[0], Bl[0], p[0, 0], l, beam, e, weights, mwork, out[e])


@njit(cache=True)
def add_element_matrices(res, beam, weights, maps, S, x, data, threads=1, plan=None):
    """data[pos] += B_eᵀ (ck K + cc C + cm M) B_e (``weights``: MatrixWeights) for every element of
    ``beam`` (BeamArrays): each element's matrix (element_matrices, from the frames, Bl, p and chord
    of the residual at this state, ``res``: BeamResults) built in a
    (12,12) buffer and scattered at once into the iteration matrix's values ``data``
    (flexmb.engine.block_scatter: element_columns, scatter_block; ``maps``: ScatterMaps, ElementScatter's
    arrays, and the kinematics' S and x).
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
    n = res[0].shape[0]
    pos_ptr, pos = maps.pos_ptr, maps.pos
    if threads > 1 and plan is not None:
        doff, dmap = plan
        values = np.empty(pos.size)  # only the seam elements' entries are written
        _element_matrices_threads(res, beam, weights, maps, S, x, data, values, doff, dmap, threads)
        for e in range(n):  # the seams' stored products, in element order
            if doff[e] >= 0:
                o, d = pos_ptr[e], doff[e]
                for j in range(pos_ptr[e + 1] - o):
                    if dmap[d + j] >= 0:
                        data[pos[o + j]] += values[o + j]
    elif threads > 1:
        values = np.empty(pos.size)
        _element_matrices_threads(res, beam, weights, maps, S, x, data, values, np.empty(0, dtype=np.int64),
                                  np.empty(0, dtype=np.int64), threads)
        add_values(pos, values, data)
    else:
        _element_matrices_range(0, n, res, beam, weights, maps, S, x, data, np.empty(0))


@njit(cache=True, parallel=True)
def _element_matrices_threads(res, beam, weights, maps, S, x, data, values, doff, dmap, nt):
    """_element_matrices_range over ``nt`` contiguous slices of the elements, one per thread: with
    ``doff`` empty every product stored in ``values``; else (ElementScatter.thread_plan) added to
    ``data`` by the thread, but for the elements at a seam (doff[e] >= 0), whose products are
    stored at their entries in ``values`` and only those without a slot (dmap < 0) added at once."""
    n = res[0].shape[0]
    for c in prange(nt):
        lo, hi = c * n // nt, (c + 1) * n // nt
        if doff.size == 0:
            _element_matrices_range(lo, hi, res, beam, weights, maps, S, x, data, values)
        else:
            _slice_with_seams(lo, hi, res, beam, weights, maps, S, x, data, values, doff, dmap)


@njit(cache=True)
def _slice_with_seams(lo, hi, res, beam, weights, maps, S, x, data, values, doff, dmap):
    """Elements lo:hi (one thread's slice) in element order: runs of elements without a seam added
    to ``data`` (_element_matrices_range), each seam element's products stored in ``values`` and
    those without a slot in ``dmap`` then added, the others left for after the threads."""
    none = np.empty(0)
    pos_ptr, pos = maps.pos_ptr, maps.pos
    start = lo
    for e in range(lo, hi):
        if doff[e] < 0:
            continue
        if start < e:
            _element_matrices_range(start, e, res, beam, weights, maps, S, x, data, none)
        _element_matrices_range(e, e + 1, res, beam, weights, maps, S, x, data, values)
        o, d = pos_ptr[e], doff[e]
        for j in range(pos_ptr[e + 1] - o):
            q = pos[o + j]
            if q >= 0 and dmap[d + j] < 0:
                data[q] += values[o + j]
        start = e + 1
    if start < hi:
        _element_matrices_range(start, hi, res, beam, weights, maps, S, x, data, none)


@njit(cache=True)
def _element_matrices_range(lo, hi, res, beam, weights, maps, S, x, data, values):
    """Elements lo:hi of :func:`add_element_matrices` (into ``data``, or stored in ``values``:
    scatter_block)."""
    nodes, anc_ptr, anc_coord, pos_ptr, pos, max_ne, skip = maps
    frames, _, _, p, Bl, chord = res
    E = np.empty((12, 12))
    KB = np.empty((7, 12))
    MR = np.empty((12, 12))
    acc = np.empty(12)
    Be = np.zeros((12, max_ne))
    H = np.empty((12, max_ne))
    first = np.empty(3, dtype=np.int64)
    G = np.empty((7, 12))
    T = np.empty((4, 3, 3))
    mwork, pwork = (KB, MR, acc), (G, KB, T, MR)
    for e in range(lo, hi):
        ne = element_columns(nodes, e, anc_ptr, anc_coord, S, x, Be, first)
        if ne == 12 and first[1] == 6 and _free_node_block(Be, 0, 0, 6) and _free_node_block(Be, 6, 6, 6):
            _free_pair_matrix(res, beam, e, weights, Be, pwork, pos, pos_ptr[e], data, values)
            continue
        sk = skip[e] if skip.size else 0
        _element_matrix(frames[e], Bl[e], p[e, 0], chord[e], beam, e, weights, mwork, E, sk)
        scatter_block(E, Be, H, first, 2, ne, pos, pos_ptr[e], data, values, sk)


@njit(cache=True, inline="always")
def _free_pair_matrix(res, beam, e, weights, Be, work, pos, off, data, values):
    """B_eᵀ (ck K + cc C + cm M) B_e (``weights``) of element e of ``beam`` (at the residual's ``res``)
    between two free nodes, whose B_e is
    diag(I, R_a, I, R_b) (the node rotations R in Be's rotation blocks: scatter_block's fast path),
    formed in the nodes' coordinates at once and only at the entries with a position (pos >= 0: the
    lower triangle, 78 of 144, on the factors' pattern): with G = Bl B_e (7,12) the stiffness and
    damping are (ck + cc alpha) Gᵀ K_l G plus the string stiffness on the translations (as in
    _element_matrix), and with T = R~ᵀ B_e (4 blocks Rrᵀ, Rrᵀ R_a, Rrᵀ, Rrᵀ R_b) the mass is
    Tᵀ M_l T. The same matrix as _element_matrix then scatter_block to round-off (other sums). The entries
    of a row are formed three columns at a time (a node block's), the three sums side by side: each
    entry the same sum in the same order as alone, bit for bit; a 3-block without a position is skipped,
    the few entries of a formed block without one are computed and not written."""
    frames, _, _, p, Bl, chord = res
    Kl, alpha, Ml = beam.Kl, beam.alpha, beam.Ml
    ck, cc, cm, material_only = weights
    G, KG, T, MT = work  # work arrays (7,12), (7,12), (4,3,3), (12,12)
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
