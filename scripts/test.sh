#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh, and ParaView for the export tests with
# scripts/setup-paraview.sh), then runs the whole test suite. FLEXMB_REQUIRE_PARAVIEW=1 makes
# the ParaView test fail instead of skipping if pvbatch is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/setup-paraview.sh
export FLEXMB_REQUIRE_PARAVIEW=1
.venv/bin/python -m pytest -q --durations=30 "$@"  # the 30 slowest tests listed: the suite's budget is 15 min
