"""The repository stands on its own (docs/architecture.md, "Self-contained"): everything the code
cites lives in it. Scans every .py, .md, .sh and .toml file of the repository (not .venv, .git or
build output) and reports

(a) references to design files that are not in the repository: the design guide by its upper-case
    name, its ParaView or cut notes by file name (unless they are docs pages), and paths into the
    shared folders outside the repository ("/work/", the parent's shared folder, a relative "shared/" path);
(b) repository paths that do not exist: a docs page ("docs/<name>.md"), a file under flexmb/,
    elements/, tests/, cases/, benchmarks/, scripts/ or docs/ (also written relative to the flexmb
    or elements package, e.g. "engine/kinematics.py"), a bare "<name>.md" that no file of the
    repository is called; in .py files only their docstrings and comments are read for (b);
(c) a section "§n" or an equation "(tag)" cited right after a docs page that the page does not have;
(d) in the documentation site's Markdown pages (docs/): a link or image ``[text](target)`` and a
    ``{doc}`` reference whose target is not in the repository (relative to the page, or to docs/ for
    a ``{doc}`` path starting with "/"). Targets the build generates (the tutorials' pages, the
    gallery, the module pages of the API reference) are checked in the built site by
    tests/test_docs_site.py instead.

The site's generated pages and build output (docs/_build, docs/auto_tutorials, docs/gallery,
docs/api/generated) are left out of the scan: they are not the repository's.

This file itself holds the patterns and is left out of the scan; the checker is shown to find a
planted reference of every kind (test_the_checker_reports_planted_references).
"""

from __future__ import annotations

import io
import os
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXTENSIONS = (".py", ".md", ".sh", ".toml", ".rst")
SKIP_DIRS = {".venv", ".git", "__pycache__", "flexmb.egg-info", "build", "dist", ".pytest_cache", ".ruff_cache"}
#: what the documentation build generates (scripts/docs.sh; .gitignore)
GENERATED = {ROOT / "docs" / "_build", ROOT / "docs" / "auto_tutorials", ROOT / "docs" / "gallery",
             ROOT / "docs" / "api" / "generated"}
TOP = ("docs", "flexmb", "elements", "tests", "cases", "benchmarks", "scripts")
PACKAGE_DIRS = {"engine": "flexmb", "solvers": "flexmb", "builder": "flexmb", "results": "flexmb", "app": "flexmb",
                "analysis": "flexmb", "beam": "elements", "rigid_body": "elements"}

#: (a): what names a file outside the repository
OUTSIDE = [
    (re.compile(r"\bDESIGN\b"), "the design guide outside the repository"),
    (re.compile(r"(?<![\w/-])PARAVIEW\.md"), "a ParaView note outside the repository (docs/paraview.md?)"),
    (re.compile(r"(?<![\w/-])cuts\.md"), "a cut note outside the repository (docs/loops.md, docs/cut_damping.md?)"),
    (re.compile(r"/work/"), "a path outside the repository"),
    (re.compile(r"\.\./shared"), "a path outside the repository"),
    (re.compile(r"(?<![\w./-])shared/"), "a path outside the repository"),
    (re.compile(r"(?i)\bdesign note\b"), "a design note outside the repository"),
]
_EXT = r"(?:py|md|sh|toml|png)"
#: (b): a path with a folder (not after a word, dot, slash or wildcard: not part of a URL, a glob or an absolute path)
PATH = re.compile(r"(?<![\w./*~$<-])((?:[\w-]+/)+[\w.-]*\w\." + _EXT + r")(?![\w/])")
BARE_MD = re.compile(r"(?<![\w./*~$<-])([\w-]+\.md)\b")
#: (c): sections and equations cited right after a docs page
CITED = re.compile(r"docs/([\w-]+\.md)((?:,? ?(?:§\s?\d+(?:\.\d+)*|\((?:[A-Z]{0,3}\d+[a-z]?)\)))+)")
_SECTION = re.compile(r"§\s?(\d+(?:\.\d+)*)")
_TAG = re.compile(r"\(([A-Z]{0,3}\d+[a-z]?)\)")


def _walk() -> list[Path]:
    """Every file of the repository (the skipped folders pruned, not walked)."""
    out = []
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and Path(folder) / d not in GENERATED]
        out += [Path(folder) / f for f in files]
    return out


def repository_files() -> list[Path]:
    """Every file the scan reads, this one excepted."""
    return sorted(p for p in _walk() if p.suffix in EXTENSIONS and p != Path(__file__).resolve())


def _all_names() -> set[str]:
    return {p.name for p in _walk()}


