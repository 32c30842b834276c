"""Sphinx glue for flexmb's API reference (docs/api/).

* :func:`normalize_docstring`: flexmb's docstrings are prose written for ``help()``: formulas with
  ``|x|`` (an absolute value, which reStructuredText reads as a substitution) and indented blocks
  (formulas, command tables) without the ``::`` that makes them literal. The hook turns every
  indented block into a literal block and escapes ``|`` outside literals (simple tables, between
  their ``====`` borders, stay as written; a section title's underline is made as long as the
  title), so autodoc renders them as written, without touching the code.
* :func:`skip_public_duplicates`: the names of ``flexmb.__all__`` are documented once, on the
  API index page as ``flexmb.<name>``; their home modules' pages leave them out (autodoc registers
  the home name as canonical, so cross-references to either name resolve).
* the ``flexmb-units`` directive: the parameters of a ``ModelBuilder.add_*`` method with their
  units and shapes (:data:`UNITS`), or of a public builder function such as ``flexmb.add_visual``
  or ``flexmb.from_urdf`` (:data:`FUNCTION_UNITS`); ``tests/test_docs_site.py`` checks that every
  parameter of every ``add_*`` method and function is in the tables.
"""

from __future__ import annotations

import inspect
import re

from docutils import nodes
from docutils.parsers.rst import Directive, directives

#: the rows several methods share: a two-node element's name and ends, a cut's frame (bushings, rigid
#: cuts), the two points of a point-to-point element, a beam's section
TWO_NODES = {"name": ("—", "str"), "node_a": ("—", "node name or 'ground'"), "node_b": ("—", "node name")}
CUT_FRAME = {"point": ("m", "(3,) global"), "axes": ("—", "(3, 3) rotation matrix, global"),
             "free_rotation": ("—", "None | 'x' | 'y' | 'z' | 'all'"),
             "plane": ("—", "None: the model's | 'xy' | 'yz' | 'zx' | (3,) normal | 'spatial'")}
POINT_PAIR = {"point_a": ("m", "(3,) global; None: node_a's position (ground: the origin)"),
              "point_b": ("m", "(3,) global; None: node_b's position")}
SECTION = {"section": ("SI", "BeamSection: E, G [Pa], A [m²], Iy, Iz, J [m⁴], rho [kg/m³]"),
           "z_hint": ("—", "(3,) global direction"), "damping": ("s", "stiffness-proportional α; None: default")}

