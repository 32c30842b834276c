"""Compiled kernels of the cut families (bushings and rigid cuts): the deformation of a cut frame and
its derivative, eq. (1)-(2) of elements/bushing.py, and the bushings' forces, energies and
iteration-matrix blocks. The families' Python methods and the compiled Newton steps
(flexmb/solvers/element_step.py) call the same kernels, so a step is the same bit for bit on either
path.

Conventions: node arrays x (N, 3), R (N, 3, 3), V (N, 6) without a ground row; an end index equal
to N is ground (the origin, identity axes, at rest). Per element e: d[e] (6) the deformation
(translations, rotations), G[e] (6, 12) = ∂d/∂X over (x_a, θ_a, x_b, θ_b) (global virtual rotations),
A[e] (3, 3) the cut axes R_a E_a (columns, global).

The bushings' kernel takes its arrays grouped as the family groups them (as the beams' kernels do,
elements/beam/kernel_data.py): the model's arrays of the bushings in one :class:`BushingArrays`, what
it writes per element in one :class:`BushingResults`; one cut's deformation, eq. (1)-(2), is one
:class:`CutDeformation`. The kernels read these by position, so the compiled steps pass their own
prepared tuples of the same fields in the same order (flexmb/solvers/element_step.py).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from flexmb.rotations import jl_inv_into, logm_into

__all__ = ["WORK", "CUT_FRAMES", "cut_deformations", "deformations_at", "bushing_forces", "bushing_blocks", "add_generalized",
           "FULL", "SPHERICAL", "BushingArrays", "BushingResults", "CutDeformation", "cut_wrenches_into"]

WORK = 12  # the scratch matrices of _deformation
FULL, SPHERICAL = -1, 3  # free-rotation modes: none (a weld), all (a spherical joint); 0, 1, 2: about axis x, y, z


#: The cut frames' arrays (n cuts, elements/cut_family.py's CutData and the family's prepared end indices): the
#: first fields of the cut families' kernel arrays, BushingArrays and the rigid cuts' RigidCutArrays
#: (elements/rigid_cut_kernels.py), declared once here.
CUT_FRAMES = (
    ("ia", np.ndarray),  # end a's node (int64; N = ground)                                     (n)
    ("ib", np.ndarray),  # end b's node (int64; N = ground)                                     (n)
    ("sa", np.ndarray),  # the cut point in node a's axes                                      (n x 3)
    ("Ea", np.ndarray),  # the cut axes in node a's axes (columns)                             (n x 3 x 3)
    ("sb", np.ndarray),  # the cut point in node b's axes                                      (n x 3)
    ("Eb", np.ndarray),  # the cut axes in node b's axes (columns)                             (n x 3 x 3)
    ("mode", np.ndarray),  # free-rotation mode (int64): FULL, SPHERICAL or an axis 0, 1, 2      (n)
)


class BushingArrays(NamedTuple("BushingFields", [*CUT_FRAMES,
                                                  ("K", np.ndarray),  # stiffness on the deformation d  (n x 6 x 6)
                                                  ("C", np.ndarray)])):  # damping on its rate d'        (n x 6 x 6)
    """The bushings' model arrays (n elements) as bushing_forces reads them (elements/bushing.py's
    BushingData and the family's prepared end indices): the cut frames (CUT_FRAMES), then the stiffness K
    on the deformation d and the damping C on its rate d' (n x 6 x 6 each)."""

    __slots__ = ()


class BushingResults(NamedTuple):
    """What bushing_forces writes per element."""

    d: np.ndarray  # the deformation, eq. (1)-(2)                                         (n x 6)
    G: np.ndarray  # its derivative ∂d/∂X over (x_a, θ_a, x_b, θ_b)                        (n x 6 x 12)
    A: np.ndarray  # the cut axes R_a E_a (columns, global)                               (n x 3 x 3)
    f: np.ndarray  # the generalized forces K d + C d'                                    (n x 6)
    energy: np.ndarray  # the strain energy ½ dᵀ K d                                       (n)
    power: np.ndarray  # the dissipated power d'ᵀ C d'                                     (n)


class CutDeformation(NamedTuple):
    """One cut's deformation, eq. (1)-(2), as _deformation writes it."""

    d: np.ndarray  # the deformation (translations, rotations)                            (6)
    G: np.ndarray  # its derivative over (x_a, θ_a, x_b, θ_b)                              (6 x 12)
    A: np.ndarray  # the cut axes                                                          (3 x 3)


