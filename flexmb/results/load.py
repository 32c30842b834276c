"""``flexmb.load``: read a result from either of its file forms, checked (flexmb.results.checks),
lazily: the structure of every file is checked when it is opened, the per-row arrays are read
when first used (flexmb.results.result)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import fields as dc_fields
from pathlib import Path

from flexmb.errors import ResultFileError, SettingsError
from flexmb.results.checks import check_result
from flexmb.results.npz import ArraySpec, read_result_fields
from flexmb.results.result import Result
from flexmb.results.rundir import load_run

__all__ = ["load"]


def load(path: str | Path, fields: Iterable[str] | None = None, t: tuple[float, float] | None = None) -> Result:
    """Read a result: a run directory streamed by ``simulate(..., out=DIR)`` (also one whose
    run was killed: ``status`` then starts with ``incomplete``) or an ``.npz`` written by
    :meth:`Result.save`. Never unpickles; a missing, foreign or damaged file gives a
    ResultFileError naming the file and what is wrong.

    The result is lazy: every file's structure (JSON, chunk list, each array's header against
    the bytes it holds, the counts in ``end.json``) is checked now, the output times are read
    (they must be finite and strictly increasing), and each per-row array (``x``,
    ``reactions``, ...), ``energy`` and ``steps`` is read when first used. ``fields``: names
    of those to read now (e.g. ``("q", "energy")``); ``t``: a time range ``(t0, t1)``: only
    the rows with t0 <= t <= t1 (of a run directory, only the chunks holding them are ever
    read; same as ``load(path).window(t0, t1)``)."""
    path = Path(path)
    if t is not None:
        if not (isinstance(t, (tuple, list)) and len(t) == 2
                and all(isinstance(v, (int, float)) and not isinstance(v, bool) and not math.isnan(v) for v in t)
                and t[0] <= t[1]):
            raise SettingsError(f"load: t = {t!r} must be a time range (t0, t1) with t0 <= t1")
    wanted = tuple(fields) if fields is not None else ()
    known = {f.name for f in dc_fields(Result)}
    bad = [f for f in wanted if f not in known]
    if bad:
        raise SettingsError(f"load: fields {bad} are not Result fields; known: {sorted(known)}")
    if path.is_dir():
        res = load_run(path)
    elif not path.is_file():
        raise ResultFileError(f"result '{path}' does not exist; give a run directory or a .npz written by flexmb.")
    else:
        kw, source = read_result_fields(path)
        check_result(kw, str(path))
        times = kw.pop("t")
        static = {k: v for k, v in kw.items() if not isinstance(v, ArraySpec) and k not in ("energy", "steps")}
        res = Result.from_source(source, 0, times.shape[0], times, **static)
    if t is not None:
        res = res.window(float(t[0]), float(t[1]))
    for name in wanted:
        getattr(res, name)
    return res
