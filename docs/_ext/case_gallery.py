"""The gallery of cases/: every case file run, and a page for each (docs/gallery/, generated).

At the start of a build, each file of ``cases/`` is run as a user runs it, in a subprocess:

* a case file (``DEFAULTS`` and ``build``): ``flexmb run CASE --out RUN --overwrite -q``, then
  ``flexmb animate RUN``;
* a study (``study_*.py``, a script that sweeps another case): ``python CASE --out RUN``.

The page of a case holds its docstring, the command, what it printed (its summary), every plot it
wrote, its animation and its code. The cases run as they are, with their own defaults (the
thirteen before excavator.py took about 5.5 minutes, 337 s measured on a loaded 2-core machine, the
UR5 of flexible_arm.py the longest at 55 s; excavator.py adds some 30 s; the whole sphinx-build about
7 minutes). Runs are kept in
docs/gallery/_runs/ with a stamp of the case file, the flexmb sources and the commands: a build
whose stamp is unchanged does not run the case again. A case that fails stops the build with its
output.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from sphinx.errors import ExtensionError
from sphinx.util import logging

log = logging.getLogger(__name__)

DOCS = Path(__file__).resolve().parents[1]
ROOT = DOCS.parent
CASES = ROOT / "cases"
OUT = DOCS / "gallery"
RUNS = OUT / "_runs"

def cases() -> list[Path]:
    """Every case file of cases/, by name."""
    return sorted(p for p in CASES.glob("*.py") if not p.name.startswith("_"))


def is_study(path: Path) -> bool:
    """A study script (sweeps another case) rather than a case file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets if isinstance(t, ast.Name)}
    names |= {node.target.id for node in tree.body if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)}
    return "DEFAULTS" not in names


def docstring(path: Path) -> tuple[str, str]:
    """(title, the rest) of the case's module docstring."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or path.stem
    title, _, rest = doc.strip().partition("\n")
    return title.strip(), rest.strip("\n")


def _sources_digest() -> str:
    h = hashlib.sha256()
    for folder in ("flexmb", "elements"):
        for p in sorted((ROOT / folder).rglob("*.py")):
            h.update(p.read_bytes())
    return h.hexdigest()


def _commands(path: Path, run: str) -> list[list[str]]:
    rel = str(path.relative_to(ROOT))
    if is_study(path):
        return [[sys.executable, rel, "--out", run]]
    return [[sys.executable, "-m", "flexmb.app.cli", "run", rel, "--out", run, "--overwrite", "-q"],
            [sys.executable, "-m", "flexmb.app.cli", "animate", run, "--overwrite"]]


def shown_command(path: Path) -> str:
    """The commands as a user types them (what the page shows; the run goes to runs/<name>)."""
    rel = str(path.relative_to(ROOT))
    if is_study(path):
        return f"python {rel}"
    return f"flexmb run {rel}\nflexmb animate runs/{path.stem}"


def run_case(path: Path, digest: str) -> dict:
    """Run one case (unless its stamp is unchanged) and return its record: output, time, files."""
    run = RUNS / path.stem
    rel_run = str(run.relative_to(ROOT))
    commands = _commands(path, rel_run)
    how = repr([c[1:] for c in commands])  # the commands without the interpreter's path
    stamp = hashlib.sha256((path.read_text(encoding="utf-8") + digest + how).encode()).hexdigest()
    record_file = RUNS / f"{path.stem}.json"
    if record_file.exists():
        record = json.loads(record_file.read_text(encoding="utf-8"))
        if record.get("stamp") == stamp and run.is_dir():
            return record
    if run.exists():
        shutil.rmtree(run)
    RUNS.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONUNBUFFERED="1")
    printed, t0 = [], time.perf_counter()
    for cmd in commands:
        log.info(f"[case gallery] {' '.join(cmd[1:])}")
        p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
        if p.returncode != 0:
            raise ExtensionError(f"case {path.name} failed (exit {p.returncode}): {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
        printed.append(p.stdout.rstrip().replace(str(run), rel_run).replace(rel_run, f"runs/{path.stem}"))
    record = {"stamp": stamp, "seconds": round(time.perf_counter() - t0, 1), "printed": "\n".join(s for s in printed if s)}
    record_file.write_text(json.dumps(record), encoding="utf-8")
    return record


def _indent_rst(text: str) -> list[str]:
    from flexmb_api import normalize_docstring

    return normalize_docstring(text.splitlines())


def page(path: Path, record: dict) -> str:
    """The Markdown of one case's page."""
    title, rest = docstring(path)
    run = RUNS / path.stem
    pngs = sorted(run.glob("*.png"))
    gif = run / "animation.gif"
    lines = [f"# {title}", "", f"`cases/{path.name}`", "", "```{eval-rst}", *_indent_rst(rest), "```", ""]
    lines += ["## Running it", "", "```bash", shown_command(path), "```", ""]
    lines += [f"It ran in {record['seconds']:.0f} s (wall time of the command{'s' if not is_study(path) else ''} "
              "above, on the machine that built this site) and printed:", "",
              "```text", record["printed"] or "(nothing)", "```", ""]
    if gif.exists():
        lines += ["## Animation", "", f"![{path.stem}: the mechanism moving](_runs/{path.stem}/animation.gif)", ""]
    if pngs:
        lines += ["## Plots", ""]
        for p in pngs:
            lines += [f"![{p.stem}](_runs/{path.stem}/{p.name})", ""]
    lines += ["## The code", "", f"```{{literalinclude}} ../../cases/{path.name}", ":language: python", "```", ""]
    return "\n".join(lines)


def index_page(entries: list[tuple[Path, str]]) -> str:
    """The gallery's index page (generated as gallery/index.md under docs): every case with its title and a picture."""
    lines = ["# Gallery", "",
             "Every case in `cases/`, run when this site was built: its description, what it printed, its plots, "
             "its animation and its code. `cases/README.md` gives the papers, figures and run times.", ""]
    lines += ["```{toctree}", ":hidden:", "", *[p.stem for p, _ in entries], "```", ""]
    for p, title in entries:
        run = RUNS / p.stem
        pic = run / "animation.gif" if (run / "animation.gif").exists() else next(iter(sorted(run.glob("*.png"))), None)
        lines += [f"## [{title}]({p.stem}.md)", ""]
        if pic is not None:
            lines += [f"```{{image}} _runs/{p.stem}/{pic.name}", ":width: 320px", f":target: {p.stem}.html",
                      f":alt: {p.stem}", "```", ""]
    return "\n".join(lines)


def _write(path: Path, text: str) -> None:
    """Write only a changed page (an unchanged one is not read again)."""
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def generate(app) -> None:
    OUT.mkdir(exist_ok=True)
    digest = _sources_digest()
    entries = []
    for path in cases():
        record = run_case(path, digest)
        _write(OUT / f"{path.stem}.md", page(path, record))
        entries.append((path, docstring(path)[0]))
    _write(OUT / "index.md", index_page(entries))


def setup(app):
    app.connect("builder-inited", generate)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
