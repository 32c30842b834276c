"""Band Cholesky factor of banded iteration matrices (issue 14: per-step cost of long flexible links).

A flexible link of N beam elements on free nodes gives an iteration matrix S (eq. 1 of
engine/assembly.py, M̄ + γ' C̄ + β' K̄ on the free coordinates) whose nonzeros lie within about
twelve coordinates of the diagonal: each node's six coordinates couple with its neighbours' only.
Its Cholesky factor fills the band and nothing outside it. CHOLMOD's simplicial factorization
spends most of its time there on index bookkeeping per entry of L, its supernodal one on calls for
blocks of a dozen columns (benchmarks/results/*-cholmod_floor.md).

:class:`BandCholesky` renumbers the unknowns once per pattern (the given order or reverse
Cuthill–McKee's, whichever has the narrower band: half-bandwidth B), keeps row i of L from column
i - B to the diagonal in a dense (n, B + 1) array, and factorizes S = L Lᵀ row by row
(:func:`band_factor`, Cholesky–Crout: L_ij = (S_ij - Σ_k L_ik L_jk) / L_jj for i - B ≤ j < i,
L_ii = √(S_ii - Σ_k L_ik²)). :func:`band_solve` does one forward sweep (L z = b, a sum per row) and
one backward sweep (Lᵀ x = z: each x_i, once final, subtracted along row i of L). Both are compiled
and have the interface of :class:`flexmb.engine.dense_cholesky.DenseCholesky` (write S's values into
:attr:`BandCholesky.values` on the CSC pattern; its lower triangle is read); a compiled Newton loop
may write S straight into the band instead (:func:`band_factor_loaded`; flexmb/solvers/element_step.py).

GeneralizedAlpha takes it (``linear_solver="auto"``) for models above ``dense_max`` unknowns whose
band holds at most :data:`FILL_MAX` times the nonzeros of S's lower triangle, with B at most
:data:`BAND_MAX` (:func:`band_suits`): there it does the arithmetic of the band and nothing else.
Everything wider stays on CHOLMOD; ``linear_solver="cholmod"`` forces CHOLMOD, ``"band"`` this factor.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from numba import njit
from scipy.sparse.csgraph import reverse_cuthill_mckee

from flexmb.engine.dense_cholesky import CholeskyFactor, values_on_pattern

__all__ = ["BAND_MAX", "FILL_MAX", "BandCholesky", "band_factor", "band_factor_loaded", "band_load", "band_order",
           "band_solve", "band_suits"]

#: the band may hold at most this many times the nonzeros of S's lower triangle (auto choice)
FILL_MAX = 1.5
#: and be at most this wide (half-bandwidth; wider: CHOLMOD's supernodes use the BLAS)
BAND_MAX = 48


def _bandwidth(rows: np.ndarray, cols: np.ndarray, perm: np.ndarray) -> int:
    """Half-bandwidth max |pos[i] - pos[j]| of the entries (rows, cols) renumbered by ``perm``."""
    pos = np.empty(perm.size, dtype=np.int64)
    pos[perm] = np.arange(perm.size, dtype=np.int64)
    return int(np.abs(pos[rows] - pos[cols]).max(initial=0))


def band_order(pattern: sp.spmatrix) -> tuple[np.ndarray, int]:
    """The given order or reverse Cuthill–McKee's, whichever has the narrower band: (perm, B), new
    index k holding old index perm[k]."""
    P = sp.coo_matrix(pattern)
    n = P.shape[0]
    ident = np.arange(n, dtype=np.int64)
    b0 = _bandwidth(P.row, P.col, ident)
    if n == 0:
        return ident, 0
    G = sp.csr_matrix((np.ones(P.nnz), (P.row, P.col)), shape=P.shape)  # the structure (stored zeros are entries)
    rcm = reverse_cuthill_mckee((G + G.T).tocsr(), symmetric_mode=True).astype(np.int64)
    b1 = _bandwidth(P.row, P.col, rcm)
    return (rcm, b1) if b1 < b0 else (ident, b0)


def band_suits(pattern: sp.spmatrix, order: tuple[np.ndarray, int] | None = None) -> tuple[bool, int, int, int]:
    """Whether the auto choice takes the band factor for ``pattern`` (module docstring): (suits,
    half-bandwidth, entries of the band, nonzeros of the lower triangle). ``order``: band_order's
    result for the pattern if the caller has it (it is then not computed again)."""
    P = sp.csc_matrix(pattern, dtype=float, copy=True)
    n = P.shape[0]
    if n == 0:
        return False, 0, 0, 0
    P.data[:] = 1.0  # the structure: stored zeros count as entries
    B = (order or band_order(P))[1]
    band = n * (B + 1) - B * (B + 1) // 2
    lower = int(sp.tril(P + P.T).nnz)
    return B <= BAND_MAX and band <= FILL_MAX * lower, B, band, lower


@njit(cache=True)
def band_load(dst, values, L) -> None:
    """S into band storage: L zeroed, then S's values ``values`` (on the CSC pattern) added at
    L.flat[dst[t]] (dst -1: an upper-triangle entry, not read)."""
    Lf = L.reshape(L.size)
    for t in range(Lf.size):
        Lf[t] = 0.0
    for t in range(dst.size):
        if dst[t] >= 0:
            Lf[dst[t]] += values[t]


@njit(cache=True)
def band_factor(dst, values, perm, L, dinv) -> int:
    """:func:`band_load`, then :func:`band_factor_loaded`."""
    band_load(dst, values, L)
    return band_factor_loaded(perm, L, dinv)


@njit(cache=True)
def band_factor_loaded(perm, L, dinv) -> int:
    """L Lᵀ = S in band storage, in place: S_{i, i-B+t} at L[i, t] on entry (shape (n, B+1); t = B:
    the diagonal; entries left of column 0 are 0), L_{i, i-B+t} there on return, and dinv[i] =
    1 / L_ii (products instead of divisions). Returns -1, or the original index perm[i] of the first
    row whose pivot is not positive (or not finite)."""
    n = dinv.size
    B = L.shape[1] - 1
    for i in range(n):  # loops from 0: the entries left of column 0 are zeros (this form runs twice as fast)
        for t in range(B):
            j = i - B + t  # L_{j, i-B+u} = L[j, u + B - t]
            if j < 0:
                continue
            s = L[i, t]
            for u in range(t):
                s -= L[i, u] * L[j, u + B - t]
            L[i, t] = s * dinv[j]
        d = L[i, B]
        for u in range(B):
            d -= L[i, u] * L[i, u]
        if not d > 0.0 or not math.isfinite(d):
            return perm[i]
        L[i, B] = math.sqrt(d)
        dinv[i] = 1.0 / L[i, B]
    return -1


@njit(cache=True)
def band_solve(perm, L, dinv, b, x, y) -> None:
    """x = S⁻¹ b with the factor of :func:`band_factor` (x may be b). ``y``: work array of n + B whose
    first B entries are 0 (they stand for the unknowns left of the matrix, whose entries in L are
    0: the loops need no bounds)."""
    n = dinv.size
    B = L.shape[1] - 1
    for i in range(n):
        y[B + i] = b[perm[i]]
    for i in range(n):  # L z = y: row i, L_ik = L[i, k - i + B], y's entry k at y[B + k]
        s = y[B + i]
        for t in range(B):
            s -= L[i, t] * y[i + t]
        y[B + i] = s * dinv[i]
    for i in range(n - 1, -1, -1):  # Lᵀ x = z: x_i final, then subtracted along row i of L (column i of Lᵀ)
        yi = y[B + i] * dinv[i]
        y[B + i] = yi
        for t in range(B):
            y[i + t] -= L[i, t] * yi  # the front pad takes 0 * yi: it stays 0
    for i in range(n):
        x[perm[i]] = y[B + i]


class BandCholesky(CholeskyFactor):
    """Band Cholesky factor of symmetric positive definite matrices on one CSC ``pattern`` (the
    interface of :class:`flexmb.engine.dense_cholesky.DenseCholesky`: write the values into
    :attr:`values`, then :meth:`factorize` and :meth:`solve`). ``names``: the unknowns' names, for the
    message of a pivot that is not positive; ``order``: band_order's result if the caller has it.
    Counts: ``n_analyze`` (the ordering, once), ``n_factorize``."""

    backend = kind = "band"

    def __init__(self, pattern: sp.spmatrix, names: tuple[str, ...] | list[str] = (),
                 order: tuple[np.ndarray, int] | None = None) -> None:
        P = self._take_pattern(pattern, names, 1)  # the ordering: once
        n = P.shape[0]
        self.perm, self.B = order or band_order(P)
        pos = np.empty(n, dtype=np.int64)
        pos[self.perm] = np.arange(n, dtype=np.int64)
        rows = self._rows = P.indices.astype(np.int64)
        cols = self._cols = np.repeat(np.arange(n, dtype=np.int64), np.diff(P.indptr))
        r, c = pos[rows], pos[cols]
        hi, lo = np.maximum(r, c), np.minimum(r, c)
        W = self.B + 1
        self.dst = np.where(rows >= cols, hi * W + lo - hi + self.B, -1).astype(np.int64)
        self.values = np.zeros(P.nnz)
        self.L = np.zeros((n, W))
        self.dinv = np.zeros(n)
        self._y = np.zeros(n + self.B)

    def describe(self, n_free: int) -> str:
        """What it is, for ``flexmb info``."""
        return f"band Cholesky (engine/band_cholesky.py: a banded iteration matrix), {n_free} unknowns, half-bandwidth {self.B}"

    def twin(self) -> BandCholesky:
        """A new band factor on the same pattern and ordering (a second factor of another matrix)."""
        return BandCholesky(self.pattern, self.names, (self.perm, self.B))

    def factorize(self, A: sp.spmatrix | None = None) -> None:
        """Factorize the matrix whose values the caller wrote into :attr:`values` (or A, on the
        pattern); raises SolverError naming the unknown whose pivot is not positive."""
        values = self.values if A is None else values_on_pattern(A, self._rows, self._cols)
        bad = band_factor(self.dst, np.ascontiguousarray(values, dtype=float), self.perm, self.L, self.dinv)
        if bad >= 0:
            self.failed(bad)
        self.n_factorize += 1

    def solve(self, b: np.ndarray) -> np.ndarray:
        """Solve S x = b with the current factor."""
        x = np.array(b, dtype=float)
        band_solve(self.perm, self.L, self.dinv, x, x, self._y)
        return x
