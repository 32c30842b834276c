"""Shared test helpers: loading the case files of cases/ as modules."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

CASES = Path(__file__).resolve().parent.parent / "cases"


def load_case(name: str) -> ModuleType:
    """Import ``cases/<name>.py`` (cases/ is a folder of scripts, not a package)."""
    key = f"flexmb_case_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, CASES / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[key] = mod
        spec.loader.exec_module(mod)
    return sys.modules[key]
