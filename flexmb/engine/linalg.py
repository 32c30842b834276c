"""Sparse symmetric positive definite solves with CHOLMOD (scikit-sparse).

The iteration matrix keeps one sparsity pattern per topology: :class:`SparseCholesky` runs
CHOLMOD's symbolic analysis once on that pattern and refactorizes numerically afterwards.
Matrices whose computed pattern lost some entries (exact zeros) are embedded into the fixed
pattern first, since CHOLMOD's numeric factorization requires the analysed pattern.
There is no fallback solver: without CHOLMOD, flexmb stops and says how to install it.
"""

from __future__ import annotations

import ctypes
import os

import numpy as np
import scipy.sparse as sp

from flexmb.errors import BackendError, SolverError

__all__ = ["BACKEND", "SparseCholesky", "blas_info", "one_blas_thread", "require_cholmod", "symbolic_analysis_count"]

BACKEND = "cholmod"
_INSTALL = (
    "install it with: apt-get install -y libsuitesparse-dev && "
    "pip install 'scikit-sparse>=0.4.16,<0.5'"
)
_counter = {"analyze": 0}


def require_cholmod():
    """Import and return ``sksparse.cholmod``, or raise BackendError with install advice."""
    try:  # imported here, on first use: without CHOLMOD flexmb still imports and says how to install it
        from sksparse import cholmod
    except ImportError as exc:  # pragma: no cover - exercised only on broken installs
        raise BackendError(f"CHOLMOD (scikit-sparse) cannot be imported ({exc}); {_INSTALL}.") from exc
    return cholmod


def _blas_library(paths) -> tuple[str, str] | None:
    """(kind, file) of the BLAS among the shared-object ``paths`` mapped into a process, or None.
    Copies bundled inside Python wheels (numpy's ``libscipy_openblas64_``: 64-bit integers and
    renamed symbols, which CHOLMOD cannot call) are ignored."""
    libs = sorted(p for p in paths if p.startswith("/") and "-packages/" not in p)
    kinds = (("libopenblas", "OpenBLAS"), ("libmkl_rt", "Intel MKL"), ("libmkl_core", "Intel MKL"), ("libblis", "BLIS"),
             ("libtatlas", "ATLAS"), ("libsatlas", "ATLAS"), ("libatlas", "ATLAS"))
    for prefix, kind in kinds:
        for p in libs:
            name = os.path.basename(p)
            if name.startswith(prefix):
                if kind == "OpenBLAS":
                    where = p.lower()
                    variant = ("pthread" if "pthread" in where or name.startswith("libopenblasp") else
                               "OpenMP" if "openmp" in where or name.startswith("libopenblaso") else
                               "serial" if "serial" in where else "")
                    kind += f" ({variant})" if variant else ""
                return kind, p
    for p in libs:
        if os.path.basename(p).startswith("libblas.so"):
            return ("reference BLAS" if os.path.basename(os.path.dirname(p)) == "blas" else "BLAS of unknown kind"), p
    return None


def _mapped_files() -> set[str]:
    """The files mapped into this process (``/proc/self/maps``; OSError where there is none)."""
    with open("/proc/self/maps") as f:
        return {parts[5].strip() for parts in (ln.split(None, 5) for ln in f) if len(parts) == 6}


def blas_info() -> str:
    """Which BLAS CHOLMOD loaded into this process, read from ``/proc/self/maps`` after importing
    ``sksparse.cholmod``: e.g. ``"OpenBLAS (pthread, 1 thread; OpenBLAS 0.3.21 ...) /usr/lib/...
    /libopenblasp-r0.3.21.so"`` or ``"reference BLAS /usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0"``.
    On Debian the system-wide choice is the ``libblas.so.3`` alternative; ``LD_LIBRARY_PATH`` can
    select another per process."""
    require_cholmod()
    try:
        paths = _mapped_files()
    except OSError as exc:
        return f"unknown (cannot read /proc/self/maps: {exc})"
    found = _blas_library(paths)
    if found is None:
        return "unknown (no shared BLAS library is mapped into this process)"
    kind, path = found
    if kind.startswith("OpenBLAS"):
        try:
            lib = ctypes.CDLL(path)  # already loaded: the same handle, no second copy
            lib.openblas_get_config.restype = ctypes.c_char_p
            details = f"{lib.openblas_get_num_threads()} thread(s); {lib.openblas_get_config().decode().strip()}"
            kind = f"{kind[:-1]}, {details})" if kind.endswith(")") else f"{kind} ({details})"
        except (OSError, AttributeError):
            pass
    return f"{kind} {path}"


_SET_THREADS = ("openblas_set_num_threads", "scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
                "openblas_set_num_threads64_")


