"""Case files: the protocol shared by the CLI and every mechanism in cases/.

A case is a Python file with

* ``DEFAULTS: dict`` — every model parameter with its default, plus the run settings
  ``t_end``, ``dt`` and optionally ``rho_inf``, ``output_every`` (defaults in
  :class:`flexmb.settings.RunSettings`);
* ``build(**params) -> flexmb.Model`` — the model from its parameters (run settings are not
  passed; missing parameters come from DEFAULTS);
* optionally ``postprocess(result, model, params, out_dir) -> dict`` — the case's own plots
  and files, and a summary (str -> number/str) to print;
* optionally ``companions(params) -> dict[str, dict]`` — further runs the postprocess compares
  with (label -> parameter overrides on top of the run's); flexmb starts them on a spare core
  while the main run runs and passes them as ``postprocess(..., companions={label:
  Companion(model, result, params)})`` (flexmb.app.companions);
* optionally ``monitor(model, params) -> callback`` — a ``simulate`` callback ``(state,
  evaluation) -> str | None`` run after every step; a returned string ends the run with status
  ``stopped: <string>`` (e.g. a mechanism driven into a singular configuration,
  flexmb.analysis.monitors.SingularityMonitor); the postprocess then still runs;
* a module docstring whose first line is a one-line title.

Parameter values given on the command line are Python *literals* (``ast.literal_eval``: numbers,
strings, lists, tuples, dicts, True/False/None), never evaluated code; a bare word is a
string. A value must fit its default's type (a number for a number, …).
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import numbers
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from flexmb.errors import CaseError, SettingsError
from flexmb.settings import SETTING_NAMES, RunSettings

if TYPE_CHECKING:  # type hints only
    from flexmb.model import Model
    from flexmb.results.result import Result

__all__ = ["Case", "CaseError", "RUN_SETTINGS", "import_file", "load_case", "parse_param", "resolve_params"]

RUN_SETTINGS = SETTING_NAMES
_BARE_WORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")


@dataclass(frozen=True)
class Case:
    """A loaded case file."""

    path: Path
    name: str
    title: str
    defaults: dict[str, Any]
    module: ModuleType

    @property
    def model_parameters(self) -> dict[str, Any]:
        """DEFAULTS without the run settings."""
        return {k: v for k, v in self.defaults.items() if k not in RUN_SETTINGS}

    def settings(self, params: dict[str, Any]) -> RunSettings:
        """The run settings of ``params`` (resolved parameters of this case)."""
        return RunSettings.from_params(params)

    def build(self, params: dict[str, Any]) -> Model:
        """The model for ``params`` (run settings left out)."""
        return self.module.build(**{k: v for k, v in params.items() if k not in RUN_SETTINGS})

    def monitor(self, model: Model, params: dict[str, Any]):
        """The case's run callback (None when it defines no ``monitor``)."""
        f = getattr(self.module, "monitor", None)
        return f(model, dict(params)) if f is not None else None

    @property
    def takes_companions(self) -> bool:
        """Whether the case defines ``companions`` and its postprocess takes them."""
        f = getattr(self.module, "postprocess", None)
        return callable(getattr(self.module, "companions", None)) and f is not None and _takes(f, "companions")

    def postprocess(self, result: Result, model: Model, params: dict[str, Any], out_dir: Path,
                    companions: Mapping[str, Any] | None = None) -> dict:
        """The case's own outputs and summary ({} when it defines no postprocess); ``companions``
        (flexmb.app.companions) are passed when its signature takes them."""
        f = getattr(self.module, "postprocess", None)
        if f is None:
            return {}
        extra = {"companions": companions} if companions is not None and _takes(f, "companions") else {}
        return dict(f(result, model, dict(params), Path(out_dir), **extra) or {})


def _takes(f: Any, name: str) -> bool:
    """Whether the function ``f`` takes a keyword argument ``name``."""
    try:
        params = inspect.signature(f).parameters
    except (TypeError, ValueError):
        return False
    p = params.get(name)
    return (p is not None and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)) or any(
        q.kind is q.VAR_KEYWORD for q in params.values())