def prose(text: str, suffix: str) -> str:
    """The part of a file that may cite paths: the docstrings and comments of Python, everything
    else blanked (line and column of every character kept); the whole of any other file."""
    if suffix != ".py":
        return text
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return text
    out = [re.sub(r"[^\n]", " ", line) for line in text.splitlines(keepends=True)]
    previous = tokenize.NEWLINE
    for tok in tokens:
        docstring = tok.type == tokenize.STRING and previous in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                                                                 tokenize.ENCODING)  # a string that is a statement
        if tok.type == tokenize.COMMENT or docstring:
            (row, col) = tok.start
            for i, part in enumerate(tok.string.split("\n")):
                line, c = out[row - 1 + i], col if i == 0 else 0
                out[row - 1 + i] = line[:c] + part + line[c + len(part):]
        if tok.type not in (tokenize.COMMENT, tokenize.NL):
            previous = tok.type
    return "".join(out)


def _exists(ref: str, here: Path) -> bool:
    first = ref.split("/", 1)[0]
    if first in TOP:
        return (ROOT / ref).exists()
    if first in PACKAGE_DIRS:
        return (ROOT / PACKAGE_DIRS[first] / ref).exists() or (here.parent / ref).exists()
    return True  # not a repository path (a run folder, a placeholder such as DIR/, a file made by a test)


def _page_has(page: Path, cited: str) -> list[str]:
    """The sections and equation tags of ``cited`` that ``page`` lacks."""
    text = page.read_text(encoding="utf-8")
    heads = set(re.findall(r"^#{2,4}\s+(\d+(?:\.\d+)*)\.?\s", text, flags=re.M))
    missing = [f"§{n}" for n in _SECTION.findall(cited) if n not in heads]
    return missing + [f"({t})" for t in _TAG.findall(cited) if f"({t})" not in text]


def _missing(cited: str, path: Path, names: set[str], reported) -> list[tuple[int, str]]:
    """(b) and (c) on ``cited``: (position, what) of every path, page, section or tag that does not exist."""
    out = []
    for m in PATH.finditer(cited):
        if not _exists(m.group(1), path) and not reported(m):
            out.append((m.start(), f"{m.group(1)!r} is not in the repository"))
    for m in BARE_MD.finditer(cited):
        if m.group(1) not in names and not reported(m):
            out.append((m.start(), f"{m.group(1)!r}: no file of the repository has this name"))
    for m in CITED.finditer(cited):
        page = ROOT / "docs" / m.group(1)
        if page.exists():
            out += [(m.start(), f"docs/{m.group(1)} has no {miss}") for miss in _page_has(page, m.group(2))]
    return out


_MD_LINK = re.compile(r"!?\[[^\]\n]*\]\(([^)\s]+)\)")
_DOC_ROLE = re.compile(r"\{doc\}`(?:[^`<]*<([^>`]+)>|([^`<]+))`")
_GENERATED_DOCS = ("auto_tutorials/", "gallery/", "api/generated/")


def _site_target_exists(target: str, page: Path, doc: bool) -> bool:
    """Whether a link or ``{doc}`` target of the docs page ``page`` is in the repository (or generated)."""
    target = target.split("#", 1)[0]
    if not target:
        return True
    base = ROOT / "docs" if doc and target.startswith("/") else page.parent
    path = (base / target.lstrip("/")).resolve()
    docs = (ROOT / "docs").resolve()
    if path.is_relative_to(docs) and str(path.relative_to(docs)).replace(os.sep, "/").startswith(_GENERATED_DOCS):
        return True  # made by the build: tests/test_docs_site.py checks it in the built site
    if doc:
        return any(path.with_name(path.name + ext).exists() for ext in (".md", ".rst"))
    return path.exists() or (path.suffix == ".html" and any(path.with_suffix(e).exists() for e in (".md", ".rst")))


def site_links(text: str, path: Path) -> list[tuple[int, str]]:
    """(d): (position, what) of every link, image or ``{doc}`` target of a docs Markdown page that does not exist."""
    out = []
    for m in _MD_LINK.finditer(text):
        target = m.group(1)
        if "://" in target or target.startswith(("mailto:", "#")):
            continue
        if not _site_target_exists(target, path, doc=False):
            out.append((m.start(), f"link target {target!r} is not in the repository"))
    for m in _DOC_ROLE.finditer(text):
        target = (m.group(1) or m.group(2)).strip()
        if not _site_target_exists(target, path, doc=True):
            out.append((m.start(), f"{{doc}} target {target!r} is not a page of the site"))
    return out


