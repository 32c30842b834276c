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
# OpenBLAS for CHOLMOD (issue 14). The reference BLAS stays selected system-wide for now (results are compared bit
# for bit against references computed with it): set before and after the install, so no process sees a switch.
# Per process: LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-pthread OPENBLAS_NUM_THREADS=1 (blas_info() in
# flexmb/engine/linalg.py reports which BLAS CHOLMOD loaded).
LIB=/usr/lib/x86_64-linux-gnu
reference_blas() { for a in blas/libblas lapack/liblapack; do $SUDO update-alternatives --quiet --set "${a#*/}.so.3-x86_64-linux-gnu" "$LIB/$a.so.3"; done; }
dpkg -s libopenblas0-pthread >/dev/null 2>&1 || { reference_blas; $SUDO apt-get update -qq; DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq libopenblas0-pthread >/dev/null; }
reference_blas
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".[dev]"
.venv/bin/python -c "import sksparse.cholmod; print('flexmb set up: CHOLMOD available')"
