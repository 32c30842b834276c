#!/usr/bin/env bash
# Builds the documentation site into docs/_build/html (issue 36), then checks it:
#   1. set-up: scripts/setup.sh, the `docs` extra (Sphinx, sphinx-gallery, myst-parser, the theme, Dask for
#      the study tutorial) and Debian's chromium for the screenshot check;
#   2. sphinx-build with warnings as errors (-W): the pages, the tutorials (docs/tutorials/, run by
#      sphinx-gallery), the gallery (every case of cases/ run as a user runs it: docs/_ext/case_gallery.py,
#      about 5.5 minutes (337 s) on a loaded 2-core machine, the whole sphinx-build about 7 (424-432 s); runs
#      whose case and flexmb sources are unchanged are reused from docs/gallery/_runs/) and the API
#      reference;
#   3. tests/test_docs_site.py on the built site: every internal link and anchor resolves, every name of
#      flexmb.__all__ and every ModelBuilder.add_* method has its API entry with parameters and units, and
#      the index, a tutorial, a gallery page and an API page render in headless Chromium (screenshots in
#      docs/_build/screenshots/).
# Options go to sphinx-build (e.g. -j 2). FLEXMB_DOCS_QUICK=1 skips the tutorials and the gallery (a quick
# look at the pages while writing them; the site checks then skip what is missing).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/python -m pip install -q -e ".[docs]"
if ! command -v chromium >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi
rm -rf docs/_build/html docs/_build/doctrees docs/auto_tutorials docs/api/generated
start=$(date +%s)
MPLBACKEND=Agg .venv/bin/python -m sphinx -W --keep-going -b html -d docs/_build/doctrees "$@" docs docs/_build/html
echo "docs: site built in $(( $(date +%s) - start )) s: docs/_build/html/index.html"
FLEXMB_DOCS_SITE=docs/_build/html .venv/bin/python -m pytest -q -p no:cacheprovider tests/test_docs_site.py
