"""The built documentation site (issue 36), checked after ``bash scripts/docs.sh`` has built it.

scripts/docs.sh runs this file with FLEXMB_DOCS_SITE=docs/_build/html after sphinx-build; in the
ordinary test run (no built site named) the checks of the built site skip, and the checks that
need no build (every module has its API page source, the units table knows every parameter) run.

* every internal link and image of every page resolves: the file exists and so does its anchor;
* the API reference has an entry for every name of ``flexmb.__all__`` and for every
  ``ModelBuilder.add_*`` method and public builder function (``flexmb.add_visual``, ``from_urdf``,
  ...), with its parameters in the signature and a table of their units;
  every module of the package has a page, with an entry for every public class and function;
* the index, a tutorial, a gallery page and an API page render in headless Chromium: the DOM
  after the page's scripts ran holds its title, and a screenshot of it shows a styled page (not
  blank, not unstyled), saved in docs/_build/screenshots/.
"""

from __future__ import annotations

import html
import importlib
import inspect
import os
import pkgutil
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import unquote, urlsplit

import numpy as np
import pytest

import flexmb

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs" / "_ext"))
from flexmb_api import FUNCTION_UNITS, UNITS, function_parameters, method_parameters  # noqa: E402

SITE = Path(os.environ["FLEXMB_DOCS_SITE"]).resolve() if os.environ.get("FLEXMB_DOCS_SITE") else None
built = pytest.mark.skipif(SITE is None, reason="checks the built site: run by scripts/docs.sh (FLEXMB_DOCS_SITE)")

#: the pages the browser opens: the index, a tutorial, a gallery page, an API page (with their titles)
BROWSED = {
    "index.html": "flexmb",
    "auto_tutorials/tutorial_02_four_bar_cuts.html": "A four-bar closed three ways",
    "gallery/change_point_four_bar.html": "Change-point four-bar",
    "api/index.html": "API reference",
}


def modules() -> list[str]:
    """Every module of the flexmb package (flexmb.elements included)."""
    import flexmb.elements

    out = ["flexmb", "flexmb.elements"]
    for package in (flexmb, flexmb.elements):
        out += [info.name for info in pkgutil.walk_packages(package.__path__, package.__name__ + ".")]
    return sorted(set(out))


def public_objects(module) -> list[str]:
    """The classes and functions a module exports (``__all__``) that are its own (not imported from elsewhere)."""
    out = []
    for name in getattr(module, "__all__", ()):
        obj = getattr(module, name, None)
        if (inspect.isclass(obj) or inspect.isfunction(obj)) and getattr(obj, "__module__", None) == module.__name__:
            out.append(name)
    return out


# ---------------------------------------------------------------- without a build

def test_units_table_knows_every_parameter_of_every_builder_method():
    params = method_parameters(flexmb.ModelBuilder)
    assert {m for m in params if m.startswith("add_")} >= {"add_node", "add_body", "add_joint", "add_beam"}
    missing = {m: [p for p in ps if p not in UNITS.get(m, {})] for m, ps in params.items()}
    assert not any(missing.values()), f"docs/_ext/flexmb_api.py UNITS lacks {missing}"
    stale = {m: [p for p in UNITS[m] if p not in params.get(m, [])] for m in UNITS}
    assert not any(stale.values()), f"docs/_ext/flexmb_api.py UNITS names parameters the methods lack: {stale}"
    api = (ROOT / "docs" / "api" / "index.rst").read_text(encoding="utf-8")
    for m in params:
        if m != "__init__":
            assert f".. automethod:: flexmb.ModelBuilder.{m}\n" in api, m
        assert f".. flexmb-units:: {m}\n" in api, m
    for name in flexmb.__all__:
        if name != "__version__":
            assert re.search(rf"^\.\. auto(class|function|exception):: flexmb\.{name}$", api, re.M), name


