#!/usr/bin/env bash
# Installs Debian's ParaView (headless pvbatch) with Xvfb, about 1.3 GB: the test suite opens
# every ParaView export in real ParaView (tests/test_export.py). Called by scripts/test.sh only;
# the demo does not need it.
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
if ! command -v pvbatch >/dev/null 2>&1 || ! command -v xvfb-run >/dev/null 2>&1; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq paraview xvfb xauth >/dev/null
fi
echo "ParaView for the tests: $(pvbatch --version 2>/dev/null | tail -1)"
