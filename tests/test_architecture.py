"""The order of the house (issue 13, docs/architecture.md P2 and P4), checked on the source itself:

* no import cycle anywhere in flexmb (its elements package included): every module's imports that
  run when it is imported (module level; ``if TYPE_CHECKING:`` blocks, type hints only, excepted)
  form a graph without a cycle, and a cycle is named module by module; counting type-only and
  function-level imports too, no two modules know each other but for the knots being untied
  (KNOTS_FOR_NOW, issue 35);
* in the engine path (flexmb/engine, flexmb/solvers, elements, flexmb/model.py, flexmb/state.py)
  an import inside a function says why in a comment (on its line or on the line above its group);
* the test oracles (``reference`` modules: elements/beam/reference.py,
  elements/rigid_body/reference.py, flexmb/engine/reference.py) are never imported by flexmb: no
  flexmb module names them, and importing every other flexmb module loads none of them;
* every parameter named ``model`` is annotated with ``Model`` (``Model | None`` where optional), so a
  reader and a type checker see that every stage reads the compiled model (issue 13, P2);
* every module of flexmb and of its elements package has at most 600 lines (issue 35), but for the
  few named while they are being split;
* no function of flexmb or of its elements package spans more than 80 lines, docstring included
  (issue 35), but for the hot numba kernels named in LONGER_THAN_80_MEASURED, each with the results file of the
  A/B that found its split slower (the issue's speed, within 5 %, before its length);
* no module asks which class a linear solver or a step back-end is (``isinstance``/``issubclass`` on
  TreeSolver, DenseCholesky, BandCholesky, SparseCholesky, CholeskyFactor, TreeStep, ElementStep or the
  back-ends of flexmb/solvers/step_backends.py) but the factories that make them
  (flexmb/engine/linear_solver.py, flexmb/solvers/step_backends.py): the step reads ``kind`` and calls
  ``try_step`` (issue 35, docs/architecture.md P8).
The app and results ends have their own, stricter checks in tests/test_app_layout.py.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import flexmb
import flexmb.elements

PKG = Path(flexmb.__file__).resolve().parent
ELEMENTS = Path(flexmb.elements.__file__).resolve().parent  # installed as flexmb.elements
ROOT = PKG.parent  # the checkout: benchmarks/results/
ENGINE_PATH = ("flexmb.engine.", "flexmb.solvers.", "flexmb.elements", "flexmb.model", "flexmb.state")


def _modules() -> dict[str, Path]:
    """Every module of flexmb by its dotted name (packages by their __init__.py)."""
    out = {}
    for root, prefix in ((PKG, "flexmb"), (ELEMENTS, "flexmb.elements")):
        for path in sorted(root.rglob("*.py")):
            rel = path.relative_to(root).with_suffix("").parts
            if root == PKG and rel[0] == "elements":  # a link to the elements package, if any
                continue
            parts = rel[:-1] if rel[-1] == "__init__" else rel
            out[".".join((prefix, *parts))] = path
    return out


MODULES = _modules()


def _resolve(module: str, level: int, here: str, is_package: bool) -> str:
    if not level:
        return module
    base = here.split(".") if is_package else here.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (isinstance(t, ast.Attribute)
                                                                       and t.attr == "TYPE_CHECKING")


def _imported(node: ast.Import | ast.ImportFrom, here: str, modules: dict[str, Path] = MODULES) -> set[str]:
    """The modules (of ``modules``, flexmb's by default) an import statement in module ``here`` loads."""
    found = set()
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        target = _resolve(node.module or "", node.level, here, modules[here].name == "__init__.py")
        names = [target] + [f"{target}.{a.name}" for a in node.names]
    for name in names:
        if name in modules:
            found.add(name)
    return found


def _runtime_imports(name: str) -> set[str]:
    """Modules loaded by running ``name``'s module level: its imports (not under TYPE_CHECKING, not
    in functions) and their packages, except its own packages (initialised before it anyway)."""
    tree = ast.parse(MODULES[name].read_text())
    found: set[str] = set()

    def visit(stmts: list[ast.stmt]) -> None:
        for node in stmts:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                found.update(_imported(node, name))
            elif isinstance(node, ast.If) and not _is_type_checking(node):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for h in node.handlers:
                    visit(h.body)
                visit(node.orelse)
                visit(node.finalbody)

    visit(tree.body)
    own = {".".join(name.split(".")[:k]) for k in range(1, name.count(".") + 1)}
    with_packages = set()
    for m in found:
        parts = m.split(".")
        with_packages |= {".".join(parts[:k]) for k in range(1, len(parts) + 1)}
    return (with_packages & set(MODULES)) - own - {name}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of ``graph`` as a list of modules (first repeated last), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph.get(m, ())):
            if state.get(n) == 1:
                return stack[stack.index(n):] + [n]
            if n not in state:
                found = visit(n)
                if found:
                    return found
        state[m] = 2
        stack.pop()
        return None

    for m in sorted(graph):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


