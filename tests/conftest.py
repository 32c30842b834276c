"""Shared test helpers: the case files of cases/ loaded as flexmb loads them
(flexmb.app.casefile: the one case loader), once per test session."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from flexmb.app.casefile import import_file
from flexmb.app.casefile import load_case as load_case_file

CASES = Path(__file__).resolve().parent.parent / "cases"
_LOADED: dict[str, ModuleType] = {}


def load_case(name: str) -> ModuleType:
    """The module of ``cases/<name>.py``, loaded by flexmb.app.casefile.load_case (which checks
    the case-file protocol); a study script (no ``build``) is imported by the same loader's
    ``import_file``."""
    if name not in _LOADED:
        path = CASES / f"{name}.py"
        _LOADED[name] = import_file(path) if name.startswith("study_") else load_case_file(path).module
    return _LOADED[name]
