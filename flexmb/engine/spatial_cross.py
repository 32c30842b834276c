"""Spatial cross products of rows of 6-vector arrays, inlined into the compiled loops of the tree
factor's position tangent (engine/tree_solver.py): motion × motion and motion ×* force
(Featherstone 2008, eq. 2.31-2.32), (v, w) and (force, moment) orderings.
"""

from __future__ import annotations

from numba import njit

__all__ = ["_mx", "_fx_add"]


@njit(cache=True, inline="always")
def _mx(A, i, B, j, C, k):
    """C[k] = A[i] × B[j], spatial motion cross product of rows (v, w) (no array views: they cost
    reference counting in compiled loops)."""
    a0, a1, a2, a3, a4, a5 = A[i, 0], A[i, 1], A[i, 2], A[i, 3], A[i, 4], A[i, 5]
    b0, b1, b2, b3, b4, b5 = B[j, 0], B[j, 1], B[j, 2], B[j, 3], B[j, 4], B[j, 5]
    C[k, 0] = a4 * b2 - a5 * b1 + a1 * b5 - a2 * b4
    C[k, 1] = a5 * b0 - a3 * b2 + a2 * b3 - a0 * b5
    C[k, 2] = a3 * b1 - a4 * b0 + a0 * b4 - a1 * b3
    C[k, 3] = a4 * b5 - a5 * b4
    C[k, 4] = a5 * b3 - a3 * b5
    C[k, 5] = a3 * b4 - a4 * b3


@njit(cache=True, inline="always")
def _fx_add(A, i, F, j, C, k):
    """C[k] += A[i] ×* F[j]: A[i] a motion (v, w), F[j] a force (force, moment)."""
    a0, a1, a2, a3, a4, a5 = A[i, 0], A[i, 1], A[i, 2], A[i, 3], A[i, 4], A[i, 5]
    f0, f1, f2, f3, f4, f5 = F[j, 0], F[j, 1], F[j, 2], F[j, 3], F[j, 4], F[j, 5]
    C[k, 0] += a4 * f2 - a5 * f1
    C[k, 1] += a5 * f0 - a3 * f2
    C[k, 2] += a3 * f1 - a4 * f0
    C[k, 3] += a4 * f5 - a5 * f4 + a1 * f2 - a2 * f1
    C[k, 4] += a5 * f3 - a3 * f5 + a2 * f0 - a0 * f2
    C[k, 5] += a3 * f4 - a4 * f3 + a0 * f1 - a1 * f0