#: parameter -> (unit, shape or kind) for every ``ModelBuilder`` method that takes physical input.
#: "—": dimensionless or a name; positions, points and axes are global, in the assembly configuration.
UNITS: dict[str, dict[str, tuple[str, str]]] = {
    "__init__": {"gravity": ("m/s²", "(3,) global"),
                 "planar": ("—", "None | 'xy' | 'yz' | 'zx' | (3,) normal, global")},
    "add_node": {"name": ("—", "str"), "position": ("m", "(3,) global"),
                 "rotation": ("—", "(3, 3) rotation matrix, columns = node axes, global")},
    "add_body": {"name": ("—", "str"), "node": ("—", "node name"), "mass": ("kg", "> 0"),
                 "com": ("m", "(3,) node axes, relative to the node"),
                 "inertia": ("kg m²", "(3, 3) about the centre of mass, node axes")},
    "add_joint": {"name": ("—", "str"), "kind": ("—", "fixed | revolute | prismatic | cylindrical | universal | "
                                                        "spherical | free"),
                  "parent": ("—", "node name or 'ground'"), "child": ("—", "node name"),
                  "point": ("m", "(3,) global, default the child node"), "axis": ("—", "(3,) unit vector, global"),
                  "axes": ("—", "list of (3,) unit vectors, global"),
                  "q0": ("rad or m", "per coordinate; a ball: rotation vector"),
                  "u0": ("rad/s or m/s", "per coordinate; a ball: body angular velocity")},
    "add_drive": {"joint": ("—", "joint name"), "position": ("rad or m", "function of t [s] -> float"),
                  "velocity": ("rad/s or m/s", "function of t, or None (complex step)"),
                  "acceleration": ("rad/s² or m/s²", "function of t, or None (complex step)"),
                  "dof": ("—", "int, coordinate of the joint")},
    "add_joint_spring": {"joint": ("—", "joint name"), "stiffness": ("N m/rad or N/m", "≥ 0"),
                         "damping": ("N m s/rad or N s/m", "≥ 0"), "rest": ("rad or m", "float"),
                         "dof": ("—", "int, coordinate of the joint")},
    "add_joint_force": {"joint": ("—", "joint name"),
                        "force": ("N m or N", "float, function of t, or of (t, q, u): docs/motion_forces.md"),
                        "dof": ("—", "int, coordinate of the joint"),
                        "tangent": ("N m/rad, N m s/rad (N/m, N s/m)", "function (t, q, u) -> (df_dq, df_du), or None"),
                        "period": ("s", "> 0: a sampled controller, held between samples; or None")},
    "add_joint_friction": {"joint": ("—", "revolute joint name"), "mu": ("—", "≥ 0, friction coefficient"),
                           "pin_radius": ("m", "> 0"), "omega_eps": ("rad/s", "> 0, regularisation")},
    "add_load": {"name": ("—", "str"), "node": ("—", "node name"),
                 "force": ("N", "(3,) or function of t -> (3,); global unless follower; or of (t, x, R, v, w) -> (3,) or "
                           "(6,): docs/motion_forces.md §7"),
                 "moment": ("N m", "(3,) or function of t -> (3,); global unless follower"),
                 "follower": ("—", "bool: node axes"), "axes_node": ("—", "node name whose axes carry the load"),
                 "tangent": ("N/m, N/rad, N s/m, N s/rad (N m per ...)",
                             "function (t, x, R, v, w) -> (3 or 6, 12) d(force)/d(x, θ, v, w), or None"),
                 "period": ("s", "> 0: a sampled load, held between samples; or None")},
    "add_bushing": {**TWO_NODES, **CUT_FRAME,
                    "stiffness": ("N/m (translations), N m/rad (rotations)", "6 diagonal values or (6, 6)"),
                    "damping": ("N s/m, N m s/rad", "6 values or (6, 6); None: chosen for a cut")},
    "add_rigid_cut": {**TWO_NODES, **CUT_FRAME,
                      "tolerance": ("m (translations), rad (rotations)", "> 0; None: 1e-10 × model size"),
                      "penalty": ("N/m, N m/rad", "> 0; None: 1e4 m_eff / β' per step")},
    "add_beam": {**TWO_NODES, "node_a": ("—", "node name"), **SECTION},
    "add_flexible_link": {**SECTION, "name": ("—", "str"), "point_a": ("m", "(3,) global"), "point_b": ("m", "(3,) global"),
                          "n_elements": ("—", "int ≥ 1"),
                          "node_a": ("—", "node name or None"), "node_b": ("—", "node name or None")},
    "add_particle_body": {"name": ("—", "str"), "reference_node": ("—", "node name"), "mass": ("kg", "> 0"),
                          "com": ("m", "(3,) reference-node axes, relative to it"),
                          "inertia": ("kg m²", "(3, 3), or a scalar for planar and rod"),
                          "particle_nodes": ("m", "node names or (3,) global points"),
                          "kind": ("—", "planar | rod | spatial | general"),
                          "midpoint_nodes": ("—", "node names or None"), "plane_normal": ("—", "(3,) or None")},
    "add_particle_load": {"name": ("—", "str"), "body": ("—", "particle body name"),
                          "force": ("N", "(3,) or function of t"),
                          "point": ("m", "(3,) reference-node axes, relative to it"),
                          "couple": ("N m", "(3,) or function of t, reference-node axes"),
                          "follower": ("—", "bool")},
    "add_rotational_spring_damper": {**TWO_NODES,
                                     "axis": ("—", "(3,) global at assembly, carried by node_a; None: isotropic"),
                                     "stiffness": ("N m/rad", "≥ 0"), "damping": ("N m s/rad", "≥ 0"),
                                     "rest": ("rad", "angle from the assembly configuration"),
                                     "preload": ("N m", "constant torque"),
                                     "law": ("N m", "function (φ [rad], φ' [rad/s], t [s]) -> torque, or None"),
                                     "law_tangent": ("N m/rad, N m s/rad", "function (φ, φ', t) -> (∂T/∂φ, ∂T/∂φ'), or None")},
    "add_spring_damper": {**TWO_NODES, **POINT_PAIR, "stiffness": ("N/m", "≥ 0"), "damping": ("N s/m", "≥ 0"),
                          "rest_length": ("m", "> 0; None: the points' distance at assembly"),
                          "preload": ("N", "constant tension (negative: pushes)"),
                          "force_law": ("N", "function (l [m], l' [m/s], t [s]) -> tension, or None"),
                          "force_law_tangent": ("N/m, N s/m", "function (l, l', t) -> (∂F/∂l, ∂F/∂l'), or None")},
    "add_actuator": {**TWO_NODES, **POINT_PAIR,
                     "length": ("m", "> 0, or function t [s] -> L(t); None: a force actuator"),
                     "velocity": ("m/s", "function t -> L'(t), or None: by complex step"),
                     "acceleration": ("m/s²", "function t -> L''(t), or None: by complex step"),
                     "force": ("N", "function (t [s], l [m], l' [m/s]) -> tension, or None")},
    "add_coupling": {"name": ("—", "str"), "a": ("—", "coordinate name ('<joint>.q', '<joint>.t0', ...) or joint name"),
                     "b": ("—", "coordinate name or joint name"), "ratio": ("unit of q_b per unit of q_a", "≠ 0"),
                     "offset": ("unit of q_b", "finite"),
                     "stiffness": ("N m/rad or N/m (per unit of q_b)", "> 0; None: rigid"),
                     "damping": ("N m s/rad or N s/m", "≥ 0; elastic couplings only")},
    "add_element": {"family": ("—", "registered family name"), "record": ("—", "the family's frozen record")},
    "compile": {"require_mass": ("—", "bool")},
}

