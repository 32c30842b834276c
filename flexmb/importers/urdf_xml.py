"""The URDF file read as XML before the parser sees it: every tag and attribute flexmb reads is
checked here, with its line, and everything it does not read is listed (flexmb.importers.urdf).

:func:`read` returns an :class:`Inventory`: the line of every link and joint (for later messages),
the tags and attributes flexmb leaves out (each with its count and first line), and the tree
(parent joint of every link, the root). A malformed file raises URDFError naming the file, the tag
and the line: XML that is not well-formed, a <link> or <joint> without a name, a joint of an
unknown type or without <parent>/<child>, a number that is not one (origin xyz/rpy, axis, mass,
inertia, limit, dynamics, mimic; where shapes are imported, a geometry's sizes), a negative mass or
damping, a zero axis, links that are not one tree (two parents, no root, several roots, a cycle).
"""

from __future__ import annotations

import io
import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from flexmb.errors import URDFError

__all__ = ["Inventory", "read", "without_geometries", "JOINT_TYPES", "SUPPORTED"]

JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")

#: the tags flexmb imports, by parent tag, with the attributes it reads
SUPPORTED: dict[str, dict[str, tuple[str, ...]]] = {
    "robot": {"link": ("name",), "joint": ("name", "type")},
    "link": {"inertial": ()},
    "inertial": {"origin": ("xyz", "rpy"), "mass": ("value",),
                 "inertia": ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")},
    "geometry": {"mesh": ("filename", "scale"), "box": ("size",), "cylinder": ("radius", "length"), "sphere": ("radius",)},
    "joint": {"origin": ("xyz", "rpy"), "parent": ("link",), "child": ("link",), "axis": ("xyz",),
              "limit": ("lower", "upper", "effort", "velocity"), "dynamics": ("damping", "friction"),
              "mimic": ("joint", "multiplier", "offset")},
}
#: attributes of the root tag that carry no model data
_ROBOT_ATTRIBUTES = ("name", "version")


@dataclass
class Inventory:
    """What :func:`read` found: ``links`` and ``joints`` (name -> line), ``parent_joint`` (link ->
    the joint whose child it is), ``root`` (the link no joint has as child), ``left_out``
    ("<tag>" or "<tag> attribute a" -> (count, first line)) and the ``visuals`` lines by link."""

    path: Path
    links: dict[str, int] = field(default_factory=dict)
    joints: dict[str, int] = field(default_factory=dict)
    joint_type: dict[str, str] = field(default_factory=dict)
    parent_joint: dict[str, str] = field(default_factory=dict)
    root: str = ""
    shapes: tuple[str, ...] = ()  # "visual" or "collision": imported as shapes (checked, not left out)
    left_out: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))

    def leave_out(self, what: str, line: int) -> None:
        entry = self.left_out[what]
        if entry[0] == 0:
            entry[1] = line
        entry[0] += 1

    def where(self, line: int) -> str:
        return f"{self.path.name}, line {line}"


def _error(inv: Inventory, el, message: str) -> URDFError:
    return URDFError(f"URDF {inv.where(el.sourceline)}: <{el.tag}>: {message}")


def _numbers(inv: Inventory, el, attr: str, n: int, default: str | None = None) -> list[float]:
    text = el.get(attr, default)
    if text is None:
        raise _error(inv, el, f"the attribute {attr!r} is missing.")
    try:
        vals = [float(v) for v in text.split()]
    except ValueError:
        vals = []
    if len(vals) != n or not all(math.isfinite(v) for v in vals):
        want = "a number" if n == 1 else f"{n} numbers separated by spaces"
        raise _error(inv, el, f"{attr}={text!r} is not {want}.")
    return vals


def _number(inv: Inventory, el, attr: str, required: bool = True, nonnegative: bool = False) -> float | None:
    if el.get(attr) is None and not required:
        return None
    x = _numbers(inv, el, attr, 1)[0]
    if nonnegative and x < 0:
        raise _error(inv, el, f"{attr}={el.get(attr)!r} is negative; it must be >= 0.")
    return x


def _check_attributes(inv: Inventory, el, known: tuple[str, ...]) -> None:
    for attr in el.attrib:
        if "}" in attr or attr.startswith("xmlns"):
            continue  # namespaced (xacro, ...): no model data
        if attr not in known:
            inv.leave_out(f"<{el.tag}> attribute {attr!r}", el.sourceline)


def _children(el):
    return [c for c in el if isinstance(c.tag, str)]  # elements only (no comments, processing instructions)


def _left_out_subtree(inv: Inventory, el) -> None:
    inv.leave_out(f"<{el.tag}>", el.sourceline)