def import_file(path: str | Path) -> ModuleType:
    """Import the Python file ``path`` as a module named ``flexmb_case_<stem>`` (registered in
    ``sys.modules``); CaseError naming the file and the line when it does not import."""
    p = Path(path)
    if not p.is_file():
        raise CaseError(f"case file '{p}' not found",
                        "give the path of a Python case file, e.g. cases/sharma_saha_arm.py")
    mod_name = f"flexmb_case_{re.sub(r'[^0-9A-Za-z_]', '_', p.stem)}"
    spec = importlib.util.spec_from_file_location(mod_name, p)
    if spec is None or spec.loader is None:
        raise CaseError(f"'{p}' cannot be imported as a Python file", "a case file is a .py file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module  # dataclasses and pickling-free helpers need the module registered
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        raise CaseError(f"case file '{p}' has a syntax error at line {exc.lineno}: {exc.msg}",
                        "fix the file; python -m py_compile shows the same error") from None
    except Exception as exc:
        line = _last_line_in(exc, p)
        raise CaseError(f"case file '{p}' failed to load{line}: {type(exc).__name__}: {exc}",
                        "run with --debug for the traceback") from exc
    return module


def load_case(path: str | Path) -> Case:
    """Import the case file ``path`` and check that it follows the protocol."""
    p = Path(path)
    module = import_file(p)
    name = p.stem
    defaults = getattr(module, "DEFAULTS", None)
    if not isinstance(defaults, dict) or not callable(getattr(module, "build", None)):
        raise CaseError(f"'{p}' is not a flexmb case: it needs a DEFAULTS dict and a build(**params) function",
                        "see the case-file protocol in docs/guide/cli.md")
    missing = [k for k in ("t_end", "dt") if k not in defaults]
    if missing:
        raise CaseError(f"case '{name}': DEFAULTS lacks the run settings {missing}",
                        "add t_end, dt (and rho_inf) to DEFAULTS")
    doc = (module.__doc__ or "").strip()
    return Case(p, name, doc.splitlines()[0] if doc else name, dict(defaults), module)


def _last_line_in(exc: BaseException, p: Path) -> str:
    tb, line = exc.__traceback__, None
    while tb is not None:
        if Path(tb.tb_frame.f_code.co_filename).resolve() == p.resolve():
            line = tb.tb_lineno
        tb = tb.tb_next
    return f" (line {line})" if line else ""


def parse_param(text: str) -> tuple[str, Any]:
    """``name=value`` with ``value`` a Python literal or a bare word (a string)."""
    name, sep, value = text.partition("=")
    name = name.strip()
    if not sep or not name:
        raise CaseError(f"--param '{text}' is not of the form name=value", "e.g. --param m1=2.5 --param label=fast")
    value = value.strip()
    try:
        return name, ast.literal_eval(value)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        if _BARE_WORD.match(value):
            return name, value
        raise CaseError(f"--param {name}={value}: '{value}' is not a Python literal",
                        "give a number (2.5, 1e-3), a quoted string ('a b'), a list ([1, 2]) or True/False") from None


def _fits(default: Any, value: Any) -> Any:
    """``value`` converted to the type of ``default``, or TypeError naming what was expected."""
    if default is None:
        return value
    if isinstance(default, (bool, np.bool_)):
        if isinstance(value, bool):
            return value
        raise TypeError("True or False")
    if isinstance(default, numbers.Integral):
        if isinstance(value, numbers.Integral) and not isinstance(value, bool):
            return int(value)
        raise TypeError("an integer")
    if isinstance(default, numbers.Real):
        if isinstance(value, numbers.Real) and not isinstance(value, bool):
            return float(value)
        raise TypeError("a number")
    if isinstance(default, str):
        if isinstance(value, str):
            return value
        raise TypeError("a string")
    if isinstance(default, (list, tuple, np.ndarray)):
        if isinstance(value, (list, tuple)):
            return type(default)(value) if isinstance(default, (list, tuple)) else np.asarray(value)
        raise TypeError("a list")
    if isinstance(value, type(default)):
        return value
    raise TypeError(type(default).__name__)


def resolve_params(case: Case, overrides: dict[str, Any]) -> dict[str, Any]:
    """DEFAULTS updated by ``overrides``; unknown names and values of the wrong type are refused."""
    params = dict(case.defaults)
    for name, value in overrides.items():
        if name in SETTING_NAMES and (name not in params or (name == "dt" and value == "auto")):
            params[name] = value  # a run setting the case leaves at its default (checked by RunSettings below)
            continue
        if name not in params:
            known = ", ".join(sorted(params))
            raise CaseError(f"unknown parameter '{name}' for case '{case.name}'", f"known parameters: {known}")
        try:
            params[name] = _fits(params[name], value)
        except TypeError as exc:
            raise CaseError(f"parameter '{name}' = {value!r}: expected {exc} (default {params[name]!r})",
                            "values are Python literals: 2.5, 3, 'text', [1, 2], True") from None
    try:
        RunSettings.from_params(params)
    except ValueError as exc:
        hint = f"{exc.hint}; " if isinstance(exc, SettingsError) else ""  # a limit's own hint says what value to give
        raise CaseError(str(exc), f"{hint}set it in the case's DEFAULTS or with --param NAME=VALUE") from None
    return params