@njit(cache=True, inline="always")
def _pose(x, R, i, N, xo, Ro):
    """Node i's position and axes into xo (3), Ro (3, 3); ground (i == N): origin, identity."""
    if i == N:
        for r in range(3):
            xo[r] = 0.0
            for c in range(3):
                Ro[r, c] = 1.0 if r == c else 0.0
    else:
        for r in range(3):
            xo[r] = x[i, r]
            for c in range(3):
                Ro[r, c] = R[i, r, c]


@njit(cache=True, inline="always")
def _skew_mul_left(At, v, out, row0, col0):
    """out[row0:row0+3, col0:col0+3] = At @ skew(v)."""
    for r in range(3):
        a0, a1, a2 = At[r, 0], At[r, 1], At[r, 2]
        # (At skew(v))[r, c] = sum_k At[r, k] skew(v)[k, c]
        out[row0 + r, col0 + 0] = a1 * v[2] - a2 * v[1]
        out[row0 + r, col0 + 1] = a2 * v[0] - a0 * v[2]
        out[row0 + r, col0 + 2] = a0 * v[1] - a1 * v[0]


@njit(cache=True, inline="always")
def _skew(a, out):
    """out (3, 3) = skew(a): skew(a) v = a × v."""
    out[0, 0], out[0, 1], out[0, 2] = 0.0, -a[2], a[1]
    out[1, 0], out[1, 1], out[1, 2] = a[2], 0.0, -a[0]
    out[2, 0], out[2, 1], out[2, 2] = -a[1], a[0], 0.0


@njit(cache=True)
def _tilt(w, c, other, spare):
    """Eq. (2b)'s factors g = θ/s and h = (s - θ c)/s³ (s = |w|, θ = atan2(s, c)), by their series for
    small θ, h bounded within 1e-8 of opposite axes; ``spare`` = π ``other`` where the axes are exactly
    opposite (the tilt has no direction there), else 0 (elements/bushing.py, _tilt_factors)."""
    s = np.sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2])
    th = np.arctan2(s, c)
    if th < 1e-3:
        g = 1.0 + th * th / 6.0
        h = 1.0 / 3.0 + 2.0 * th * th / 15.0
    else:
        ss = max(s, 1e-300)
        g = th / ss
        sh = max(ss, 1e-8)
        h = (sh - th * c) / (sh * sh * sh)
    if s == 0.0 and c < 0.0:
        for i in range(3):
            spare[i] = np.pi * other[i]
    else:
        for i in range(3):
            spare[i] = 0.0
    return g, h