def test_no_import_cycle_in_the_package():
    graph = {m: _runtime_imports(m) for m in MODULES}
    assert len(graph) > 60 and "flexmb.elements.beam.kernels" in graph
    assert "flexmb.element_data" in graph["flexmb.model"]  # the Model's element data type, from below
    assert not any(m.startswith("flexmb.elements") for m in graph["flexmb.model"])  # the model knows no family
    assert "flexmb.engine.assembly" not in graph["flexmb.engine.iteration_matrix"]  # no back edge
    cycle = _cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_finder_names_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def _declared_imports(name: str, modules: dict[str, Path] = MODULES) -> set[str]:
    """The modules (of ``modules``) that any import statement of module ``name`` names: at module
    level, under ``if TYPE_CHECKING:`` (type hints only) and inside functions alike, with their
    packages, except ``name``'s own packages. A cycle in this graph is a cycle of the design even where
    no import runs in a circle (issue 35, item 4): a type-only or deferred import that closes a circle
    says that two layers know each other."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(modules[name].read_text())):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found |= _imported(node, name, modules)
    own = {".".join(name.split(".")[:k]) for k in range(1, name.count(".") + 1)}
    with_packages = set()
    for m in found:
        parts = m.split(".")
        with_packages |= {".".join(parts[:k]) for k in range(1, len(parts) + 1)}
    return (with_packages & set(modules)) - own - {name}


def _knots(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of ``graph`` with more than one module (Tarjan): each is a
    set of modules every one of which reaches every other through imports."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


# Knots of the declared-import graph (type-only and function-level imports counted) that are being
# untied (issue 35, item 4); the list only shrinks: a knot not listed fails, a listed one gone must leave.
# The last, the solvers' (generalized_alpha, newton_loop, step_backends, tree_run, element_run), is untied: the
# step, its back-ends and the whole runs read the integrator through flexmb/solvers/integrator_protocol.py.
KNOTS_FOR_NOW: list[set[str]] = []


def _knot_problems(knots: list[set[str]], allowed: list[set[str]]) -> list[str]:
    """What the declared-cycle test reports: knots not within an allowed one, allowed ones untied."""
    new = [" <-> ".join(sorted(k)) for k in knots if not any(k <= a for a in allowed)]
    done = [f"untied, take it off KNOTS_FOR_NOW: {sorted(a)}" for a in allowed if not any(k & a for k in knots)]
    return new + done


def test_no_import_cycle_counting_type_only_and_deferred_imports():
    graph = {m: _declared_imports(m) for m in MODULES}
    assert "flexmb.elements.family" in graph["flexmb.elements.bushing"]  # an import at module level
    assert "flexmb.model" in graph["flexmb.elements.family"]  # a type-only import is counted
    problems = _knot_problems(_knots(graph), KNOTS_FOR_NOW)
    assert not problems, "modules that import each other (type hints and imports in functions counted):\n" + \
        "\n".join(problems)


def test_the_declared_cycle_check_finds_planted_type_only_and_deferred_cycles(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "low.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.high import H\n")
    (pkg / "high.py").write_text("from pkg.low import x\n")
    (pkg / "a.py").write_text("def f():\n    from pkg import b  # deferred\n")
    (pkg / "b.py").write_text("import pkg.a\n")
    (pkg / "c.py").write_text("import pkg.low\n")
    modules = {f"pkg.{p.stem}" if p.stem != "__init__" else "pkg": p for p in pkg.glob("*.py")}
    graph = {m: _declared_imports(m, modules) for m in modules}
    knots = _knots(graph)
    assert sorted(map(sorted, knots)) == [["pkg.a", "pkg.b"], ["pkg.high", "pkg.low"]]
    assert _knot_problems(knots, [{"pkg.a", "pkg.b"}]) == ["pkg.high <-> pkg.low"]
    assert _knot_problems([], [{"pkg.a", "pkg.b"}]) == ["untied, take it off KNOTS_FOR_NOW: ['pkg.a', 'pkg.b']"]


def test_function_level_imports_in_the_engine_path_say_why():
    bare = []
    for name, path in MODULES.items():
        if not name.startswith(ENGINE_PATH):
            continue
        lines = path.read_text().splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for sub in ast.walk(node):
                    if isinstance(sub, (ast.Import, ast.ImportFrom)):
                        here, k = lines[sub.lineno - 1], sub.lineno - 2
                        while lines[k].strip().startswith(("from ", "import ")):  # a group under one comment
                            k -= 1
                        if "#" not in here and "#" not in lines[k]:
                            bare.append(f"{name}:{sub.lineno}: {here.strip()}")
    assert not bare, "function-level imports without a reason:\n" + "\n".join(bare)


def test_reference_modules_are_never_imported_by_flexmb():
    refs = {m for m in MODULES if m.rsplit(".", 1)[-1] == "reference"}
    assert refs == {"flexmb.elements.beam.reference", "flexmb.elements.rigid_body.reference",
                    "flexmb.engine.reference"}
    naming = []
    for name, path in MODULES.items():
        if name in refs:
            continue
        for node in ast.walk(ast.parse(path.read_text())):  # any import, also inside functions
            if isinstance(node, (ast.Import, ast.ImportFrom)) and _imported(node, name) & refs:
                naming.append(f"{name}:{node.lineno}")
    assert not naming, naming
    # and at run time: importing every other module of flexmb loads no oracle
    code = ("import importlib, json, sys\n"
            f"for m in {sorted(set(MODULES) - refs)!r}:\n"
            "    importlib.import_module(m)\n"
            "print(json.dumps(sorted(k for k in sys.modules if k.startswith('flexmb'))))")
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                       check=True).stdout)
    assert set(MODULES) - refs <= set(loaded) and not refs & set(loaded)


def _unannotated_models(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, function) of every parameter ``model`` whose annotation does not name ``Model``."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            for arg in a.posonlyargs + a.args + a.kwonlyargs:
                if arg.arg == "model" and (arg.annotation is None or "Model" not in ast.unparse(arg.annotation)):
                    out.append((node.lineno, node.name))
    return out


def test_every_model_parameter_is_annotated():
    missing = [f"{name}:{line} {fn}()" for name, path in MODULES.items()
               for line, fn in _unannotated_models(ast.parse(path.read_text()))]
    assert not missing, "parameters `model` without `: Model`:\n" + "\n".join(missing)


def test_the_annotation_check_finds_a_bare_model():
    tree = ast.parse("def f(model, x: int): ...\ndef g(model: Model | None = None): ...\ndef h(model: 'Model'): ...")
    assert _unannotated_models(tree) == [(1, "f")]


# ------------------------------------------------------------------ module size (issue 35)
MAX_LINES = 600
# Modules over MAX_LINES that others are splitting right now (issue 35). Each leaves this list with
# its split; none joins it: a module that grows over the limit is split instead.
OVER_THE_LIMIT_FOR_NOW: set[str] = set()


def _long_modules(root: Path, limit: int = MAX_LINES) -> dict[str, int]:
    """The Python modules below ``root`` (symbolic links not followed) longer than ``limit`` lines,
    by their path relative to ``root``'s parent, with their number of lines."""
    out = {}
    for folder, _, files in os.walk(root):
        for f in files:
            if f.endswith(".py"):
                path = Path(folder) / f
                n = len(path.read_text().splitlines())
                if n > limit:
                    out[path.relative_to(root.parent).as_posix()] = n
    return out


