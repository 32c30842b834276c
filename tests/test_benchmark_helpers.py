"""The plumbing of benchmarks/ that the reported numbers rest on (no timing here): medians over
repeats, the growth-exponent fit, the BLAS environment of the workers, and the capture of the
matrix flexmb factorizes (cholmod_floor.py and blas_dense.py time exactly that matrix)."""

import sys
from pathlib import Path

import numpy as np
import pytest

import flexmb as fm

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import benchlib as bl  # noqa: E402
from chain_scaling import fit_exponent  # noqa: E402


def test_median_of_finished_runs_and_their_spread():
    runs = [{"status": "finished", "ms_per_step": v, "steps": 1000, "tip": [v, 0.0]} for v in (3.0, 1.0, 2.0)]
    row = bl.median_runs(runs)
    assert row["ms_per_step"] == 2.0 and row["tip"] == [2.0, 0.0]  # numbers and fields of the median run
    assert row["ms_spread"] == (1.0, 3.0) and row["repeats"] == "3"


def test_unfinished_run_is_reported_not_mixed_in():
    runs = [{"status": "finished", "ms_per_step": 1.0}, {"status": "stopped (stalled)", "ms_per_step": 900.0}]
    row = bl.median_runs(runs)
    assert row["ms_per_step"] == 1.0 and row["repeats"] == "1 of 2"
    assert bl.median_runs(runs[1:])["status"] == "stopped (stalled)"


def test_growth_exponent_of_a_power_law():
    ns = [100, 300, 1000]
    assert fit_exponent(ns, [2e-6 * n**2.5 for n in ns]) == pytest.approx(2.5, abs=1e-12)
    assert fit_exponent([100], [1.0]) is None


@pytest.mark.skipif(not Path(bl.BLAS_DIRS["openblas"][0]).is_dir(), reason="libopenblas0-pthread not installed")
def test_worker_env_puts_the_chosen_blas_first(monkeypatch):
    monkeypatch.setenv("LD_LIBRARY_PATH", f"{bl.BLAS_DIRS['reference'][0]}:/opt/x")
    env = bl.worker_env("openblas", threads=1)
    assert env["LD_LIBRARY_PATH"].split(":") == bl.BLAS_DIRS["openblas"] + ["/opt/x"]
    assert env["OPENBLAS_NUM_THREADS"] == env["OMP_NUM_THREADS"] == "1"
    assert bl.blas_of_child(env).startswith("OpenBLAS")
    assert bl.blas_of_child(bl.worker_env("reference")).startswith("reference BLAS")


def test_capture_returns_the_iteration_matrix_flexmb_factorizes():
    model = bl.fm_chain(fm, 4)
    log = bl.CholmodLog()
    with bl.capture_cholmod(log):
        res = fm.simulate(model, 3e-3, 1e-3, linear_solver="cholmod")  # a rigid chain: the tree solver by default
    assert res.status == "finished"
    assert log.analyses == 1 and log.factorizations >= 3 and log.solves >= log.factorizations
    S = log.matrix.toarray()
    assert S.shape == (model.n_u, model.n_u) == (4, 4)
    assert np.allclose(S, S.T) and np.linalg.eigvalsh(S).min() > 0  # symmetric positive definite
    timing = bl.time_factor_and_solves(log.matrix, mode=log.mode, repeats=2)
    assert timing["dof"] == 4 and timing["floor_ms"] >= timing["factor_ms_min"] > 0


def test_newton_corrections_diagnostic_runs_on_flexmb_internals():
    """benchmarks/newton_element_length.py --corrections steps Newton by hand through flexmb's
    internals: it must keep working, and on a well-resolved link every matrix choice converges."""
    from newton_element_length import corrections

    r = corrections(4, 2.0, 3, count=4)
    for k in ("predictor", "refreshed", "refined"):
        seq = r[k]
        assert len(seq) == 4 and seq[0] > 0.0
        assert seq[2] < 1e-6 * seq[0], (k, seq)
    # the matrix formed at the step's start, one step's motion away, converges here too but not faster
    assert r["start"][2] >= r["predictor"][2] * 0.5


def test_long_double_product_of_a_lower_stored_symmetric_matrix():
    """benchmarks/newton_element_length.lower_times_ld: S x for S held by its lower triangle, in long
    double, equal to the dense symmetric product."""
    import scipy.sparse as sp
    from newton_element_length import lower_times_ld

    rng = np.random.default_rng(3)
    A = rng.standard_normal((7, 7))
    S = A + A.T
    x = rng.standard_normal(7)
    y = lower_times_ld(sp.csc_matrix(np.tril(S)), x)
    assert y.dtype == np.longdouble
    assert np.allclose(y.astype(float), S @ x, rtol=1e-14, atol=1e-14)


def test_large_corrections_diagnostic_runs_on_flexmb_internals():
    """benchmarks/newton_element_length.py --large: sparse factors, long-double refinement and GMRES on
    the residual's differences through flexmb's internals; on a well-resolved link every variant starts
    with the same correction and converges, and a solve is accurate."""
    from newton_element_length import large_corrections

    r = large_corrections(6, 2.0, 3)
    assert r["forward_error"] < 1e-10
    first = r["predictor"][0]
    for k in ("predictor", "refreshed", "refined", "both", "exact"):
        seq = r[k]
        assert len(seq) == 3 and abs(seq[0] - first) <= 1e-8 * first, (k, seq)
        assert seq[2] < 1e-6 * seq[0], (k, seq)
