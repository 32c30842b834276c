"""The band factor of banded iteration matrices (flexmb/engine/band_cholesky.py): its ordering,
factor and solves against numpy, the message of a matrix that is not positive definite, when the
integrator takes it, and that a run on it agrees with the same run on CHOLMOD to round-off."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import flexmb as fm
from flexmb.engine.band_cholesky import BAND_MAX, FILL_MAX, BandCholesky, band_order, band_suits
from flexmb.engine.linalg import SparseCholesky
from flexmb.errors import SettingsError, SolverError
from flexmb.solvers.generalized_alpha import GeneralizedAlpha

SECTION = fm.BeamSection(E=2.1e11, G=8.1e10, A=1e-4, Iy=1e-9, Iz=1e-9, J=2e-9, rho=7800.0)


def _banded_spd(n: int, b: int, seed: int) -> sp.csc_matrix:
    """A symmetric positive definite matrix with every entry within ``b`` of the diagonal."""
    rng = np.random.default_rng(seed)
    A = np.zeros((n, n))
    for k in range(1, b + 1):
        v = rng.standard_normal(n - k)
        A += np.diag(v, k) + np.diag(v, -k)
    A += np.diag(np.abs(A).sum(axis=1) + 1.0 + rng.random(n))  # diagonally dominant
    return sp.csc_matrix(A)


def _load(chol: BandCholesky, A: sp.spmatrix) -> None:
    """Write A's values on the pattern into chol.values, as the integrator does."""
    P = chol.pattern
    cols = np.repeat(np.arange(P.shape[1]), np.diff(P.indptr))
    chol.values[:] = sp.csc_matrix(A).toarray()[P.indices, cols]


@pytest.mark.parametrize("n, b, seed", [(1, 0, 0), (5, 1, 1), (40, 3, 2), (200, 11, 3), (30, 29, 4)])
def test_factor_and_solve_agree_with_numpy(n, b, seed) -> None:
    A = _banded_spd(n, b, seed)
    chol = BandCholesky(A)
    assert chol.B == b and np.array_equal(chol.perm, np.arange(n))  # already banded: the given order
    _load(chol, A)
    chol.factorize()
    L_ref = np.linalg.cholesky(A.toarray())
    L = np.zeros((n, n))  # the band storage unpacked: L[i, t] is entry (i, i - B + t)
    for i in range(n):
        for t in range(b + 1):
            if i - b + t >= 0:
                L[i, i - b + t] = chol.L[i, t]
    np.testing.assert_allclose(L, L_ref, rtol=1e-12, atol=1e-12 * np.abs(L_ref).max())
    x = chol.solve(rhs := np.random.default_rng(seed).standard_normal(n))
    np.testing.assert_allclose(A @ x, rhs, rtol=0, atol=1e-12 * np.abs(rhs).max() * np.linalg.cond(A.toarray()))
    assert chol.n_factorize == 1 and chol.n_analyze == 1
    again = BandCholesky(A)  # the same matrix given whole: the same factor bit for bit
    again.factorize(A)
    np.testing.assert_array_equal(again.L, chol.L)


def test_a_shuffled_band_is_found_again_and_the_solution_is_in_the_callers_order() -> None:
    """Unknowns numbered at random: reverse Cuthill–McKee recovers a narrow band, and solve()
    answers in the original numbering."""
    n, b = 120, 4
    A = _banded_spd(n, b, 7).toarray()
    shuffle = np.random.default_rng(7).permutation(n)
    As = sp.csc_matrix(A[np.ix_(shuffle, shuffle)])
    perm, B = band_order(As)
    assert B <= 2 * b < n // 4  # the shuffled order has a band of almost n
    assert band_order(sp.csc_matrix(A))[1] == b  # the given order is kept where it is best
    zeros = As.copy()  # a structural pattern may store zeros: the same order
    zeros.data[:] = 0.0
    assert np.array_equal(band_order(zeros)[0], perm) and band_order(zeros)[1] == B
    chol = BandCholesky(As)
    assert chol.B == B and not np.array_equal(chol.perm, np.arange(n))
    chol.factorize(As)
    rhs = np.random.default_rng(8).standard_normal(n)
    np.testing.assert_allclose(As @ chol.solve(rhs), rhs, rtol=0, atol=1e-11 * np.abs(rhs).max())


def test_the_upper_triangle_is_not_read() -> None:
    A = _banded_spd(30, 3, 5)
    chol = BandCholesky(A)
    chol.factorize(A)
    skewed = BandCholesky(A)
    skewed.factorize(A + 0.5 * sp.triu(A, 1).tocsc())
    np.testing.assert_array_equal(skewed.L, chol.L)


def test_an_indefinite_matrix_names_the_coordinate_in_the_callers_numbering() -> None:
    """The failed pivot is reported by the caller's name of the unknown, also when the band factor
    renumbered the unknowns."""
    n = 40
    A = _banded_spd(n, 2, 9).toarray()
    A[17, 17] = -5.0
    shuffle = np.random.default_rng(9).permutation(n)
    As = A[np.ix_(shuffle, shuffle)]
    names = [f"u{k}" for k in shuffle]  # As's unknown j is A's unknown shuffle[j]
    chol = BandCholesky(sp.csc_matrix(As), names=names)
    assert not np.array_equal(chol.perm, np.arange(n))
    with pytest.raises(SolverError, match="not positive definite at coordinate") as info:
        chol.factorize(sp.csc_matrix(As))
    # a pivot fails at or before the negative diagonal entry's row, in the band factor's order
    assert info.value.coordinate in names
    pos = np.empty(n, dtype=int)
    pos[chol.perm] = np.arange(n)
    assert pos[names.index(info.value.coordinate)] <= pos[names.index("u17")]
    chol.values[:] = np.nan  # a NaN pivot is refused as well
    with pytest.raises(SolverError, match="not positive definite"):
        chol.factorize()
    with pytest.raises(SolverError, match="'a'"):
        BandCholesky(sp.csc_matrix(np.diag([-1.0, 1.0])), names=["a", "b"]).factorize(sp.csc_matrix(np.diag([-1.0, 1.0])))