def problems(text: str, path: Path, names: set[str] | None = None) -> list[str]:
    """Every bad reference in ``text``, the contents of the repository file ``path``, as 'path:line: what'."""
    names = _all_names() if names is None else names
    rel = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    out = []

    def report(pos: int, what: str) -> None:
        out.append(f"{rel}:{text.count(chr(10), 0, pos) + 1}: {what}")

    outside = []
    for pattern, what in OUTSIDE:
        for m in pattern.finditer(text):
            report(m.start(), f"{m.group(0)!r}: {what}")
            outside.append(m.span())

    def reported(m: re.Match) -> bool:  # already reported under (a)
        return any(a < m.end() and m.start() < b for a, b in outside)

    missing = _missing(text, path, names, reported)
    if missing and path.suffix == ".py":  # tokenizing is slow: only where something is missing
        missing = _missing(prose(text, path.suffix), path, names, reported)
    for pos, what in missing:
        report(pos, what)
    if path.suffix == ".md" and path.is_relative_to(ROOT / "docs"):
        for pos, what in site_links(text, path):
            report(pos, what)
    return out


def test_the_repository_cites_only_what_it_holds():
    names = _all_names()
    files = repository_files()
    assert len(files) > 150 and ROOT / "docs" / "equations_of_motion.md" in files
    found = [p for f in files for p in problems(f.read_text(encoding="utf-8"), f, names)]
    assert not found, "references to files outside the repository or to missing ones:\n" + "\n".join(found)


def test_the_checker_reports_planted_references():
    """Every kind of bad reference, planted in a docstring, a comment and a page, is reported with its line."""
    here = ROOT / "flexmb" / "planted.py"
    design = "DES" + "IGN"  # spelled apart so that this file holds none of the planted references
    planted = "\n".join([
        '"""A module citing its design (' + design + ' §4), a note ("' + "PARA" + 'VIEW.md") and',
        "design" + " note " + "cu" + "ts.md §5.2, a seed at .." + "/shared/seeds/x.txt and /wo" + "rk/design/a.md.",
        "Repository paths: docs/no_such_page.md, flexmb/engine/no_such.py, engine/kinematics.py (fine),",
        "flexmb/friction.py (moved), tests/cut_mechanisms.py (fine), docs/loops.md §9, docs/cut_damping.md (D99),",
        "docs/cut_damping.md (D2) and docs/loops.md §1.4 (fine), a bare NOTES.md, " + "shar" + "ed/BENCH.md",
        '"""',
        "x = 'flexmb/not_checked_in_code.py'  # but a comment is: scripts/missing.sh",
    ])
    found = problems(planted, here)
    expected = [
        ("flexmb/planted.py:1:", design), ("flexmb/planted.py:1:", "ParaView note"),
        ("flexmb/planted.py:2:", "design note"), ("flexmb/planted.py:2:", "cut note"), ("flexmb/planted.py:2:", ".." + "/shared"),
        ("flexmb/planted.py:2:", "/work/"), ("flexmb/planted.py:3:", "docs/no_such_page.md"),
        ("flexmb/planted.py:3:", "flexmb/engine/no_such.py"), ("flexmb/planted.py:4:", "flexmb/friction.py"),
        ("flexmb/planted.py:4:", "docs/loops.md has no §9"), ("flexmb/planted.py:4:", "docs/cut_damping.md has no (D99)"),
        ("flexmb/planted.py:5:", "'NOTES.md'"), ("flexmb/planted.py:5:", "'shared/'"),
        ("flexmb/planted.py:7:", "scripts/missing.sh"),
    ]
    for line, what in expected:
        assert any(f.startswith(line) and what in f for f in found), (line, what, found)
    assert len(found) == len(expected), found  # and nothing else: the fine references and code strings pass


def test_the_checker_reports_broken_site_links():
    """(d): a docs page's Markdown links, images and {doc} references must name what is there."""
    page = ROOT / "docs" / "guide" / "planted.md"
    text = "\n".join([
        "[fine](../loops.md) and [fine too](../loops.md#2-four-bars), ![fine](../arm_paraview.png),",
        "{doc}`fine <../equations_of_motion>`, {doc}`/theory` and {doc}`generated <../gallery/index>`;",
        "[missing](../no_page.md), ![missing](nothing.png), {doc}`gone <../nowhere>`, {doc}`/absent`,",
        "[external](https://example.org/x.md) and [anchor](#here) are not checked.",
    ])
    found = problems(text, page)
    assert len(found) == 4 and all(f.startswith("docs/guide/planted.md:3:") for f in found), found
    for what in ("no_page.md", "nothing.png", "nowhere", "absent"):
        assert any(what in f for f in found), (what, found)