#: the public functions that make or extend a builder (``flexmb.__all__``): their parameters, units and shapes,
#: shown like the methods' (``.. flexmb-units:: flexmb.add_visual``)
FUNCTION_UNITS: dict[str, dict[str, tuple[str, str]]] = {
    "from_urdf": {"path": ("—", "URDF file"), "base": ("—", "'fixed' | 'free' (a free joint to ground)"),
                  "gravity": ("m/s²", "(3,) global; default (0, 0, −9.81): URDF frames are z-up"),
                  "root_joint": ("—", "str: the root link's joint to ground"),
                  "shapes": ("—", "None | 'visual' | 'collision'"),
                  "package_dirs": ("—", "{package: folder} for package:// meshes, or None"),
                  "mimic": ("—", "bool: <mimic> as rigid couplings (True) or independent joints")},
    "make_flexible": {"builder": ("—", "ModelBuilder"), "link": ("—", "node name of the rigid link"),
                      "n_elements": ("—", "int ≥ 1"), "section": SECTION["section"],
                      "start": ("m", "(3,) link axes, relative to its node; None: the node's origin"),
                      "end": ("m", "(3,) link axes, relative to its node; None: its child joint's point"),
                      "z_hint": ("—", "(3,) global direction of e3, or None"),
                      "damping": SECTION["damping"]},
    "add_visual": {"builder": ("—", "ModelBuilder"), "node": ("—", "node name"),
                   "mesh": ("m after scale", "file (STL, OBJ, VTK, VTU, PLY, Collada, ...) or (points (n, 3), "
                                             "triangles (m, 3))"),
                   "position": ("m", "(3,) node axes"), "rotation": ("—", "(3, 3) rotation matrix, node axes; None: I"),
                   "scale": ("—", "float or (3,): mesh units to m"), "name": ("—", "str or None: <node>.shape")},
    "add_beam_shapes": {"builder": ("—", "ModelBuilder"), "beams": ("—", "beam element names; None: all"),
                        "kind": ("—", "'tube' | 'box'"),
                        "size": ("m", "tube: outer radius; box: (width along e2, height along e3); None: from A, I"),
                        "sides": ("—", "int, the tube's facets")},
}


