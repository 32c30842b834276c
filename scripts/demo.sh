#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh), then runs the demo through the CLI: Sharma & Saha's
# two-link arm, driven, with joint torques by inverse dynamics compared with eq. (8); writes
# the result, ParaView files and plots into runs/sharma_saha_arm (or the folder given).
# --overwrite replaces an earlier run of the demo (flexmb deletes only its own run folders).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/flexmb run cases/sharma_saha_arm.py --out "${1:-runs/sharma_saha_arm}" --overwrite
