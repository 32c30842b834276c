"""``flexmb.load``: read a result from either of its file forms, checked (flexmb.results.checks)."""

from __future__ import annotations

from pathlib import Path

from flexmb.errors import ResultFileError
from flexmb.results.checks import check_result
from flexmb.results.npz import read_result_fields
from flexmb.results.result import Result
from flexmb.results.rundir import load_run

__all__ = ["load"]


def load(path: str | Path) -> Result:
    """Read a result: a run directory streamed by ``simulate(..., out=DIR)`` (also one whose
    run was killed: ``status`` then starts with ``incomplete``) or an ``.npz`` written by
    :meth:`Result.save`. Never unpickles; a missing, foreign or damaged file gives a
    ResultFileError naming the file and what is wrong."""
    path = Path(path)
    if path.is_dir():
        return load_run(path)
    if not path.is_file():
        raise ResultFileError(f"result '{path}' does not exist; give a run directory or a .npz written by flexmb.")
    kw = read_result_fields(path)
    check_result(kw, str(path))
    return Result(**kw)
