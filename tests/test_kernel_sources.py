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


def _cache_file(folder: Path):
    from numba.core.caching import IndexDataCacheFile

    return IndexDataCacheFile(str(folder), "m.f-1.py311", ("stamp", 1))


def _lock_is_free(folder: Path) -> bool:
    import fcntl

    with open(folder / kernel_sources.LOCK_NAME, "a") as other:  # another open file: flock conflicts with the save's
        try:
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(other, fcntl.LOCK_UN)
        return True


def test_a_cache_save_holds_the_folder_lock_while_it_reads_and_writes_the_index(tmp_path):
    assert kernel_sources.lock_cache_writes()  # installed at import already: idempotent
    cache = _cache_file(tmp_path)
    seen = []
    load, write = cache._load_index, cache._save_index
    cache._load_index = lambda: (seen.append(("load", _lock_is_free(tmp_path))), load())[1]
    cache._save_index = lambda overloads: (seen.append(("write", _lock_is_free(tmp_path))), write(overloads))[1]
    cache.save(("sig a",), b"code a")
    assert seen == [("load", False), ("write", False)]  # another process could not have come between them
    assert _lock_is_free(tmp_path)  # released after the save
    cache.save(("sig b",), b"code b")
    fresh = _cache_file(tmp_path)
    assert fresh.load(("sig a",)) == b"code a" and fresh.load(("sig b",)) == b"code b"  # two data files


def _save_many(folder: str, tag: str, n: int) -> None:
    cache = _cache_file(Path(folder))
    for i in range(n):
        cache.save((tag, i), f"{tag} {i}".encode())


def test_two_processes_saving_other_signatures_at_once_keep_every_entry_apart(tmp_path):
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_save_many, args=(str(tmp_path), tag, 40)) for tag in ("a", "b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    assert [p.exitcode for p in procs] == [0, 0]
    cache = _cache_file(tmp_path)
    for tag in ("a", "b"):  # unlocked, entries are lost or point at the other process's data file
        assert [cache.load((tag, i)) for i in range(40)] == [f"{tag} {i}".encode() for i in range(40)]
