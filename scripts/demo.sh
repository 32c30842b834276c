#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh), then runs the demo: Sharma & Saha's two-link arm,
# driven, with joint torques by inverse dynamics; writes ParaView files and plots.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/python cases/sharma_saha_arm.py --out "${1:-runs/sharma_saha_arm}"
