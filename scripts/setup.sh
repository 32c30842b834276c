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
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".[dev]"
.venv/bin/python -c "import sksparse.cholmod; print('flexmb set up: CHOLMOD available')"
