#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh, and ParaView for the export tests with
# scripts/setup-paraview.sh), then runs the whole test suite. FLEXMB_REQUIRE_PARAVIEW=1 makes
# the ParaView test fail instead of skipping if pvbatch is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/setup-paraview.sh
export FLEXMB_REQUIRE_PARAVIEW=1
# two worker processes (pytest-xdist; tests/conftest.py serializes their numba cache writes); the 30 slowest tests
# listed: the suite's budget is 15 min on two cores
.venv/bin/python -m pytest -q -n 2 --durations=30 "$@"
