"""Bushing: a 6x6 linear spring–damper between two node frames (an elastic cut joint).

The bushing frame (point P, axes E, given globally in the assembly configuration) is
attached to node a (offset s_a, axes E_a in a's axes) and to node b (s_b, E_b). In the current
configuration A = R_a E_a at p_a = x_a + R_a s_a and B = R_b E_b at p_b. Deformations:

    delta = A^T (p_b - p_a)                       translations, bushing axes           (1)
    phi   = log(A^T B)                            rotations, all three constrained      (2a)
    phi   = A^T (a_k x b_k)                       rotation about axis k free (revolute) (2b)
    phi   = 0                                     all rotations free (spherical)        (2c)

Potential V = 1/2 d^T K d with d = (delta, phi); dissipation force C d'. With G = dd/dX the
exact derivative with respect to the node motions X = (x_a, theta_a, x_b, theta_b) (global
virtual rotations), the node wrenches are -G^T (K d + C d') — conservative for any K — and
the tangent used in Newton is G^T K G, G^T C G (material part; the geometric part of a stiff
bushing is negligible and is dropped to keep the iteration matrix positive definite).
"""

from __future__ import annotations

import numpy as np

from flexmb.rotations import cross, jl_inv, logm, skew

__all__ = ["deformation", "forces"]

FULL, FREE_X, FREE_Y, FREE_Z, SPHERICAL = -1, 0, 1, 2, 3


def deformation(xa, Ra, xb, Rb, sa, Ea, sb, Eb, mode):
    """Deformations d (n,6) by eq. (1)–(2) and their derivative G (n,6,12)."""
    n = xa.shape[0]
    A = Ra @ Ea
    B = Rb @ Eb
    ra = np.einsum("nij,nj->ni", Ra, sa)
    rb = np.einsum("nij,nj->ni", Rb, sb)
    r = xb + rb - xa - ra
    At = np.swapaxes(A, 1, 2)
    d = np.zeros((n, 6))
    d[:, :3] = np.einsum("nij,nj->ni", At, r)
    G = np.zeros((n, 6, 12))
    G[:, :3, 0:3] = -At
    G[:, :3, 3:6] = At @ skew(r + ra)
    G[:, :3, 6:9] = At
    G[:, :3, 9:12] = -At @ skew(rb)
    full = mode == FULL
    if np.any(full):
        rel = At[full] @ B[full]
        phi = logm(rel)
        J = jl_inv(phi) @ At[full]
        d[full, 3:] = phi
        G[full, 3:, 3:6] = -J
        G[full, 3:, 9:12] = J
    axis = (mode >= 0) & (mode <= 2)
    if np.any(axis):
        k = mode[axis]
        idx = np.arange(k.size)
        ak = A[axis][idx, :, k]
        bk = B[axis][idx, :, k]
        w = cross(ak, bk)
        At_ = At[axis]
        d[axis, 3:] = np.einsum("nij,nj->ni", At_, w)
        G[axis, 3:, 3:6] = At_ @ (skew(bk) @ skew(ak) + skew(w))
        G[axis, 3:, 9:12] = -At_ @ (skew(ak) @ skew(bk))
    return d, G


def forces(xa, Ra, xb, Rb, Va, Vb, sa, Ea, sb, Eb, mode, K, C):
    """Node wrenches on a and b (n,6 each), tangents G^T K G and G^T C G (n,12,12), strain
    energy (n,) and dissipated power (n,)."""
    d, G = deformation(xa, Ra, xb, Rb, sa, Ea, sb, Eb, mode)
    V = np.concatenate([Va, Vb], axis=1)
    ddot = np.einsum("nij,nj->ni", G, V)
    fk = np.einsum("nij,nj->ni", K, d)
    fc = np.einsum("nij,nj->ni", C, ddot)
    gen = -np.einsum("nji,nj->ni", G, fk + fc)
    Gt = np.swapaxes(G, 1, 2)
    energy = 0.5 * np.einsum("ni,ni->n", d, fk)
    power = np.einsum("ni,ni->n", ddot, fc)
    return gen[:, :6], gen[:, 6:], Gt @ K @ G, Gt @ C @ G, energy, power
