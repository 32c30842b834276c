"""Sphinx configuration of flexmb's documentation site (built by scripts/docs.sh into docs/_build/html).

Sources: the pages in docs/ (Markdown through myst-parser; the theory pages equations_of_motion.md,
cut_damping.md, rigid_cut.md, loops.md, planar.md, model_frame.md, paraview.md, result_format.md and
architecture.md stay where the docstrings cite them), the tutorials in docs/tutorials/ (scripts run
by sphinx-gallery), the gallery of cases/ (run by docs/_ext/case_gallery.py) and the API reference
(autodoc + napoleon over the whole package, docs/api/).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS / "_ext"))
os.environ.setdefault("MPLBACKEND", "Agg")

import flexmb  # noqa: E402

project = "flexmb"
author = "the flexmb developers"
copyright = "the flexmb developers"  # noqa: A001
version = release = flexmb.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
    "sphinx_copybutton",
    "case_gallery",
    "flexmb_api",
]
#: FLEXMB_DOCS_QUICK=1: the pages and the API reference only, no tutorial or case run (a quick check while writing)
QUICK = os.environ.get("FLEXMB_DOCS_QUICK") == "1"
if QUICK:
    extensions = [e for e in extensions if e not in ("sphinx_gallery.gen_gallery", "case_gallery")]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "auto_tutorials/*.ipynb", "auto_tutorials/*.py", "auto_tutorials/*.zip",
                    "tutorials/GALLERY_HEADER.rst", "**/sg_execution_times.rst"]
templates_path = ["_templates"]

# Markdown
myst_enable_extensions = ["dollarmath", "colon_fence", "deflist"]
myst_heading_anchors = 4

# API reference: autodoc over every module (docs/api/), docstrings in prose with Numpy/Google sections
autosummary_generate = True
autosummary_imported_members = False
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_preserve_defaults = True
napoleon_numpy_docstring = True
napoleon_google_docstring = True

# Tutorials: each a script run by sphinx-gallery, its output shown below its code
sphinx_gallery_conf = {
    "examples_dirs": ["tutorials"],
    "gallery_dirs": ["auto_tutorials"],
    "filename_pattern": r"tutorial_",
    "ignore_pattern": r"__init__\.py",
    "within_subsection_order": "FileNameSortKey",
    "abort_on_example_error": True,
    "download_all_examples": False,
    "remove_config_comments": True,
    "capture_repr": (),
    "show_memory": False,
    "show_signature": False,
    "min_reported_time": 1e9,
    "write_computation_times": False,
}

# Theme
html_theme = "pydata_sphinx_theme"
html_title = f"flexmb {release}"
html_static_path = []
html_theme_options = {
    "navigation_depth": 3,
    "show_toc_level": 2,
    "header_links_before_dropdown": 7,
    "navbar_end": ["navbar-icon-links"],
    "secondary_sidebar_items": ["page-toc"],
}
html_show_sourcelink = False
html_last_updated_fmt = None