def function_parameters() -> dict[str, list[str]]:
    """The parameters of every public function of flexmb (``__all__``) named ``add_*`` and of those of
    :data:`FUNCTION_UNITS` (the builder's functions)."""
    import flexmb

    names = sorted({n for n in flexmb.__all__ if n.startswith("add_")} | set(FUNCTION_UNITS))
    return {n: list(inspect.signature(getattr(flexmb, n)).parameters) for n in names}


def method_parameters(cls) -> dict[str, list[str]]:
    """The parameters (without self) of ``__init__``, ``compile`` and every ``add_*`` method of ``cls``."""
    out = {}
    for name, f in inspect.getmembers(cls, inspect.isfunction):
        if name.startswith("add_") or name in ("__init__", "compile"):
            out[name] = [p for p in inspect.signature(f).parameters if p != "self"]
    return out


class UnitsDirective(Directive):
    """``.. flexmb-units:: add_body``: a table of the method's parameters, units and shapes."""

    required_arguments = 1
    has_content = False

    def run(self):
        method = self.arguments[0]
        from flexmb import ModelBuilder

        if method.startswith("flexmb."):  # a public function: flexmb.add_visual
            method = method.removeprefix("flexmb.")
            params, units, table_name = function_parameters().get(method), FUNCTION_UNITS.get(method, {}), "FUNCTION_UNITS"
            if params is None:
                raise self.error(f"flexmb has no builder function {method!r}")
        else:
            params, units, table_name = method_parameters(ModelBuilder).get(method), UNITS.get(method, {}), "UNITS"
            if params is None:
                raise self.error(f"ModelBuilder has no method {method!r}")
        missing = [p for p in params if p not in units]
        if missing:
            raise self.error(f"docs/_ext/flexmb_api.py: {table_name}[{method!r}] lacks {missing}")
        table = nodes.table(classes=["flexmb-units"])
        group = nodes.tgroup(cols=3)
        table += group
        for width in (22, 28, 50):
            group += nodes.colspec(colwidth=width)
        head = nodes.thead()
        group += head
        body = nodes.tbody()
        group += body

        def row(cells, literal_first=True):
            r = nodes.row()
            for i, c in enumerate(cells):
                entry = nodes.entry()
                entry += nodes.paragraph("", "", nodes.literal(c, c) if (i == 0 and literal_first) else nodes.Text(c))
                r += entry
            return r

        head += row(["parameter", "unit", "shape / values"], literal_first=False)
        for p in params:
            body += row([p, *units[p]])
        return [table]


_LITERAL = re.compile(r"(``.+?``|`[^`]+`)")
_BULLET = re.compile(r"^(\s*)([-*+•]|\d+[.)]|#\.)\s+")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _text_indent(line: str) -> int:
    """Where the continuation lines of ``line`` start: after a bullet's marker, else at its indent."""
    m = _BULLET.match(line)
    return m.end() if m else _indent(line)


_TABLE_BORDER = re.compile(r"^\s*=+( +=+)+\s*$")
_UNDERLINE = re.compile(r"^([-=~^])\1{2,}\s*$")


def _strip_literal(part: str) -> str:
    """An inline literal without the space before its end (which reStructuredText refuses)."""
    if part.startswith("``") and part.endswith("``") and len(part) > 4:
        return "``" + part[2:-2].rstrip() + "``"
    return part


def _escape(line: str) -> str:
    """``|`` escaped outside inline literals and roles, and ``*`` too where the line has no pairs of
    them; an inline literal that ends in a space (which reStructuredText refuses) loses the space."""
    bullet = _BULLET.match(line)
    head, line = (line[:bullet.end()], line[bullet.end():]) if bullet else ("", line)
    parts = _LITERAL.split(line)
    stars = sum(p.count("*") for p in parts[::2])
    return head + "".join(_strip_literal(p) if i % 2 else p.replace("|", r"\|").replace("*", r"\*" if stars % 2 else "*")
                          for i, p in enumerate(parts))