def test_an_entry_outside_the_pattern_is_an_internal_error() -> None:
    chol = BandCholesky(sp.csc_matrix(np.eye(3)))
    with pytest.raises(SolverError, match="outside the analysed sparsity pattern"):
        chol.factorize(sp.csc_matrix(np.ones((3, 3))))


def test_the_auto_choice_takes_narrow_bands_only() -> None:
    """A band of at most BAND_MAX that adds at most FILL_MAX times the lower triangle suits; a
    dense block, a wide band or a sparse pattern that a band would fill does not."""
    ok, B, band, lower = band_suits(_banded_spd(300, 11, 1))
    assert ok and B == 11 and band <= FILL_MAX * lower
    assert not band_suits(_banded_spd(300, BAND_MAX + 1, 1))[0]
    arrow = np.eye(200)  # an arrow: the last unknown couples with all, a band would be full
    arrow[-1, :] = arrow[:, -1] = 1.0
    arrow[-1, -1] = 300.0
    suits, B, band, lower = band_suits(sp.csc_matrix(arrow))
    assert not suits and band > FILL_MAX * lower
    assert not band_suits(sp.csc_matrix((0, 0)))[0]
    zeros = _banded_spd(300, 11, 1)  # a structural pattern may store zeros: they count as entries
    zeros.data[:] = 0.0
    assert band_suits(zeros) == band_suits(_banded_spd(300, 11, 1))


def _link(n: int) -> fm.Model:
    mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    nodes = mb.add_flexible_link("link", (0.0, 0.0, 0.0), (0.5, 0.0, 0.0), n, SECTION, damping=1e-4)
    mb.add_joint("pin", "revolute", "ground", nodes[0], axis=(0.0, 0.0, 1.0))
    return mb.compile()


def test_the_integrator_takes_the_band_factor_for_long_links() -> None:
    model = _link(30)  # 181 unknowns, half-bandwidth 11
    integ = GeneralizedAlpha(model)
    assert isinstance(integ.chol, BandCholesky) and integ.chol.backend == "band" and integ.chol.B == 11
    assert "band Cholesky" in integ.describe_solver() and "half-bandwidth 11" in integ.describe_solver()
    assert integ.solver_stats() == {"tree_solver": 0.0, "dense_solver": 0.0, "band_solver": 1.0}
    assert integ.element_step is not None  # the compiled iterates work on it as on CHOLMOD
    assert isinstance(GeneralizedAlpha(model, linear_solver="cholmod").chol, SparseCholesky)
    assert isinstance(GeneralizedAlpha(_link(2), linear_solver="band").chol, BandCholesky)
    with pytest.raises(SettingsError, match="'auto', 'tree', 'dense', 'band' or 'cholmod'"):
        GeneralizedAlpha(model, linear_solver="lu")


def test_a_run_on_the_band_factor_is_the_cholmod_run_to_round_off() -> None:
    """The same 0.1 s of a damped falling link on both factors: positions within 1e-12 m and the
    same steps (both solve the same systems; only round-off differs)."""
    model = _link(30)
    band = fm.simulate(model, 0.1, 1e-3, output_every=10)
    chol = fm.simulate(model, 0.1, 1e-3, output_every=10, linear_solver="cholmod")
    assert band.stats["band_solver"] == 1.0 and chol.stats["band_solver"] == 0.0
    assert band.stats["steps"] == chol.stats["steps"] == 100
    assert np.abs(band.x - chol.x).max() < 1e-12
    assert np.abs(band.u - chol.u).max() < 1e-9 * np.abs(chol.u).max()
    assert np.abs(band.x[-1] - band.x[0]).max() > 1e-2  # the link fell: not a comparison of rest states


def test_a_model_outside_the_compiled_iterates_runs_on_the_band_factor_too() -> None:
    """A long link whose tip hangs on a soft bushing to ground and carries a load of the motion numba does not
    compile (it reads a Python object: the compiled iterates do not take it): the Python Newton loop on the band
    factor (the iteration matrix's values loaded from its pattern) agrees with CHOLMOD to round-off."""
    mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    nodes = mb.add_flexible_link("link", (0.0, 0.0, 0.0), (0.5, 0.0, 0.0), 30, SECTION, damping=1e-4)
    mb.add_joint("pin", "revolute", "ground", nodes[0], axis=(0.0, 0.0, 1.0))
    mb.add_bushing("tip_spring", "ground", nodes[-1], stiffness=[50.0] * 3 + [0.0] * 3, point=(0.5, 0.0, 0.0))
    class Push:  # a Python object: numba does not type it
        f = np.array([0.0, -0.5, 0.0])

    push = Push()
    mb.add_load("tip_push", nodes[-1], lambda t, x, R, v, w: R @ push.f + 0.0 * v)
    model = mb.compile()
    integ = GeneralizedAlpha(model)
    assert isinstance(integ.chol, BandCholesky) and integ.element_step is None
    band = fm.simulate(model, 0.1, 1e-3, output_every=10)
    chol = fm.simulate(model, 0.1, 1e-3, output_every=10, linear_solver="cholmod")
    assert band.stats["band_solver"] == 1.0 and band.status == chol.status == "finished"
    assert np.abs(band.x - chol.x).max() < 1e-12
    assert np.abs(band.x[-1] - band.x[0]).max() > 1e-3  # it moved