def one_blas_thread() -> list[str]:
    """Set every OpenBLAS mapped into this process (CHOLMOD's and the copies inside numpy's and
    scipy's wheels) to one thread; returns their files. For a forked worker process, where the
    thread-count variables (OPENBLAS_NUM_THREADS, ...) are no longer read: they count only when
    a library loads."""
    try:
        paths = sorted(p for p in _mapped_files() if "openblas" in os.path.basename(p).lower())
    except OSError:
        return []
    done = []
    for path in paths:
        try:
            lib = ctypes.CDLL(path)  # already loaded: the same handle
        except OSError:
            continue
        for name in _SET_THREADS:
            fn = getattr(lib, name, None)
            if fn is not None:
                fn.argtypes = [ctypes.c_int]
                fn(1)
                done.append(path)
                break
    return done


def symbolic_analysis_count() -> int:
    """Number of CHOLMOD symbolic analyses run in this process (for tests and benchmarks)."""
    return _counter["analyze"]


class SparseCholesky:
    """CHOLMOD Cholesky factor of matrices sharing one pattern.

    ``pattern`` is a symmetric CSC matrix whose structure contains every matrix passed to
    :meth:`factorize`. Counts: ``n_analyze`` (1 per instance), ``n_factorize``.
    """

    backend = kind = BACKEND

    def __init__(self, pattern: sp.spmatrix, names: tuple[str, ...] | list[str] = ()) -> None:
        self._cholmod = require_cholmod()
        P = sp.csc_matrix(pattern, dtype=float)
        P.sum_duplicates()
        P.sort_indices()
        self.pattern = P
        self._keys = P.indices.astype(np.int64) + np.repeat(np.arange(P.shape[1], dtype=np.int64), np.diff(P.indptr)) * P.shape[0]
        # the persistent matrix the numeric factorizations read: values written into ``values``
        self._A = sp.csc_matrix((np.zeros(P.nnz), P.indices, P.indptr), shape=P.shape)
        self._A.has_sorted_indices = True
        self.values = self._A.data
        self._factor = self._cholmod.analyze(P, mode="auto")
        _counter["analyze"] += 1
        self.n_analyze = 1
        self.n_factorize = 0
        self.names = tuple(names)

    def load(self, source, material_only: bool = False) -> None:
        """S's values from ``source`` (engine/linear_solver.py, MatrixSource) into :attr:`values`."""
        source.fill(self.values, material_only)

    def failed_pivot(self, exc: Exception) -> str:
        """The coordinate whose pivot failed in CHOLMOD's factorization (its column in CHOLMOD's
        fill-reducing order, mapped back), or a note that it is not known."""
        cause = exc.__cause__
        try:
            return repr(self.names[cause.factor.P()[cause.column]])
        except (AttributeError, IndexError, TypeError):
            return f"(not known: {exc})"

    def describe(self, n_free: int) -> str:
        """What it is, for ``flexmb info``."""
        return f"CHOLMOD, {n_free} unknowns, {self.pattern.nnz} nonzeros in the iteration matrix"

    def twin(self) -> SparseCholesky:
        """A new CHOLMOD factor on the same pattern (its own symbolic analysis)."""
        return SparseCholesky(self.pattern, self.names)

    def embed(self, A: sp.spmatrix) -> sp.csc_matrix:
        """Return A on the fixed pattern (entries outside the pattern are an error)."""
        A = sp.csc_matrix(A)
        P = self.pattern
        if A.nnz == P.nnz and np.array_equal(A.indptr, P.indptr) and np.array_equal(A.indices, P.indices):
            return A
        A.sort_indices()
        keys = A.indices.astype(np.int64) + np.repeat(np.arange(A.shape[1], dtype=np.int64), np.diff(A.indptr)) * A.shape[0]
        pos = np.searchsorted(self._keys, keys)
        if pos.size and (pos.max() >= self._keys.size or np.any(self._keys[pos] != keys)):
            raise SolverError("internal error: matrix entry outside the analysed sparsity pattern")
        data = np.zeros(self._keys.size)
        np.add.at(data, pos, A.data)
        return sp.csc_matrix((data, self.pattern.indices, self.pattern.indptr), shape=self.pattern.shape)

    def factorize(self, A: sp.spmatrix | None = None) -> None:
        """Numeric refactorization of A (pattern-compatible), or with A None of the persistent
        matrix whose values the caller wrote into :attr:`values` (in the pattern's order; no sparse
        matrix is built); raises SolverError if not SPD."""
        try:
            self._factor.cholesky_inplace(self._A if A is None else self.embed(A))
        except self._cholmod.CholmodNotPositiveDefiniteError as exc:
            raise SolverError(f"iteration matrix is not positive definite ({exc})") from exc
        self.n_factorize += 1

    def solve(self, b: np.ndarray) -> np.ndarray:
        """Solve A x = b with the current factor."""
        return self._factor(b)
