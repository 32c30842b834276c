"""Dense Cholesky factor of small iteration matrices (issue 14: small mechanisms).

A closed-loop mechanism of a handful of bodies and short beams has a few dozen unknowns: its
iteration matrix S (eq. 1 of engine/assembly.py, M̄ + γ' C̄ + β' K̄ on the free coordinates) is
small and nearly full. There CHOLMOD's numeric factorization and solves cost tens of microseconds
of calls and bookkeeping for a few hundred flops. :class:`DenseCholesky` keeps S's values on the
same CSC pattern as :class:`flexmb.engine.linalg.SparseCholesky` (the integrator writes them into
:attr:`DenseCholesky.values` the same way) and factorizes its lower triangle S = L Lᵀ with
:func:`dense_factor` (row-oriented Cholesky–Crout, no pivoting: S is symmetric positive definite),
solving with :func:`dense_solve`. Both are compiled and also called from compiled Newton loops
(flexmb/solvers/element_step.py, ``element_newton_step``), with the same arithmetic, so a step is
the same bit for bit either way. GeneralizedAlpha takes it for models of at most
``GeneralizedAlpha.dense_max`` unknowns that are no rigid tree (``linear_solver="auto"``);
``linear_solver="cholmod"`` keeps CHOLMOD.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from numba import njit

from flexmb.errors import SolverError

__all__ = ["CholeskyFactor", "DenseCholesky", "dense_factor", "dense_solve", "not_positive_definite", "values_on_pattern"]


@njit(cache=True)
def dense_factor(indptr, indices, values, L) -> int:
    """L (n, n) lower triangular with L Lᵀ = S, S the symmetric matrix whose values on the CSC
    pattern (indptr, indices) are ``values`` (its lower triangle is read). Returns -1, or the first
    column whose pivot is not positive (or not finite): S is then not positive definite."""
    n = L.shape[0]
    for i in range(n):
        for j in range(n):
            L[i, j] = 0.0
    for j in range(n):
        for t in range(indptr[j], indptr[j + 1]):
            i = indices[t]
            if i >= j:
                L[i, j] += values[t]
    for j in range(n):
        d = L[j, j]
        for k in range(j):
            d -= L[j, k] * L[j, k]
        if not d > 0.0 or not math.isfinite(d):
            return j
        d = math.sqrt(d)
        L[j, j] = d
        for i in range(j + 1, n):
            s = L[i, j]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            L[i, j] = s / d
    return -1


@njit(cache=True)
def dense_solve(L, b, x) -> None:
    """x = (L Lᵀ)⁻¹ b by forward and backward substitution (x may be b)."""
    n = L.shape[0]
    for i in range(n):
        s = b[i]
        for k in range(i):
            s -= L[i, k] * x[k]
        x[i] = s / L[i, i]
    for i in range(n - 1, -1, -1):
        s = x[i]
        for k in range(i + 1, n):
            s -= L[k, i] * x[k]
        x[i] = s / L[i, i]


def values_on_pattern(A: sp.spmatrix, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """A's entries at the pattern's positions (rows, cols); an entry of A outside them is an error."""
    D = sp.csc_matrix(A).toarray()
    values = D[rows, cols]
    D[rows, cols] = 0.0
    if np.any(D != 0.0):
        raise SolverError("internal error: matrix entry outside the analysed sparsity pattern")
    return values


def not_positive_definite(names: tuple[str, ...], column: int) -> SolverError:
    """The SolverError of a pivot at the unknown ``column`` that is not positive, naming it."""
    name = names[column] if column < len(names) else str(column)
    exc = SolverError(f"iteration matrix is not positive definite at coordinate {name!r}", None)
    exc.coordinate = name
    return exc


class CholeskyFactor:
    """What the compiled factors (DenseCholesky, engine/band_cholesky.py's BandCholesky) share: the
    values loaded from a MatrixSource, and the pivot that is not positive named in the SolverError
    of ``factorize`` (``values`` and ``names`` are set by each factor's constructor)."""

    values: np.ndarray
    names: tuple[str, ...]

    def _take_pattern(self, pattern: sp.spmatrix, names: tuple[str, ...] | list[str], n_analyze: int) -> sp.csc_matrix:
        """``pattern`` as the factor's CSC :attr:`pattern` (duplicates summed, indices sorted), with its
        ``names`` and the counts ``n_analyze``, ``n_factorize`` = 0 set: what every constructor starts with."""
        P = sp.csc_matrix(pattern, dtype=float)
        P.sum_duplicates()
        P.sort_indices()
        self.pattern, self.names, self.n_analyze, self.n_factorize = P, tuple(names), n_analyze, 0
        return P

    def load(self, source, material_only: bool = False) -> None:
        """S's values from ``source`` (engine/linear_solver.py, MatrixSource) into :attr:`values`."""
        source.fill(self.values, material_only)

    def failed_pivot(self, exc: Exception) -> str:
        """The coordinate named by the SolverError of :meth:`factorize` (its ``coordinate``)."""
        return repr(getattr(exc, "coordinate", None) or f"(not known: {exc})")

    def failed(self, column: int) -> None:
        """Raise the SolverError of a pivot at ``column`` (an unknown's index) that is not positive."""
        raise not_positive_definite(self.names, column)


class DenseCholesky(CholeskyFactor):
    """Dense Cholesky factor of symmetric positive definite matrices on one CSC ``pattern`` (the
    interface of :class:`flexmb.engine.linalg.SparseCholesky`: write the values into :attr:`values`,
    then :meth:`factorize` and :meth:`solve`). ``names``: the unknowns' names, for the message of a
    pivot that is not positive. Counts: ``n_analyze`` (0: there is no symbolic analysis),
    ``n_factorize``."""

    backend = kind = "dense"

    def __init__(self, pattern: sp.spmatrix, names: tuple[str, ...] | list[str] = ()) -> None:
        P = self._take_pattern(pattern, names, 0)  # no symbolic analysis
        self.indptr = P.indptr.astype(np.int64)
        self.indices = P.indices.astype(np.int64)
        self.values = np.zeros(P.nnz)
        self._rows = self.indices
        self._cols = np.repeat(np.arange(P.shape[1], dtype=np.int64), np.diff(self.indptr))
        self.L = np.zeros(P.shape)

    def describe(self, n_free: int) -> str:
        """What it is, for ``flexmb info``."""
        return f"dense Cholesky (engine/dense_cholesky.py), {n_free} unknowns"

    def twin(self) -> DenseCholesky:
        """A new dense factor on the same pattern (a second factor of another matrix)."""
        return DenseCholesky(self.pattern, self.names)

    def factorize(self, A: sp.spmatrix | None = None) -> None:
        """Factorize the matrix whose values the caller wrote into :attr:`values` (or A, on the
        pattern); raises SolverError naming the unknown whose pivot is not positive."""
        values = self.values if A is None else values_on_pattern(A, self._rows, self._cols)
        bad = dense_factor(self.indptr, self.indices, np.ascontiguousarray(values, dtype=float), self.L)
        if bad >= 0:
            self.failed(bad)
        self.n_factorize += 1

    def solve(self, b: np.ndarray) -> np.ndarray:
        """Solve S x = b with the current factor."""
        x = np.array(b, dtype=float)
        dense_solve(self.L, x, x)
        return x