@njit(cache=True)
def _deformation(xa, Ra, xb, Rb, sa, Ea, sb, Eb, mode, out, work):
    """Eq. (1)-(2) of one cut into ``out`` = (d (6), G (6, 12), A (3, 3)), a CutDeformation or a tuple
    of those arrays; ``work`` (WORK, 3, 3) scratch (its last four hold the 3-vectors: no allocation per
    cut)."""
    d, G, A = out[0], out[1], out[2]
    B, At, M1, M2, J, Sa, Sb, Sw = work[0], work[1], work[2], work[3], work[4], work[5], work[6], work[7]
    ra, rb, r = work[8, 0], work[8, 1], work[8, 2]
    v, phi, ak = work[9, 0], work[9, 1], work[9, 2]
    bk, w, other = work[10, 0], work[10, 1], work[10, 2]
    spare = work[11, 0]
    for i in range(3):
        for j in range(3):
            A[i, j] = Ra[i, 0] * Ea[0, j] + Ra[i, 1] * Ea[1, j] + Ra[i, 2] * Ea[2, j]
            B[i, j] = Rb[i, 0] * Eb[0, j] + Rb[i, 1] * Eb[1, j] + Rb[i, 2] * Eb[2, j]
    for i in range(3):
        ra[i] = Ra[i, 0] * sa[0] + Ra[i, 1] * sa[1] + Ra[i, 2] * sa[2]
        rb[i] = Rb[i, 0] * sb[0] + Rb[i, 1] * sb[1] + Rb[i, 2] * sb[2]
    for i in range(3):
        r[i] = xb[i] + rb[i] - xa[i] - ra[i]
    for i in range(3):
        for j in range(3):
            At[i, j] = A[j, i]
    for i in range(6):
        d[i] = 0.0
        for j in range(12):
            G[i, j] = 0.0
    for i in range(3):
        d[i] = At[i, 0] * r[0] + At[i, 1] * r[1] + At[i, 2] * r[2]
        for j in range(3):
            G[i, j] = -At[i, j]
            G[i, 6 + j] = At[i, j]
    for i in range(3):
        v[i] = r[i] + ra[i]
    _skew_mul_left(At, v, G, 0, 3)
    _skew_mul_left(At, rb, G, 0, 9)
    for i in range(3):
        for j in range(3):
            G[i, 9 + j] = -G[i, 9 + j]
    if mode == FULL:
        for i in range(3):
            for j in range(3):
                M1[i, j] = At[i, 0] * B[0, j] + At[i, 1] * B[1, j] + At[i, 2] * B[2, j]
        logm_into(M1, phi)
        jl_inv_into(phi, M2)
        for i in range(3):
            d[3 + i] = phi[i]
            for j in range(3):
                J[i, j] = M2[i, 0] * At[0, j] + M2[i, 1] * At[1, j] + M2[i, 2] * At[2, j]
                G[3 + i, 3 + j] = -J[i, j]
                G[3 + i, 9 + j] = J[i, j]
    elif 0 <= mode <= 2:
        k = mode
        for i in range(3):
            ak[i] = A[i, k]
            bk[i] = B[i, k]
            other[i] = A[i, (k + 1) % 3]
        w[0] = ak[1] * bk[2] - ak[2] * bk[1]
        w[1] = ak[2] * bk[0] - ak[0] * bk[2]
        w[2] = ak[0] * bk[1] - ak[1] * bk[0]
        c = ak[0] * bk[0] + ak[1] * bk[1] + ak[2] * bk[2]
        g, h = _tilt(w, c, other, spare)
        for i in range(3):
            v[i] = g * w[i] + spare[i]
        for i in range(3):
            d[3 + i] = At[i, 0] * v[0] + At[i, 1] * v[1] + At[i, 2] * v[2]
        # skew(bk) skew(ak) + skew(w) and skew(ak) skew(bk); ww = h w w^T
        _skew(ak, Sa)
        _skew(bk, Sb)
        _skew(w, Sw)
        for i in range(3):
            for j in range(3):
                ba = Sb[i, 0] * Sa[0, j] + Sb[i, 1] * Sa[1, j] + Sb[i, 2] * Sa[2, j]
                ab = Sa[i, 0] * Sb[0, j] + Sa[i, 1] * Sb[1, j] + Sa[i, 2] * Sb[2, j]
                ww = h * w[i] * w[j]
                M1[i, j] = g * (ba + Sw[i, j]) - ww
                M2[i, j] = ww - g * ab
        for i in range(3):
            for j in range(3):
                G[3 + i, 3 + j] = At[i, 0] * M1[0, j] + At[i, 1] * M1[1, j] + At[i, 2] * M1[2, j]
                G[3 + i, 9 + j] = At[i, 0] * M2[0, j] + At[i, 1] * M2[1, j] + At[i, 2] * M2[2, j]


@njit(cache=True)
def cut_deformations(x, R, ia, ib, sa, Ea, sb, Eb, mode, d, G, A):
    """Eq. (1)-(2) of every cut (ends ia, ib; N = ground) at the node poses x, R into d (n, 6),
    G (n, 6, 12) and the cut axes A (n, 3, 3)."""
    N = x.shape[0]
    xa, xb = np.empty(3), np.empty(3)
    Ra, Rb = np.empty((3, 3)), np.empty((3, 3))
    work = np.empty((WORK, 3, 3))
    for e in range(ia.size):
        _pose(x, R, ia[e], N, xa, Ra)
        _pose(x, R, ib[e], N, xb, Rb)
        _deformation(xa, Ra, xb, Rb, sa[e], Ea[e], sb[e], Eb[e], mode[e], (d[e], G[e], A[e]), work)


@njit(cache=True)
def deformations_at(xa, Ra, xb, Rb, sa, Ea, sb, Eb, mode, d, G, A):
    """Eq. (1)-(2) of every cut at its ends' poses xa, Ra, xb, Rb (n, 3), (n, 3, 3) into d, G, A."""
    work = np.empty((WORK, 3, 3))
    for e in range(xa.shape[0]):
        _deformation(xa[e], Ra[e], xb[e], Rb[e], sa[e], Ea[e], sb[e], Eb[e], mode[e], (d[e], G[e], A[e]), work)


@njit(cache=True)
def add_generalized(G, f, ia, ib, w, mask=None):
    """w[ia[e]] += (Gᵀ f)[:6], w[ib[e]] += (Gᵀ f)[6:] for every element in order (the node wrenches of
    generalized forces f (n, 6) on the deformation, residual sense); w (N + 1, 6), row N ground. With
    ``mask`` (n, 6) (bool), Gᵀ Pᵀ f: the rows it holds only (the rigid cuts' closure rows,
    elements/rigid_cut_kernels.py); None (numba compiles the test away): every row."""
    for e in range(ia.size):
        for j in range(12):
            s = 0.0
            for i in range(6):
                if mask is None or mask[e, i]:
                    s += G[e, i, j] * f[e, i]
            if j < 6:
                w[ia[e], j] += s
            else:
                w[ib[e], j - 6] += s