def _check_origin(inv: Inventory, el) -> None:
    _numbers(inv, el, "xyz", 3, "0 0 0")
    _numbers(inv, el, "rpy", 3, "0 0 0")


def _check_shape(inv: Inventory, el) -> None:
    """A <visual> or <collision> imported as a shape: its <origin> and <geometry> checked, the rest listed."""
    _check_attributes(inv, el, ("name",))
    geometry = 0
    for c in _children(el):
        if c.tag == "origin":
            _check_attributes(inv, c, ("xyz", "rpy"))
            _check_origin(inv, c)
        elif c.tag == "geometry":
            geometry += 1
            _check_attributes(inv, c, ())
            kinds = _children(c)
            if len(kinds) != 1:
                raise _error(inv, c, "must hold exactly one of <mesh>, <box>, <cylinder>, <sphere>.")
            g = kinds[0]
            if g.tag not in SUPPORTED["geometry"]:
                raise _error(inv, g, f"unknown geometry; URDF knows {list(SUPPORTED['geometry'])}.")
            _check_attributes(inv, g, SUPPORTED["geometry"][g.tag])
            if g.tag == "mesh":
                if not g.get("filename"):
                    raise _error(inv, g, "has no filename.")
                if g.get("scale") is not None and min(_numbers(inv, g, "scale", 3)) <= 0:
                    raise _error(inv, g, "scale must be positive.")
            elif g.tag == "box":
                if min(_numbers(inv, g, "size", 3)) <= 0:
                    raise _error(inv, g, "size must be positive.")
            else:
                for a in SUPPORTED["geometry"][g.tag]:
                    if _numbers(inv, g, a, 1)[0] <= 0:
                        raise _error(inv, g, f"{a} must be positive.")
        else:
            _left_out_subtree(inv, c)
    if geometry != 1:
        raise _error(inv, el, f"has {geometry} <geometry> tags; it needs one.")


def _check_link(inv: Inventory, el) -> None:
    for c in _children(el):
        if c.tag in inv.shapes:
            _check_shape(inv, c)
            continue
        if c.tag != "inertial":
            _left_out_subtree(inv, c)
            continue
        _check_attributes(inv, c, ())
        seen = set()
        for d in _children(c):
            if d.tag not in SUPPORTED["inertial"]:
                _left_out_subtree(inv, d)
                continue
            seen.add(d.tag)
            _check_attributes(inv, d, SUPPORTED["inertial"][d.tag])
            if d.tag == "origin":
                _check_origin(inv, d)
            elif d.tag == "mass":
                _number(inv, d, "value", nonnegative=True)
            else:
                for a in SUPPORTED["inertial"]["inertia"]:
                    _number(inv, d, a)
        for need in ("mass", "inertia"):
            if need not in seen:
                raise _error(inv, c, f"of link '{el.get('name')}' has no <{need}>.")


def _check_joint(inv: Inventory, el, name: str) -> dict[str, str]:
    typ = el.get("type")
    if typ is None:
        raise _error(inv, el, f"joint '{name}' has no type; give one of {list(JOINT_TYPES)}.")
    if typ not in JOINT_TYPES:
        raise _error(inv, el, f"joint '{name}' has the unknown type {typ!r}; URDF knows {list(JOINT_TYPES)}.")
    ends: dict[str, str] = {}
    for c in _children(el):
        if c.tag not in SUPPORTED["joint"]:
            _left_out_subtree(inv, c)
            continue
        _check_attributes(inv, c, SUPPORTED["joint"][c.tag])
        if c.tag in ("parent", "child"):
            link = c.get("link")
            if not link:
                raise _error(inv, c, f"of joint '{name}' has no link attribute.")
            ends[c.tag] = link
        elif c.tag == "origin":
            _check_origin(inv, c)
        elif c.tag == "axis":
            if not any(_numbers(inv, c, "xyz", 3, "1 0 0")):
                raise _error(inv, c, f"joint '{name}': the axis is zero; give a direction.")
        elif c.tag == "limit":
            for a in ("lower", "upper", "effort", "velocity"):
                _number(inv, c, a, required=False, nonnegative=a in ("effort", "velocity"))
        elif c.tag == "dynamics":
            for a in ("damping", "friction"):
                _number(inv, c, a, required=False, nonnegative=True)
        else:  # mimic
            if not c.get("joint"):
                raise _error(inv, c, f"of joint '{name}' names no joint to follow.")
            for a in ("multiplier", "offset"):
                _number(inv, c, a, required=False)
    for need in ("parent", "child"):
        if need not in ends:
            raise _error(inv, el, f"joint '{name}' has no <{need}>.")
    return ends