def _size_problems(long: dict[str, int], allowed: set[str]) -> list[str]:
    """What the size test reports: modules over the limit and not allowed, allowed ones no longer over it."""
    new = [f"{name}: {n} lines, over {MAX_LINES}: split it by what it holds" for name, n in sorted(long.items())
           if name not in allowed]
    done = [f"{name}: at most {MAX_LINES} lines now: take it off OVER_THE_LIMIT_FOR_NOW" for name in sorted(allowed - set(long))]
    return new + done


def test_every_module_has_at_most_600_lines():
    problems = _size_problems(_long_modules(PKG) | _long_modules(ELEMENTS), OVER_THE_LIMIT_FOR_NOW)
    assert not problems, "\n".join(problems)


def test_the_size_check_finds_a_planted_long_module(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text('"""A package."""\n')
    (pkg / "fits.py").write_text("x = 1\n" * MAX_LINES)
    (pkg / "sub" / "planted.py").write_text("x = 1\n" * 700)
    (pkg / "sub" / "notes.txt").write_text("x\n" * 700)  # not a module
    long = _long_modules(pkg)
    assert long == {"pkg/sub/planted.py": 700}
    assert _size_problems(long, set()) == ["pkg/sub/planted.py: 700 lines, over 600: split it by what it holds"]
    assert _size_problems(long, {"pkg/sub/planted.py"}) == []
    assert _size_problems({}, {"pkg/sub/planted.py"}) == [
        "pkg/sub/planted.py: at most 600 lines now: take it off OVER_THE_LIMIT_FOR_NOW"]


# ------------------------------------------------------------------ parameters per function (issue 35)
MAX_PARAMETERS = 12
"""The most parameters a function takes that a caller may pass by position or must pass (positional
and positional-or-keyword ones, self or cls not counted, and keyword-only ones without a default): a
caller has to get their order right, or supply each of them, so past about a dozen they are grouped in
named structures as the beam kernels group their arrays (elements/beam/kernel_data.py;
docs/architecture.md, P6)."""
MAX_OPTIONS = 16
"""The most keyword-only parameters with a default a function takes: its options (simulate's rtol,
keep, ...; sweep's workers, resume, ...). They have no order to get wrong: each is named at the call
and left out where its default serves, so they are not counted in MAX_PARAMETERS. Past about sixteen
a function's options are no longer a list a user reads through in its docstring, and they belong in
an option object (as the run settings are in flexmb.settings.RunSettings). The widest public entry
point, simulate, has 15 (docs/architecture.md, P6)."""
# Functions over either bound that take their arrays one by one still, each to group them in named
# structures as the beam kernels do. Empty since the rigid cuts' kernel took RigidCutArrays; it stays empty:
# a new function groups its arrays from the start.
OVER_12_PARAMETERS_FOR_NOW: set[str] = set()


def _widths(args: ast.arguments) -> tuple[int, int]:
    """(the parameters counted in MAX_PARAMETERS, the keyword-only ones with a default) of a function's
    ``args``; a leading self or cls is not counted."""
    positional = [p.arg for p in args.posonlyargs + args.args]
    n = len(positional) - (1 if positional[:1] in (["self"], ["cls"]) else 0)
    options = sum(default is not None for default in args.kw_defaults)
    return n + len(args.kwonlyargs) - options, options


def _wide_functions(root: Path, limit: int = MAX_PARAMETERS, options: int = MAX_OPTIONS) -> set[str]:
    """'path::name' of the functions below ``root`` with more than ``limit`` parameters a caller passes
    by position or must pass, or more than ``options`` keyword-only ones with a default (_widths),
    paths relative to ``root``'s parent."""
    out = set()
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n, k = _widths(node.args)
                if n > limit or k > options:
                    out.add(f"{path.relative_to(root.parent).as_posix()}::{node.name}")
    return out


def _width_problems(wide: set[str], allowed: set[str]) -> list[str]:
    """What the width test reports: new wide functions, and allowed ones that are no longer wide."""
    return ([f"{f}: more than {MAX_PARAMETERS} parameters passed by position or required, or more than {MAX_OPTIONS} "
             "keyword-only options: group its arrays in named structures, its options in an option object"
             for f in sorted(wide - allowed)]
            + [f"{f}: at most {MAX_PARAMETERS} parameters now (or gone): take it off OVER_12_PARAMETERS_FOR_NOW"
               for f in sorted(allowed - wide)])


def test_no_new_function_takes_more_than_12_parameters():
    problems = _width_problems(_wide_functions(PKG) | _wide_functions(ELEMENTS), OVER_12_PARAMETERS_FOR_NOW)
    assert not problems, "\n".join(problems)


def test_the_width_check_finds_a_planted_wide_function(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    args13 = ", ".join(f"a{i}" for i in range(13))
    opts = lambda n: ", ".join(f"o{i}=None" for i in range(n))  # noqa: E731
    (pkg / "m.py").write_text(f"def wide({args13}): ...\ndef fits(self, {', '.join(f'a{i}' for i in range(12))}): ...\n"
                              f"class C:\n    def method(self, {args13}): ...\n"
                              f"def options(a, b, *, {opts(MAX_OPTIONS)}): ...\n"
                              f"def too_many_options(a, *, {opts(MAX_OPTIONS + 1)}): ...\n"
                              f"def required(a0, *, {', '.join(f'k{i}' for i in range(12))}, o=1): ...\n"
                              f"def defaults_count(*, {', '.join(f'k{i}' for i in range(12))}, {opts(1)}): ...\n"
                              f"def positional_defaults({', '.join(f'a{i}=0' for i in range(13))}): ...\n")
    wide = _wide_functions(pkg)
    assert wide == {"pkg/m.py::wide", "pkg/m.py::method", "pkg/m.py::too_many_options", "pkg/m.py::required",
                    "pkg/m.py::positional_defaults"}
    assert _width_problems(wide - {"pkg/m.py::too_many_options", "pkg/m.py::required", "pkg/m.py::positional_defaults"},
                           {"pkg/m.py::wide"}) == [
        "pkg/m.py::method: more than 12 parameters passed by position or required, or more than 16 keyword-only options: "
        "group its arrays in named structures, its options in an option object"]
    assert _width_problems(set(), {"pkg/m.py::wide"}) == [
        "pkg/m.py::wide: at most 12 parameters now (or gone): take it off OVER_12_PARAMETERS_FOR_NOW"]


def test_the_public_entry_points_take_their_options_by_name():
    """simulate, sweep and run_case take a handful of arguments by position (the model or case and what
    to run), every option by name, within MAX_OPTIONS, each with its default."""
    import inspect

    import flexmb as fm
    from flexmb.app.run import run_case
    from flexmb.app.study import sweep

    for f, positional in ((fm.simulate, ["model", "t_end", "dt"]), (sweep, ["case", "grid"]),
                          (run_case, ["case", "overrides", "out"])):
        params = inspect.signature(f).parameters.values()
        assert [p.name for p in params if p.kind is p.POSITIONAL_OR_KEYWORD] == positional, f.__name__
        options = [p for p in params if p.kind is p.KEYWORD_ONLY]
        assert 0 < len(options) <= MAX_OPTIONS and all(p.default is not p.empty for p in options), f.__name__


# ------------------------------------------------------------------ function length (issue 35)
MAX_FUNCTION_LINES = 80
"""The most lines a function of flexmb or its elements spans, from its ``def`` line to its last line,
docstring and nested functions included: a reader must hold it in mind. A longer one is split into
well-named pieces (a long docstring may move its detail to the module docstring or docs/)."""
# Functions over MAX_FUNCTION_LINES: hot numba kernels whose split into helpers was measured slower (splitting a
# compiled kernel changes what numba inlines and counts), each with the results file of its A/B. The list only
# shrinks: a kernel comes off when a split keeps its speed.
LONGER_THAN_80_MEASURED: dict[str, str] = {
    "flexmb/engine/kinematics.py::_forward_joints": "benchmarks/results/2026-11-29-forward_joints_split.md",
    "elements/beam/matrix_kernels.py::_free_pair_matrix": "benchmarks/results/2026-11-29-beam_kernel_split.md",
}


def _long_functions(root: Path, limit: int = MAX_FUNCTION_LINES) -> dict[str, int]:
    """'path::name' of the functions and methods below ``root`` longer than ``limit`` lines (``def`` line to
    last line; decorators not counted), with their length, paths relative to ``root``'s parent."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > limit:
                    out[f"{path.relative_to(root.parent).as_posix()}::{node.name}"] = n
    return out


def _length_problems(long: dict[str, int], allowed: set[str]) -> list[str]:
    """What the function-length test reports: long functions not allowed, allowed ones no longer long."""
    return ([f"{f}: {n} lines, over {MAX_FUNCTION_LINES}: split it into well-named pieces"
             for f, n in sorted(long.items()) if f not in allowed]
            + [f"{f}: at most {MAX_FUNCTION_LINES} lines now (or gone): take it off LONGER_THAN_80_MEASURED"
               for f in sorted(allowed - set(long))])


def test_no_function_is_longer_than_80_lines():
    problems = _length_problems(_long_functions(PKG) | _long_functions(ELEMENTS), set(LONGER_THAN_80_MEASURED))
    assert not problems, "\n".join(problems)


def test_every_long_kernel_names_the_measurement_that_keeps_it():
    """A kernel over 80 lines stays so only with the A/B that found its split slower, in benchmarks/results/, and
    that file names the kernel."""
    for kernel, results in LONGER_THAN_80_MEASURED.items():
        assert results.startswith("benchmarks/results/") and (ROOT / results).is_file(), (kernel, results)
        assert kernel.split("::")[1] in (ROOT / results).read_text(), (kernel, results)


def test_the_length_check_finds_a_planted_long_function(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    body = lambda n, indent=4: "".join(f"{' ' * indent}x{i} = {i}\n" for i in range(n))  # noqa: E731
    (pkg / "m.py").write_text(f'def fits():\n    """Doc."""\n{body(MAX_FUNCTION_LINES - 2)}\n'  # 80 lines: fits
                              f"def long():\n{body(MAX_FUNCTION_LINES)}\n"  # 81 lines
                              f"class C:\n    def method(self):\n{body(90, 8)}\n"  # a method: 91 lines
                              # 81 lines, its nested function's included, its decorator's not
                              f"@decorated\ndef outer():\n    def inner():\n{body(3, 8)}{body(MAX_FUNCTION_LINES - 4)}")
    long = _long_functions(pkg)
    assert long == {"pkg/m.py::long": 81, "pkg/m.py::method": 91, "pkg/m.py::outer": 81}
    assert _length_problems(long, {"pkg/m.py::method", "pkg/m.py::outer"}) == [
        "pkg/m.py::long: 81 lines, over 80: split it into well-named pieces"]
    assert _length_problems({}, {"pkg/m.py::long"}) == [
        "pkg/m.py::long: at most 80 lines now (or gone): take it off LONGER_THAN_80_MEASURED"]


# ------------------------------------------------------------------ no class tests on solvers (issue 35)
#: the classes behind the LinearSolver protocol (flexmb/engine/linear_solver.py) and the step back-ends
SOLVER_CLASSES = {"TreeSolver", "DenseCholesky", "BandCholesky", "SparseCholesky", "CholeskyFactor",
                  "TreeStep", "ElementStep", "CompiledTreeStep", "CompiledElementNewton"}
#: the factories that choose among them, the only modules that may ask which one an object is
SOLVER_FACTORIES = {"flexmb/engine/linear_solver.py", "flexmb/solvers/step_backends.py"}


def _class_tests(root: Path, classes: set[str] = SOLVER_CLASSES) -> list[str]:
    """'path:line' of every isinstance or issubclass call below ``root`` that names one of ``classes``
    (as a name or an attribute, alone or in a tuple), paths relative to ``root``'s parent."""
    out = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in ("isinstance", "issubclass") and len(node.args) == 2):
                named = {n.id if isinstance(n, ast.Name) else n.attr for n in ast.walk(node.args[1])
                         if isinstance(n, (ast.Name, ast.Attribute))}
                if named & classes:
                    out.append(f"{path.relative_to(root.parent).as_posix()}:{node.lineno}")
    return out


def test_no_module_asks_which_solver_class_it_has():
    found = [f for f in _class_tests(PKG) + _class_tests(ELEMENTS) if f.split(":")[0] not in SOLVER_FACTORIES]
    assert not found, ("a class test on a linear solver or step back-end outside its factory (read .kind, "
                       "call try_step):\n" + "\n".join(found))


def test_the_class_test_check_finds_a_planted_isinstance(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "solvers").mkdir(parents=True)
    (pkg / "solvers" / "planted.py").write_text(
        "from flexmb.engine.dense_cholesky import DenseCholesky\n"
        "from flexmb.engine import band_cholesky\n"
        "def f(x):\n"
        "    if isinstance(x, DenseCholesky):\n"
        "        return 1\n"
        "    return isinstance(x, (int, band_cholesky.BandCholesky)) or isinstance(x, float)\n")
    (pkg / "fine.py").write_text("def g(x):\n    return x.kind == 'dense' and isinstance(x, object)\n")
    assert _class_tests(pkg) == ["pkg/solvers/planted.py:4", "pkg/solvers/planted.py:6"]


# ------------------------------------------------------------------ the element families by name (issue 35)
#: the compiled element step's family tuples (flexmb/solvers/family_tuples.py: Families, FamilyOutputs)
FAMILY_TUPLES = ("fams", "outs")


def _positional_family_reads(root: Path, names: tuple[str, ...] = FAMILY_TUPLES) -> list[str]:
    """'path:line' of every read of ``fams`` or ``outs`` (a name, or an attribute as ``self.outs``) at a literal
    integer index in the modules below ``root``, paths relative to ``root``'s parent: the families are read by name
    (``fams.rigid_cut``, ``outs.spring_damper``; docs/architecture.md P6)."""
    out = []
    for path in sorted(root.rglob("*.py")):
        lines = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Subscript):
                continue
            value, index = node.value, node.slice
            name = value.id if isinstance(value, ast.Name) else value.attr if isinstance(value, ast.Attribute) else None
            if isinstance(index, ast.UnaryOp):  # fams[-1]
                index = index.operand
            if name in names and isinstance(index, ast.Constant) and isinstance(index.value, int):
                lines.add(node.lineno)
        out += [f"{path.relative_to(root.parent).as_posix()}:{n}" for n in sorted(lines)]
    return out


def test_the_solvers_read_the_element_families_by_name():
    found = _positional_family_reads(PKG / "solvers")
    assert not found, ("an element family read by its position in fams or outs: read it by name (fams.rigid_cut, "
                       "outs.spring_damper; flexmb/solvers/family_tuples.py):\n" + "\n".join(found))


def test_the_family_name_check_finds_a_planted_positional_read(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "solvers").mkdir(parents=True)
    (pkg / "solvers" / "planted.py").write_text(
        "def f(fams, outs, es, keep, k):\n"
        "    a = fams[2][0].size + fams.rigid_cut[0].size\n"  # line 2: fams[2]
        "    b = es.outs[3][9] + outs.spring_damper[9] + keep[3]\n"  # line 3: es.outs[3]
        "    c = fams[k], outs[-1], fams[1:3], outs[CUT]\n"  # line 4: outs[-1]
        "    return a, b, c\n")
    assert _positional_family_reads(pkg) == ["pkg/solvers/planted.py:2", "pkg/solvers/planted.py:3",
                                             "pkg/solvers/planted.py:4"]
