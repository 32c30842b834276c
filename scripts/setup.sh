#!/usr/bin/env bash
# Sets up flexmb on a fresh Debian machine: SuiteSparse (CHOLMOD) from Debian, then a
# virtual environment .venv with flexmb and its Python dependencies (editable install).
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
if ! dpkg -s libsuitesparse-dev >/dev/null 2>&1; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq libsuitesparse-dev >/dev/null
fi
# CHOLMOD on OpenBLAS (issue 14): Debian's libopenblas0-pthread, selected system-wide for libblas.so.3 and
# liblapack.so.3 by update-alternatives (CHOLMOD's supernodal factorization of dense blocks is about 5x faster than on
# the reference BLAS). FLEXMB_BLAS=reference keeps (or restores) the reference BLAS. Sweeps start their worker
# processes with OPENBLAS_NUM_THREADS=1 (flexmb/app/executors.py); a single run uses OpenBLAS's default (all cores)
# unless OPENBLAS_NUM_THREADS is set. `flexmb info` and every benchmark report print the BLAS CHOLMOD loaded
# (blas_info() in flexmb/engine/linalg.py).
LIB=/usr/lib/x86_64-linux-gnu
select_blas() {  # $1: directory of the libblas.so.3 / liblapack.so.3 pair under $LIB (openblas-pthread or blas/lapack)
  if [ "$1" = reference ]; then set -- blas/libblas lapack/liblapack; else set -- "$1/libblas" "$1/liblapack"; fi
  for a in "$@"; do $SUDO update-alternatives --quiet --set "$(basename "$a").so.3-x86_64-linux-gnu" "$LIB/$a.so.3"; done
}
if [ "${FLEXMB_BLAS:-openblas}" = reference ]; then
  select_blas reference
else
  if ! dpkg -s libopenblas0-pthread >/dev/null 2>&1; then
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq libopenblas0-pthread >/dev/null
  fi
  select_blas openblas-pthread
fi
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# the test extra (Pinocchio), the peer (exudyn) and the docs tools too: the tests check the URDF import and the benchmark
# models against them, and the API reference's sources (tests/test_docs_site.py) with the docs extension
.venv/bin/python -m pip install -q -e ".[dev,test,bench,docs]"
.venv/bin/python -c "from flexmb.engine.linalg import blas_info; print('flexmb set up: CHOLMOD on', blas_info())"
# numba compiles the kernels on first use and caches them next to their modules: compile them now, once,
# so that the first run (and the first test) does not wait for it (flexmb/app/warm_up.py). Caches compiled from
# other sources go first: numba checks a cached kernel against its own module only, so a kernel whose callee in
# another module changed could be loaded stale (and crash) after an update. The sources' digest is kept in .venv.
digest=$(cat $(find flexmb elements -name '*.py' | sort) | sha256sum | cut -d' ' -f1)
if [ "$(cat .venv/.kernel_sources 2>/dev/null)" != "$digest" ]; then
  find flexmb elements -name '*.nbi' -delete -o -name '*.nbc' -delete
fi
.venv/bin/python -m flexmb.app.warm_up
echo "$digest" > .venv/.kernel_sources
