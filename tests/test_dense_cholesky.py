"""The dense factor of small iteration matrices (flexmb/engine/dense_cholesky.py): its factor and
solves against numpy, the message of a matrix that is not positive definite, when the integrator
takes it, and that a run on it agrees with the same run on CHOLMOD to round-off."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import flexmb as fm
from flexmb.engine.dense_cholesky import DenseCholesky
from flexmb.engine.linalg import SparseCholesky
from flexmb.errors import SettingsError, SolverError
from flexmb.solvers.generalized_alpha import GeneralizedAlpha

SECTION = fm.BeamSection(E=2.1e11, G=8.1e10, A=1e-4, Iy=1e-9, Iz=1e-9, J=2e-9, rho=7800.0)


def _spd(n: int, seed: int, density: float = 0.4) -> sp.csc_matrix:
    """A sparse symmetric positive definite matrix with a random pattern."""
    rng = np.random.default_rng(seed)
    B = sp.random(n, n, density=density, random_state=rng) + sp.eye(n)
    return sp.csc_matrix(B @ B.T + n * sp.eye(n))


@pytest.mark.parametrize("n, seed", [(1, 0), (7, 1), (30, 2), (64, 3)])
def test_factor_and_solve_agree_with_numpy(n, seed) -> None:
    A = _spd(n, seed)
    chol = DenseCholesky(A)
    chol.values[:] = A[chol._rows, chol._cols].A1  # the caller writes S's values on the pattern
    chol.factorize()
    L_ref = np.linalg.cholesky(A.toarray())
    np.testing.assert_allclose(np.tril(chol.L), L_ref, rtol=1e-12, atol=1e-12 * np.abs(L_ref).max())
    b = np.random.default_rng(seed).standard_normal(n)
    x = chol.solve(b)
    np.testing.assert_allclose(A @ x, b, rtol=0, atol=1e-12 * np.abs(b).max() * np.linalg.cond(A.toarray()))
    assert chol.n_factorize == 1 and chol.n_analyze == 0
    # the same matrix given whole (factorize(A)) gives the same factor bit for bit
    again = DenseCholesky(A)
    again.factorize(A)
    np.testing.assert_array_equal(again.L, chol.L)


def test_the_upper_triangle_is_not_read() -> None:
    """Only the lower triangle counts (as CHOLMOD reads one triangle): a changed upper triangle
    changes nothing."""
    A = _spd(12, 5, density=0.6)
    chol = DenseCholesky(A)
    chol.factorize(A)
    U = sp.triu(A, 1).tocsc()
    skewed = DenseCholesky(A)
    skewed.factorize(A + 0.5 * U)
    np.testing.assert_array_equal(skewed.L, chol.L)


def test_an_indefinite_matrix_names_the_coordinate() -> None:
    A = np.diag([2.0, 3.0, -1.0, 4.0])
    A[0, 1] = A[1, 0] = 0.5
    chol = DenseCholesky(sp.csc_matrix(A), names=["a", "b", "c", "d"])
    with pytest.raises(SolverError, match="not positive definite at coordinate 'c'") as info:
        chol.factorize(sp.csc_matrix(A))
    assert info.value.coordinate == "c"
    chol.values[:] = np.nan  # a NaN pivot is refused as well
    with pytest.raises(SolverError, match="'a'"):
        chol.factorize()


def test_an_entry_outside_the_pattern_is_an_internal_error() -> None:
    chol = DenseCholesky(sp.csc_matrix(np.eye(3)))
    with pytest.raises(SolverError, match="outside the analysed sparsity pattern"):
        chol.factorize(sp.csc_matrix(np.ones((3, 3))))


def _link(n: int) -> fm.Model:
    mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    nodes = mb.add_flexible_link("link", (0.0, 0.0, 0.0), (0.5, 0.0, 0.0), n, SECTION, damping=1e-4)
    mb.add_joint("pin", "revolute", "ground", nodes[0], axis=(0.0, 0.0, 1.0))
    return mb.compile()


def test_the_integrator_takes_the_dense_factor_for_small_models_only() -> None:
    small, large = _link(2), _link(12)  # 13 and 73 unknowns
    assert small.free_u.size <= GeneralizedAlpha.dense_max < large.free_u.size
    integ = GeneralizedAlpha(small)
    assert isinstance(integ.chol, DenseCholesky) and integ.chol.backend == "dense"
    assert "dense Cholesky" in integ.describe_solver() and "13 unknowns" in integ.describe_solver()
    assert integ.solver_stats() == {"tree_solver": 0.0, "dense_solver": 1.0, "band_solver": 0.0}
    assert not isinstance(GeneralizedAlpha(large).chol, DenseCholesky)  # the band factor (tests/test_band_cholesky.py)
    assert isinstance(GeneralizedAlpha(small, linear_solver="cholmod").chol, SparseCholesky)
    assert isinstance(GeneralizedAlpha(large, linear_solver="dense").chol, DenseCholesky)
    with pytest.raises(SettingsError, match="'auto', 'tree', 'dense', 'band' or 'cholmod'"):
        GeneralizedAlpha(small, linear_solver="lu")
    # a rigid tree keeps the O(n) tree factorization; asked for, it can take the dense factor
    mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    mb.add_node("a", position=(0, 0, 0))
    mb.add_body("a_body", node="a", mass=1.0, com=(0.5, 0, 0), inertia=np.diag([1e-3, 0.1, 0.1]))
    mb.add_joint("pin", "revolute", "ground", "a", axis=(0, 0, 1))
    tree = mb.compile()
    assert GeneralizedAlpha(tree).solver_stats()["tree_solver"] == 1.0
    assert isinstance(GeneralizedAlpha(tree, linear_solver="dense").chol, DenseCholesky)


def test_a_run_on_the_dense_factor_is_the_cholmod_run_to_round_off() -> None:
    """The same 0.1 s of a damped falling link on both factors: positions within 1e-12 m and the
    same steps (both solve the same systems; only round-off differs)."""
    model = _link(4)
    dense = fm.simulate(model, 0.1, 1e-3, output_every=10, linear_solver="dense")
    chol = fm.simulate(model, 0.1, 1e-3, output_every=10, linear_solver="cholmod")
    assert dense.stats["dense_solver"] == 1.0 and chol.stats["dense_solver"] == 0.0
    assert dense.stats["steps"] == chol.stats["steps"] == 100
    assert np.abs(dense.x - chol.x).max() < 1e-12
    assert np.abs(dense.u - chol.u).max() < 1e-9 * np.abs(chol.u).max()
    assert np.abs(dense.x[-1] - dense.x[0]).max() > 1e-2  # the link fell: not a comparison of rest states
