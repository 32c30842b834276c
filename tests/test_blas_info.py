"""flexmb.engine.linalg.blas_info reports the BLAS that CHOLMOD actually loaded (issue 14): the
kind and file, from the process's memory map, never numpy's wheel-bundled copy."""

import os
import subprocess
import sys

import pytest

from flexmb.engine.linalg import _blas_library, blas_info

DEB = "/usr/lib/x86_64-linux-gnu"
NUMPY_BUNDLE = "/venv/lib/python3.11/site-packages/numpy.libs/libscipy_openblas64_-32a4b2a6.so"


def test_reference_blas_is_named_and_numpy_bundle_ignored():
    paths = {NUMPY_BUNDLE, f"{DEB}/libcholmod.so.3.0.14", f"{DEB}/blas/libblas.so.3.11.0", f"{DEB}/lapack/liblapack.so.3.11.0"}
    assert _blas_library(paths) == ("reference BLAS", f"{DEB}/blas/libblas.so.3.11.0")


def test_openblas_variant_is_named_from_its_file():
    pthread = f"{DEB}/openblas-pthread/libopenblasp-r0.3.21.so"
    paths = {NUMPY_BUNDLE, f"{DEB}/openblas-pthread/libblas.so.3", pthread}
    assert _blas_library(paths) == ("OpenBLAS (pthread)", pthread)
    openmp = f"{DEB}/openblas-openmp/libopenblaso-r0.3.21.so"
    assert _blas_library({f"{DEB}/openblas-openmp/libblas.so.3", openmp}) == ("OpenBLAS (OpenMP)", openmp)


def test_only_a_wheel_bundle_mapped_means_no_blas_found():
    assert _blas_library({NUMPY_BUNDLE, f"{DEB}/libcholmod.so.3.0.14"}) is None


def test_reported_file_is_mapped_in_this_process():
    info = blas_info()
    path = info.rsplit(" ", 1)[-1]
    with open("/proc/self/maps") as f:
        mapped = f.read()
    assert path.startswith("/") and path in mapped, info


def _blas_info_in_child(env_extra: dict) -> str:
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"} | env_extra
    code = "from flexmb.engine.linalg import blas_info; print(blas_info())"
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                          timeout=120).stdout.strip()


@pytest.mark.skipif(not os.path.exists(f"{DEB}/libblas.so.3"), reason="Debian's libblas.so.3 alternative not present")
def test_system_alternative_is_what_cholmod_loads():
    target = os.path.realpath(f"{DEB}/libblas.so.3")  # the BLAS selected by update-alternatives
    info = _blas_info_in_child({})
    if os.path.basename(os.path.dirname(target)) == "blas":
        assert info == f"reference BLAS {target}"
    else:
        assert info.startswith("OpenBLAS") and os.path.dirname(target) in info, (target, info)


@pytest.mark.skipif(not os.path.isdir(f"{DEB}/openblas-pthread"), reason="libopenblas0-pthread not installed")
def test_ld_library_path_selects_openblas_per_process():
    info = _blas_info_in_child({"LD_LIBRARY_PATH": f"{DEB}/openblas-pthread", "OPENBLAS_NUM_THREADS": "1"})
    assert info.startswith("OpenBLAS (pthread, 1 thread(s); OpenBLAS 0.3"), info
    assert info.endswith(".so") and f"{DEB}/openblas-pthread/libopenblas" in info, info


@pytest.mark.skipif(not os.path.isdir(f"{DEB}/openblas-pthread"), reason="libopenblas0-pthread not installed")
def test_sweep_workers_run_openblas_on_one_thread(monkeypatch):
    """A sweep's worker processes (flexmb.app.executors, spawned) get one BLAS thread each, though this
    process sets no thread count (OpenBLAS would start one thread per core); the parent's environment is
    left as it was."""
    from flexmb.app.executors import run_tasks

    monkeypatch.setenv("LD_LIBRARY_PATH", f"{DEB}/openblas-pthread")  # OpenBLAS whatever the system selects
    for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(k, raising=False)
    got = {}
    run_tasks(blas_info, [("a", ()), ("b", ())], got.__setitem__, lambda k, e: got.__setitem__(k, repr(e)), workers=2)
    assert set(got) == {"a", "b"}
    for info in got.values():
        assert info.startswith("OpenBLAS (pthread, 1 thread(s);"), info
    assert "OPENBLAS_NUM_THREADS" not in os.environ
