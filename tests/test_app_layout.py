"""The application and results end of the house (issue 13, docs/architecture.md P3–P5), checked on
the source itself: every exception is a FlexmbError with a hint and lives in flexmb/errors.py;
app/, results/, errors.py and settings.py import each other without a cycle (Result apart from
its loaders); a function-level import there says why; the run defaults and the atomic writes
each have one home (flexmb/settings.py, flexmb/results/files.py)."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import flexmb
import flexmb.app.casefile
import flexmb.app.cli
import flexmb.app.study
from flexmb.errors import FlexmbError
from flexmb.settings import RHO_INF, RunSettings

PKG = Path(flexmb.__file__).resolve().parent
SCOPE = [*sorted((PKG / "app").glob("*.py")), *sorted((PKG / "results").glob("*.py")), PKG / "errors.py",
         PKG / "settings.py"]


def _module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _all_modules() -> list:
    mods = [flexmb]
    for info in pkgutil.walk_packages(flexmb.__path__, "flexmb."):
        mods.append(importlib.import_module(info.name))
    return mods


def test_every_exception_is_a_flexmb_error_with_a_hint_defined_in_errors():
    """Every public exception class of flexmb (warning categories, issued with warnings.warn
    and never raised, and private classes a module raises and catches itself, excepted)."""
    classes = {cls for m in _all_modules() for name, cls in inspect.getmembers(m, inspect.isclass)
               if issubclass(cls, BaseException) and not issubclass(cls, Warning) and not name.startswith("_")
               and cls.__module__.startswith("flexmb")}
    assert len(classes) >= 10
    for cls in classes:
        assert issubclass(cls, FlexmbError), cls
        assert cls.__module__ == "flexmb.errors", cls
        if cls is not FlexmbError:
            assert cls.hint, cls  # a default hint saying what to do
    # the three that lived elsewhere, still under their old names
    assert flexmb.app.casefile.CaseError.__module__ == "flexmb.errors"
    assert flexmb.app.cli.CliError.__module__ == "flexmb.errors"
    assert flexmb.app.study.StudyError.__module__ == "flexmb.errors"
    exc = flexmb.app.casefile.CaseError("bad", "do this")
    assert isinstance(exc, FlexmbError) and isinstance(exc, ValueError) and exc.hint == "do this"


def _imports(path: Path) -> set[str]:
    """Every flexmb module ``path`` imports, at module level or inside functions."""
    tree = ast.parse(path.read_text())
    me = _module_name(path)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("flexmb"):
            found.add(node.module)
            for a in node.names:  # `from flexmb.results import manifest` imports a module
                sub = PKG.parent / node.module.replace(".", "/") / a.name
                if sub.with_suffix(".py").exists() or (sub / "__init__.py").exists():
                    found.add(f"{node.module}.{a.name}")
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("flexmb")}
    return found - {me}


def test_no_import_cycle_in_app_and_results():
    names = {_module_name(p) for p in SCOPE}
    graph = {_module_name(p): _imports(p) & names for p in SCOPE}
    assert "flexmb.results.rundir" not in graph["flexmb.results.result"]  # Result apart from its loaders
    assert graph["flexmb.results.result"] <= {"flexmb.results.npz", "flexmb.results.files", "flexmb.errors",
                                              "flexmb.results.names"}  # names: a leaf, reading a Result by name
    assert graph["flexmb.results.names"] <= {"flexmb.errors"}
    state: dict[str, int] = {}

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for n in graph.get(m, ()):
            assert state.get(n) != 1, f"import cycle: {' -> '.join(path + [n])}"
            if n not in state:
                visit(n, path + [n])
        state[m] = 2

    for m in graph:
        if m not in state:
            visit(m, [m])


def test_function_level_imports_say_why():
    """An import inside a function in app/ or results/ hides the order of the house unless it
    has a reason (start-up time of the command, an optional dependency), said in a comment."""
    bare = []
    for path in SCOPE:
        lines = path.read_text().splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for sub in ast.walk(node):
                    if isinstance(sub, (ast.Import, ast.ImportFrom)):
                        here, k = lines[sub.lineno - 1], sub.lineno - 2
                        while lines[k].strip().startswith(("from ", "import ")):  # a group of imports under one comment
                            k -= 1
                        if "#" not in here and not lines[k].strip().startswith("#"):
                            bare.append(f"{path.name}:{sub.lineno}: {here.strip()}")
    assert not bare, "\n".join(bare)


def test_run_defaults_live_in_settings():
    assert RunSettings(1.0, 0.1).rho_inf == RHO_INF and RunSettings(1.0, 0.1).output_every == 1
    copies = []
    for path in PKG.rglob("*.py"):
        if path.name == "settings.py":
            continue
        for k, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"rho_inf[^\n]{0,40}\b0\.9\b", line):
                copies.append(f"{path.relative_to(PKG)}:{k}: {line.strip()}")
    assert not copies, "\n".join(copies)
    sim = importlib.import_module("flexmb.solvers.simulate")
    ga = importlib.import_module("flexmb.solvers.generalized_alpha")
    assert inspect.signature(sim.simulate).parameters["rho_inf"].default == RHO_INF
    assert inspect.signature(ga.GeneralizedAlpha).parameters["rho_inf"].default == RHO_INF


def test_one_copy_of_the_atomic_write():
    writers = [str(p.relative_to(PKG)) for p in PKG.rglob("*.py") if "os.replace(" in p.read_text()]
    assert writers == ["results/files.py"]
    assert not [p for p in PKG.rglob("*.py") if "_jsonable" in p.read_text()]


def test_load_is_on_the_package_face():
    assert flexmb.load.__module__ == "flexmb.results.load"
    assert not hasattr(importlib.import_module("flexmb.results.result"), "load")
