"""The linear solvers of the time step behind one interface, and the choice among them.

Every Newton iteration of a time step solves S δu' = r with the iteration matrix
S = M̄ + γ'C̄ + β'K̄ on the unknown coordinates (docs/equations_of_motion.md). Four factors do it:

* ``tree``: the O(n) factorization of a rigid tree from its kinematics, without forming S
  (engine/tree_solver.py: :class:`~flexmb.engine.tree_solver.TreeSolver`);
* ``dense``: a dense Cholesky factor of S's values on its CSC pattern, for small models
  (engine/dense_cholesky.py);
* ``band``: a band Cholesky factor, for banded S such as long flexible links (engine/band_cholesky.py);
* ``cholmod``: CHOLMOD's sparse Cholesky factor (engine/linalg.py), for everything else.

What the step asks of each (:class:`LinearSolver`)::

    kind                       "tree", "dense", "band" or "cholmod"
    load(source, material_only)  take S at the step's current iterate from ``source`` (a
                               :class:`MatrixSource`: a matrix solver has its values written into
                               its own storage, the tree solver takes the kinematics and node masses)
    factorize()                factorize what was loaded; SolverError naming the coordinate of a
                               pivot that is not positive
    solve(b) -> x              S x = b with the current factor
    failed_pivot(exc) -> str   the coordinate of a failed factorization (for messages)
    describe(n_free) -> str    what it is, for ``flexmb info``
    twin() -> LinearSolver     a new solver of the same kind on the same pattern (a second factor,
                               e.g. of the rigid cuts' projection matrix)
    n_analyze, n_factorize     counts

:func:`choose` picks one per integrator, once, and says why (``flexmb info`` prints the reason).
Nothing outside this module and the solvers asks which class a solver is: the time step and its
back-ends read ``kind``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import numpy as np

from flexmb.engine.band_cholesky import BandCholesky, band_order, band_suits
from flexmb.engine.dense_cholesky import DenseCholesky
from flexmb.engine.linalg import SparseCholesky
from flexmb.engine.tree_solver import TreeSolver
from flexmb.errors import SettingsError

if TYPE_CHECKING:  # type hints only
    from flexmb.engine.assembly import Assembler
    from flexmb.model import Model

__all__ = ["KINDS", "LinearSolver", "MatrixSource", "choose"]

#: the linear_solver settings: "auto" or one of the kinds
KINDS = ("tree", "dense", "band", "cholmod")


class MatrixSource(Protocol):
    """What a time step offers a solver to load S from (GeneralizedAlpha's iterate)."""

    def fill(self, values: np.ndarray, material_only: bool) -> None:
        """Write S's values on the solver's CSC pattern into ``values`` (``material_only``: without the
        geometric stiffness that can make S indefinite)."""

    def tree_terms(self) -> tuple:
        """(kinematics, node mass blocks Mb, γ', diagonal on the free coordinates, position tangent or
        None): what the tree factorization reads (TreeSolver.factorize_tree)."""


class LinearSolver(Protocol):
    """The interface of the four factors (module docstring)."""

    kind: str
    n_analyze: int
    n_factorize: int

    def load(self, source: MatrixSource, material_only: bool = False) -> None: ...

    def factorize(self) -> None: ...

    def solve(self, b: np.ndarray) -> np.ndarray: ...

    def failed_pivot(self, exc: Exception) -> str: ...

    def describe(self, n_free: int) -> str: ...

    def twin(self) -> LinearSolver: ...


def choose(model: Model, asm: Assembler, free: np.ndarray, requested: str = "auto",
           dense_max: int = 64) -> tuple[LinearSolver | None, str]:
    """The factor of the time step's iteration matrix for ``model`` on the unknowns ``free`` and why:
    ``requested`` "auto" takes the O(n) tree factorization for a rigid tree (no element joins two
    nodes, or spring-dampers each across one joint: engine/tree_pairs.py), a dense factor for other
    models of at most ``dense_max`` unknowns, a band factor for larger
    ones whose pattern is banded (:func:`~flexmb.engine.band_cholesky.band_suits`), CHOLMOD otherwise;
    "tree" (rigid trees only), "dense", "band" or "cholmod" force one. (None, reason) when every
    coordinate is driven. SettingsError for a request that cannot be met."""
    if requested not in ("auto",) + KINDS:
        raise SettingsError(f"linear_solver = {requested!r} must be 'auto', 'tree', 'dense', 'band' or 'cholmod'")
    tree = asm.rigid_tree or asm.tree_pairs is not None  # spring-dampers across single joints: engine/tree_pairs.py
    if requested == "tree" and not tree:
        raise SettingsError("linear_solver = 'tree' needs a rigid tree (no element joining two nodes); this model "
                            "has " + ", ".join(f.plural for f, _, _ in asm.with_blocks) + ": use 'auto' or 'cholmod'")
    if not free.size:
        return None, "every coordinate is driven: inverse dynamics, no unknowns"
    names = [model.coordinate_names[i] for i in free]
    if tree and requested in ("auto", "tree"):
        return TreeSolver(asm.pattern, free, model.n_u, model.coordinate_names), (
            "a rigid tree" if asm.rigid_tree else "a rigid tree with spring-dampers across single joints")
    pattern = asm.structural_pattern(free)
    if requested == "dense" or (requested == "auto" and free.size <= dense_max):
        why = "asked for" if requested == "dense" else f"at most {dense_max} unknowns and no rigid tree"
        return DenseCholesky(pattern, names), why
    order = band_order(pattern) if requested in ("auto", "band") else None  # once for the choice and the factor
    if requested == "band" or (requested == "auto" and band_suits(pattern, order)[0]):
        return BandCholesky(pattern, names, order), "asked for" if requested == "band" else "a banded iteration matrix"
    return SparseCholesky(pattern), "asked for" if requested == "cholmod" else "a sparse iteration matrix, not banded"