def test_units_table_knows_every_parameter_of_every_public_builder_function():
    """The public functions named add_* (add_visual, add_beam_shapes) and from_urdf, make_flexible:
    every parameter in FUNCTION_UNITS, a units table after each entry."""
    params = function_parameters()
    assert {n for n in flexmb.__all__ if n.startswith("add_")} <= set(params)
    assert set(params) >= {"from_urdf", "make_flexible", "add_visual", "add_beam_shapes"}
    missing = {f: [p for p in ps if p not in FUNCTION_UNITS.get(f, {})] for f, ps in params.items()}
    assert not any(missing.values()), f"docs/_ext/flexmb_api.py FUNCTION_UNITS lacks {missing}"
    stale = {f: [p for p in FUNCTION_UNITS[f] if p not in params.get(f, [])] for f in FUNCTION_UNITS}
    assert not any(stale.values()), f"docs/_ext/flexmb_api.py FUNCTION_UNITS names parameters the functions lack: {stale}"
    api = (ROOT / "docs" / "api" / "index.rst").read_text(encoding="utf-8")
    for f in params:
        assert f".. autofunction:: flexmb.{f}\n\n.. flexmb-units:: flexmb.{f}\n" in api, f


def test_docstring_normalizer_makes_formulas_literal_and_escapes_bars():
    from flexmb_api import normalize_docstring

    lines = ["The force |F| on a pin:", "", "    tau = mu r |F_perp|    (1)", "next:",
             "    x = 1", "* a bullet", "  continued with |x|", "ends with ``failed: `` here"]
    out = normalize_docstring(lines)
    assert out[0] == r"The force \|F\| on a pin:"
    assert "::" in out[1] + out[2] + out[3] and "    tau = mu r |F_perp|    (1)" in out  # literal: left as written
    assert "next::" in out and "  continued with \\|x\\|" in out and "ends with ``failed:`` here" in out
    # literals pair left to right: the text between two of them keeps its spaces
    assert normalize_docstring(["``a``: b, c ``d`` e"]) == ["``a``: b, c ``d`` e"]
    # a simple table stays as written, its multi-line cells too (no literal block made of them)
    table = ["Kinds:", "", "====  ======", "a     b |x|", "c     d and", "      more", "====  ======", "", "after"]
    assert normalize_docstring(table) == table
    # a section title whose underline is one short (help() does not mind) gets a full one
    assert normalize_docstring(["Force elements", "-------------", "", "text"]) == ["Force elements", "-" * 14, "", "text"]


# ---------------------------------------------------------------- the built site

def _pages() -> list[Path]:
    """The site's pages (not the theme's templates under _static/)."""
    return sorted(p for p in SITE.rglob("*.html") if "_static" not in p.relative_to(SITE).parts)


_REF = re.compile(r"""\s(?:href|src)="([^"]*)\"""")
_ID = re.compile(r"""\s(?:id|name)="([^"]*)\"""")


