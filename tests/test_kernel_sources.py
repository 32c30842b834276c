"""numba caches compiled from other sources are cleared at import (flexmb/kernel_sources.py,
docs/memory.md §6): numba checks a cached kernel against its own module only, so a callee changed in
another module would otherwise be run stale, silently."""

from __future__ import annotations

from pathlib import Path

from flexmb import kernel_sources


def _tree(tmp_path: Path) -> tuple[Path, Path]:
    pkg, elements = tmp_path / "pkg", tmp_path / "elements"
    for root, text in ((pkg, "def f():\n    return 1\n"), (elements, "def g():\n    return 2\n")):
        (root / "__pycache__").mkdir(parents=True)
        (root / "m.py").write_text(text)
    return pkg, elements


def _caches(*roots: Path) -> list[Path]:
    for root in roots:
        (root / "__pycache__" / "m.f-1.py311.nbi").write_bytes(b"index")
        (root / "__pycache__" / "m.f-1.py311.1.nbc").write_bytes(b"code")
    return sorted(p for root in roots for p in root.rglob("*.nb[ic]"))


def test_caches_of_unchanged_sources_are_kept_and_a_changed_callee_clears_them_all(tmp_path):
    roots = _tree(tmp_path)
    assert kernel_sources.clear_stale_caches(roots) == 0  # nothing cached yet; the digest is recorded
    assert (roots[0] / "__pycache__" / "kernel_sources").read_text() == kernel_sources.sources_digest(roots)
    cached = _caches(*roots)
    assert kernel_sources.clear_stale_caches(roots) == 0
    assert all(p.exists() for p in cached)
    # a callee in the *other* folder changes: numba would keep the caller's cache, this does not
    (roots[1] / "m.py").write_text("def g():\n    return 3\n")
    assert kernel_sources.clear_stale_caches(roots) == len(cached) == 4
    assert not any(p.exists() for p in cached)
    assert kernel_sources.clear_stale_caches(roots) == 0  # the new digest is recorded


def test_the_digest_depends_on_contents_and_names_not_on_where_the_tree_is(tmp_path):
    a = _tree(tmp_path / "a")
    b = _tree(tmp_path / "b")
    assert kernel_sources.sources_digest(a) == kernel_sources.sources_digest(b)
    (b[0] / "m.py").rename(b[0] / "n.py")
    assert kernel_sources.sources_digest(a) != kernel_sources.sources_digest(b)


def test_import_flexmb_recorded_the_digest_of_its_own_sources():
    stamp = kernel_sources.ROOTS[0] / "__pycache__" / "kernel_sources"
    assert stamp.read_text() == kernel_sources.sources_digest()