def read(path: Path, shapes: str | None = None) -> Inventory:
    """Check the URDF file ``path`` and list what flexmb leaves out of it (module docstring);
    ``shapes``: "visual" or "collision", the link tags imported as shapes (checked like the rest)."""
    from lxml import etree  # yourdfpy's own XML library: there whenever the import is

    inv = Inventory(path, shapes=(shapes,) if shapes else ())
    try:
        tree = etree.parse(str(path), etree.XMLParser(remove_comments=True, remove_pis=True))
    except etree.XMLSyntaxError as exc:
        line = exc.lineno if exc.lineno else "?"
        raise URDFError(f"URDF {path.name}, line {line}: not well-formed XML: {exc.msg}") from None
    except OSError as exc:
        raise URDFError(f"URDF {path}: cannot be read ({exc}).") from None
    robot = tree.getroot()
    if robot.tag != "robot":
        raise _error(inv, robot, "the root tag of a URDF file must be <robot>.")
    _check_attributes(inv, robot, _ROBOT_ATTRIBUTES)
    ends: dict[str, dict[str, str]] = {}
    for el in _children(robot):
        if el.tag not in SUPPORTED["robot"]:
            _left_out_subtree(inv, el)
            continue
        _check_attributes(inv, el, SUPPORTED["robot"][el.tag])
        name = el.get("name")
        if not name:
            raise _error(inv, el, "has no name attribute.")
        table = inv.links if el.tag == "link" else inv.joints
        if name in table:
            raise _error(inv, el, f"a second {el.tag} named '{name}' (the first is at line {table[name]}).")
        table[name] = el.sourceline
        if el.tag == "link":
            _check_link(inv, el)
        else:
            ends[name] = _check_joint(inv, el, name)
            inv.joint_type[name] = el.get("type")
    if not inv.links:
        raise _error(inv, robot, "the robot has no <link>.")
    _check_tree(inv, ends, robot)
    return inv


def _check_tree(inv: Inventory, ends: dict[str, dict[str, str]], robot) -> None:
    """Parents and children name links; every link has at most one parent joint; one root; no cycle."""
    for name, e in ends.items():
        for role in ("parent", "child"):
            if e[role] not in inv.links:
                raise URDFError(f"URDF {inv.where(inv.joints[name])}: <joint> '{name}': its {role} link "
                                f"'{e[role]}' is not defined (known links: {list(inv.links)[:20]}).")
        child = e["child"]
        if child in inv.parent_joint:
            first = inv.parent_joint[child]
            raise URDFError(f"URDF {inv.where(inv.joints[name])}: <joint> '{name}': link '{child}' is already the "
                            f"child of joint '{first}' (line {inv.joints[first]}); a URDF describes a tree: import "
                            "it without the joint and close the loop with a cut (add_bushing, add_rigid_cut).")
        inv.parent_joint[child] = name
    roots = [link for link in inv.links if link not in inv.parent_joint]
    if len(roots) != 1:
        what = "no link" if not roots else f"{len(roots)} links ({roots[:10]})"
        raise URDFError(f"URDF {inv.where(robot.sourceline)}: <robot>: {what} without a parent joint; the links "
                        "must form one tree with one root link.")
    inv.root = roots[0]
    children = defaultdict(list)
    for e in ends.values():
        children[e["parent"]].append(e["child"])
    seen, stack = set(), [inv.root]
    while stack:
        link = stack.pop()
        seen.add(link)
        stack.extend(children[link])
    if len(seen) != len(inv.links):  # the links left over hang in a cycle
        rest = [link for link in inv.links if link not in seen]
        raise URDFError(f"URDF {inv.where(inv.links[rest[0]])}: <link> '{rest[0]}': the joints of links {rest[:10]} "
                        "form a cycle, not reached from the root link "
                        f"'{inv.root}'; a URDF describes a tree.")


def without_geometries(path: Path, shapes: str | None) -> io.BytesIO:
    """The URDF file ``path`` (checked by :func:`read`) without the link geometries that are not imported
    (<visual> and <collision>, but the kind ``shapes``), for yourdfpy: it parses every geometry and fails
    on one that is malformed, though flexmb only lists them as left out."""
    from lxml import etree  # see read

    tree = etree.parse(str(path), etree.XMLParser(remove_comments=True, remove_pis=True))
    for link in tree.getroot().iter("link"):
        for c in list(link):
            if c.tag in ("visual", "collision") and c.tag != shapes:
                link.remove(c)
    return io.BytesIO(etree.tostring(tree))