@njit(cache=True)
def bushing_forces(x, R, V, bushings, w, out):
    """The bushings ``bushings`` (a BushingArrays, or a tuple of its nine arrays in its order) at the
    node poses x, R and twists V (elements/bushing.py), into ``out`` (a BushingResults, or a tuple of its
    six arrays): deformations d, G, A (cut_deformations), the generalized forces f = K d + C d'
    (d' = G (V_a, V_b)), the strain energy ½ dᵀ K d and the dissipated power d'ᵀ C d' per element; their
    node wrenches added to w (residual sense, add_generalized)."""
    ia, ib, sa, Ea, sb, Eb, mode, K, C = bushings
    d, G, A, f, energy, power = out
    cut_deformations(x, R, ia, ib, sa, Ea, sb, Eb, mode, d, G, A)
    N = x.shape[0]
    Ve = np.empty(12)
    dd = np.empty(6)
    for e in range(ia.size):
        for j in range(6):
            Ve[j] = 0.0 if ia[e] == N else V[ia[e], j]
            Ve[6 + j] = 0.0 if ib[e] == N else V[ib[e], j]
        for i in range(6):
            s = 0.0
            for j in range(12):
                s += G[e, i, j] * Ve[j]
            dd[i] = s
        en = 0.0
        pw = 0.0
        for i in range(6):
            fk = 0.0
            fc = 0.0
            for j in range(6):
                fk += K[e, i, j] * d[e, j]
                fc += C[e, i, j] * dd[j]
            f[e, i] = fk + fc
            en += d[e, i] * fk
            pw += dd[i] * fc
        energy[e] = 0.5 * en
        power[e] = pw
    add_generalized(G, f, ia, ib, w)


@njit(cache=True)
def bushing_blocks(G, K, C, ck, cc, out):
    """out[e] = Gᵀ (ck K + cc C) G (n, 12, 12): the bushings' blocks of the iteration matrix, the
    material part (the geometric part is dropped: elements/bushing.py)."""
    H = np.empty((6, 12))
    for e in range(G.shape[0]):
        for i in range(6):
            for j in range(12):
                s = 0.0
                for k in range(6):
                    s += (ck * K[e, i, k] + cc * C[e, i, k]) * G[e, k, j]
                H[i, j] = s
        for i in range(12):
            for j in range(12):
                s = 0.0
                for k in range(6):
                    s += G[e, k, i] * H[k, j]
                out[e, i, j] = s


@njit(cache=True)
def cut_wrenches_into(G, f, xb, Rb, sb, A, loc, glob) -> None:
    """Eq. (3) of elements/bushing.py per cut e: the wrench on end b, w_b = -G_b[e]ᵀ f[e] (G_b the columns
    of end b), as force and moment at the cut point p_b = x_b + R_b s_b (``glob`` (n, 6), global axes) and
    in the cut axes A[e] (``loc``). ``xb`` is not read (the moment is taken about p_b, offset R_b s_b from
    the node): kept for the signature of elements/cut_family.py's cut_wrenches."""
    wb = np.empty(6)
    rb = np.empty(3)
    for e in range(G.shape[0]):
        for i in range(6):
            s = 0.0
            for j in range(6):
                s += G[e, j, 6 + i] * f[e, j]
            wb[i] = -s
        for i in range(3):
            rb[i] = Rb[e, i, 0] * sb[e, 0] + Rb[e, i, 1] * sb[e, 1] + Rb[e, i, 2] * sb[e, 2]
        glob[e, 0], glob[e, 1], glob[e, 2] = wb[0], wb[1], wb[2]
        glob[e, 3] = wb[3] - (rb[1] * wb[2] - rb[2] * wb[1])
        glob[e, 4] = wb[4] - (rb[2] * wb[0] - rb[0] * wb[2])
        glob[e, 5] = wb[5] - (rb[0] * wb[1] - rb[1] * wb[0])
        for h in range(2):
            for i in range(3):
                loc[e, 3 * h + i] = (A[e, 0, i] * glob[e, 3 * h] + A[e, 1, i] * glob[e, 3 * h + 1]
                                     + A[e, 2, i] * glob[e, 3 * h + 2])