def normalize_docstring(lines: list[str]) -> list[str]:
    """Indented blocks made literal, ``|`` escaped elsewhere, blank lines around bullet lists (see the
    module docstring)."""
    out: list[str] = []
    list_indent = None  # the indent of the current bullet list's markers
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        if not line.strip():
            out.append(line)
            i += 1
            continue
        prev = next((k for k in range(len(out) - 1, -1, -1) if out[k].strip()), None)
        if (i + 1 < n and _UNDERLINE.match(lines[i + 1]) and not _indent(line) and line.strip()
                and not _UNDERLINE.match(line)):  # a section title: its underline as long as the title
            out += [line, lines[i + 1][0] * max(len(line.rstrip()), len(lines[i + 1].rstrip()))]
            i += 2
            continue
        if _TABLE_BORDER.match(line):  # a simple table: as it is (its columns are positions), to its last border
            out.append(line)
            i += 1
            while i < n:
                out.append(lines[i])
                i += 1
                if _TABLE_BORDER.match(out[-1]) and (i == n or not lines[i].strip()):
                    break
            continue
        if line.lstrip().startswith(">>>"):  # a doctest block: as it is, to its blank line
            while i < n and lines[i].strip():
                out.append(lines[i])
                i += 1
            continue
        if prev is not None and _indent(line) > _text_indent(out[prev]):
            base = _text_indent(out[prev])
            j = i
            while j < n and (not lines[j].strip() or _indent(lines[j]) > base):
                j += 1
            block = lines[i:j]
            while block and not block[-1].strip():
                block.pop()
            p = out[prev].rstrip()
            if not p.endswith("::"):
                if p.endswith(":") and prev == len(out) - 1:
                    out[prev] = p + ":"
                else:
                    out += ["", " " * base + "::"]
            out += ["", *block, ""]
            i += len(block)
            continue
        bullet = _BULLET.match(line) is not None
        if bullet and list_indent is None and out and out[-1].strip():
            out.append("")  # a list needs a blank line before it
        if not bullet and list_indent is not None and _indent(line) <= list_indent:
            if out and out[-1].strip():
                out.append("")  # ... and after it
            list_indent = None
        if bullet:
            list_indent = _indent(line)
        out.append(_escape(line))
        i += 1
    return out


_PUBLIC: dict[int, str] = {}
_CURRENT = {"module": ""}


def process_docstring(app, what, name, obj, options, lines):
    if what == "module":  # autodoc reads a module's docstring before its members
        _CURRENT["module"] = name
    lines[:] = normalize_docstring(lines)


def skip_public_duplicates(app, what, name, obj, skip, options):
    """Document each class and function once: the objects of ``flexmb.__all__`` on the index page, the
    others on their home module's page (a package or module that re-exports them, such as
    ``flexmb.elements`` or ``flexmb.elements.beam.kernels``, leaves them out)."""
    kernel = hasattr(obj, "py_func")  # a compiled (numba) function: documented like a function, on its home module's page
    if what != "module" or not (inspect.isclass(obj) or inspect.isfunction(obj) or kernel):
        return None
    if id(obj) in _PUBLIC or getattr(obj, "__module__", _CURRENT["module"]) != _CURRENT["module"]:
        return True
    return None


def canonical_ids(app, doctree):
    """Give each API entry documented under a public name (``flexmb.Model``) the id of its home name
    (``flexmb.model.Model``) too, so that links made to the home name (viewcode's "[docs]" links back
    from the source) land on it."""
    import importlib

    from sphinx import addnodes

    for sig in doctree.findall(addnodes.desc_signature):
        module, fullname = sig.get("module"), sig.get("fullname")
        if not module or not fullname:
            continue
        try:
            obj = importlib.import_module(module)
            for part in fullname.split("."):
                obj = getattr(obj, part)
        except (ImportError, AttributeError):
            continue
        home, qual = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
        if isinstance(home, str) and isinstance(qual, str) and "<" not in qual:
            real = f"{home}.{qual}"
            if real not in sig["ids"]:
                sig["ids"].append(real)


def setup(app):
    import flexmb

    for n in flexmb.__all__:
        obj = getattr(flexmb, n)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            _PUBLIC[id(obj)] = n
    directives.register_directive("flexmb-units", UnitsDirective)
    app.connect("autodoc-process-docstring", process_docstring, priority=600)
    app.connect("autodoc-skip-member", skip_public_duplicates)
    app.connect("doctree-read", canonical_ids)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
