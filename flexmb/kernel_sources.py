"""numba caches compiled from other sources are cleared before a kernel is loaded (docs/memory.md §6).

numba checks a cached kernel (``cache=True``) against its own module only: the module's modification
time and size. A kernel whose callee in *another* module changed is loaded as it was compiled, with the
old callee inlined, silently (or it crashes on a changed signature). A checkout that changes
``elements/rigid_cut_kernels.py`` but not ``flexmb/solvers/element_families.py`` would run the old rigid
cut inside the compiled step while the Python step ran the new one. ``scripts/setup.sh`` clears such
caches at set-up; :func:`clear_stale_caches` does the same at ``import flexmb``, for a working copy edited
after its set-up: the digest of every kernel source (the ``.py`` files of ``flexmb/`` and ``elements/``)
is compared with the one the caches were compiled from, kept in ``flexmb/__pycache__/kernel_sources``,
and where they differ the caches next to the sources (``__pycache__/*.nbi``, ``*.nbc``) are deleted.
It costs one read of the sources per import (about 5 ms); an installed copy whose folders are not
writable keeps numba's own caches elsewhere and is left alone.

Processes that compile at the same time into one cache (a sweep's local workers after an update, the test
suite's two workers) could otherwise give two signatures of one kernel the same data file: numba's
``IndexDataCacheFile.save`` reads the index, takes the first free file number and writes the index back,
with nothing between two processes. The process that loads that signature later would run the other
signature's machine code. :func:`lock_cache_writes` makes each save hold an exclusive ``flock`` on
``numba_cache.lock`` in the cache's folder (POSIX; elsewhere numba's saves are left as they are).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

try:
    import fcntl
except ImportError:  # not POSIX: numba's cache saves unlocked
    fcntl = None  # type: ignore[assignment]

__all__ = ["clear_stale_caches", "lock_cache_writes", "sources_digest", "LOCK_NAME"]

LOCK_NAME = "numba_cache.lock"
"""The lock file of a numba cache folder that :func:`lock_cache_writes` holds while a cache entry is saved."""

#: the folders of flexmb's kernel sources: the package and the element library beside it
ROOTS = (Path(__file__).resolve().parent, Path(__file__).resolve().parent.parent / "elements")


def sources_digest(roots: tuple[Path, ...] = ROOTS) -> str:
    """SHA-256 of the ``.py`` files below ``roots``, their paths relative to the roots' parent and their
    contents, in sorted order (the same digest on every machine for the same sources)."""
    h = hashlib.sha256()
    for root in roots:
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*.py")):
            h.update(path.relative_to(root.parent).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def clear_stale_caches(roots: tuple[Path, ...] = ROOTS) -> int:
    """Delete the numba caches below ``roots`` if they were compiled from other sources (a digest
    other than :func:`sources_digest`'s, or none recorded); record the digest. Returns how many cache
    files were deleted. Never raises for a folder it cannot write: the caches are then numba's to keep."""
    stamp = roots[0] / "__pycache__" / "kernel_sources"
    digest = sources_digest(roots)
    try:
        if stamp.read_text() == digest:
            return 0
    except OSError:
        pass
    removed = 0
    for root in roots:
        for path in list(root.rglob("__pycache__/*.nb[ic]")):
            try:
                path.unlink()
                removed += 1
            except OSError:
                pass
    try:
        stamp.parent.mkdir(exist_ok=True)
        tmp = stamp.with_name(f"kernel_sources.{os.getpid()}")
        tmp.write_text(digest)
        tmp.replace(stamp)
    except OSError:
        pass
    return removed


def lock_cache_writes() -> bool:
    """Make numba's cache saves (``numba.core.caching.IndexDataCacheFile.save``: read the index, choose the
    data file, write both) hold an exclusive ``flock`` on :data:`LOCK_NAME` in the cache's folder, so that
    processes compiling at the same time never give two signatures one data file (module docstring). Idempotent;
    False where ``fcntl`` is missing (the saves are left as numba has them)."""
    if fcntl is None:
        return False
    from numba.core import caching

    save = caching.IndexDataCacheFile.save
    if getattr(save, "flexmb_locked", False):
        return True

    def locked_save(self, key, data):
        """numba's save of (key, data) under the folder's lock."""
        with open(os.path.join(self._cache_path, LOCK_NAME), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                return save(self, key, data)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    locked_save.flexmb_locked = True  # type: ignore[attr-defined]
    caching.IndexDataCacheFile.save = locked_save
    return True


lock_cache_writes()  # at import, before any kernel is compiled
clear_stale_caches()  # at import: flexmb/__init__.py imports this module before any kernel module