@built
def test_every_internal_link_and_anchor_resolves():
    pages = _pages()
    assert len(pages) > 60, len(pages)
    ids: dict[Path, set[str]] = {}
    bad = []
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for ref in _REF.findall(text):
            ref = html.unescape(ref)
            parts = urlsplit(ref)
            if parts.scheme or ref.startswith("//") or not ref or ref.startswith("javascript:"):
                continue
            target = page if not parts.path else (page.parent / unquote(parts.path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                bad.append(f"{page.relative_to(SITE)}: {ref} (no such file)")
                continue
            if parts.fragment and target.suffix == ".html":
                if target not in ids:
                    ids[target] = set(_ID.findall(target.read_text(encoding="utf-8")))
                if unquote(parts.fragment) not in ids[target]:
                    bad.append(f"{page.relative_to(SITE)}: {ref} (no such anchor)")
    assert not bad, f"{len(bad)} broken internal links:\n" + "\n".join(bad[:50])


@built
def test_api_has_every_public_name_and_builder_method_with_parameters_and_units():
    text = (SITE / "api" / "index.html").read_text(encoding="utf-8")
    for name in flexmb.__all__:
        if name == "__version__":
            assert "flexmb.__version__" in text
            continue
        assert f'id="flexmb.{name}"' in text, name
    params = method_parameters(flexmb.ModelBuilder)
    entries = {m: text.index(f'id="flexmb.ModelBuilder.{m}"') for m in params if m != "__init__"}
    order = sorted(entries.values()) + [len(text)]
    for m, start in entries.items():
        entry = text[start:order[order.index(start) + 1]]
        assert 'class="table flexmb-units' in entry or "flexmb-units" in entry, m
        for p in params[m]:
            assert f'<span class="pre">{p}</span>' in entry, (m, p)  # in the signature and the units table
            assert entry.count(f"<span class=\"pre\">{p}</span>") >= 2, (m, p)
        doc = inspect.getdoc(getattr(flexmb.ModelBuilder, m))
        assert doc and doc.split()[0] in html.unescape(re.sub(r"<[^>]+>", "", entry)), m
    functions = function_parameters()
    starts = {f: text.index(f'id="flexmb.{f}"') for f in functions}
    order = sorted(set(starts.values()) | set(entries.values())) + [len(text)]
    for f, start in starts.items():
        entry = text[start:order[order.index(start) + 1]]
        assert "flexmb-units" in entry, f
        for p in functions[f]:
            assert entry.count(f'<span class="pre">{p}</span>') >= 2, (f, p)  # the signature and the units table


@built
def test_every_module_has_its_page_with_every_public_class_and_function():
    missing = []
    for name in modules():
        page = SITE / "api" / "generated" / f"{name}.html"
        if not page.exists():
            missing.append(f"{name}: no page")
            continue
        text = page.read_text(encoding="utf-8")
        index = (SITE / "api" / "index.html").read_text(encoding="utf-8")
        module = importlib.import_module(name)
        for obj in public_objects(module):
            public = obj in flexmb.__all__ and getattr(flexmb, obj) is getattr(module, obj)
            if f'id="{name}.{obj}"' not in text and not (public and f'id="flexmb.{obj}"' in index):
                missing.append(f"{name}.{obj}")
    assert not missing, missing


def _chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    assert exe, "chromium is not installed (scripts/docs.sh installs Debian's chromium)"
    return exe


def _browse(exe: str, url: str, *args: str) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory() as profile:
        cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--disable-dev-shm-usage", "--hide-scrollbars", f"--user-data-dir={profile}", *args, url]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


@built
@pytest.mark.parametrize("page", list(BROWSED))
def test_page_renders_in_a_real_browser(page):
    from PIL import Image

    exe = _chromium()
    path = SITE / page
    assert path.exists(), page
    url = path.as_uri()
    dom = _browse(exe, url, "--virtual-time-budget=5000", "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert BROWSED[page] in html.unescape(dom.stdout), f"{page}: the title {BROWSED[page]!r} is not in the rendered DOM"
    shots = SITE.parent / "screenshots"
    shots.mkdir(exist_ok=True)
    png = shots / (page.replace("/", "_").removesuffix(".html") + ".png")
    png.unlink(missing_ok=True)
    shot = _browse(exe, url, "--virtual-time-budget=5000", "--window-size=1280,1400", f"--screenshot={png}")
    assert shot.returncode == 0 and png.exists(), shot.stderr[-2000:]
    img = np.asarray(Image.open(png).convert("RGB"))
    assert img.shape[:2] == (1400, 1280), img.shape
    ink = (img.astype(int).sum(axis=2) < 600).mean()  # not white-ish
    colours = len(np.unique(img.reshape(-1, 3) // 16, axis=0))
    assert 0.01 < ink < 0.9, f"{page}: {ink:.1%} of the screenshot is drawn: blank or broken"
    assert colours > 30, f"{page}: only {colours} colours: the theme's styles did not load"
