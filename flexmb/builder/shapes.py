"""Body shapes: triangle meshes carried by nodes, drawn in the ParaView output and the animation
(issue 37.3). Data only: shapes add no mass and no force.

``add_visual(builder, node, mesh, position=, rotation=, scale=)`` reads ``mesh`` with meshio (STL,
OBJ, VTK/VTU, PLY, OFF, ...; Collada .dae through trimesh where it is installed) or takes
(points, triangles), places it in the node's axes (p_node = rotation · (scale · p_mesh) + position)
and stores it once, as a record of the ``shape`` element family (``builder.add_element``). A
shape's points may hang on several nodes: ``add_beam_shapes(builder)`` gives every beam element a
tube (or box) of its section's size whose end rings ride on the element's two nodes, so it bends,
stretches and twists with them (straight between them).

The family (:class:`Shapes`, registered when flexmb is imported) compiles the meshes into one
point array in node axes with each point's carrier node, and the triangles (``Model.elements
["shape"]``); its drawing (stored with every result: flexmb.results.drawing) adds the points,
placed at every output row by their nodes' poses, x_node + R_node p, and the triangles as cells of
kind ``shape``: ParaView files hold them beside the line cells (threshold on ``cell_kind``), the
animation draws them shaded.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from flexmb.builder import arguments as args
from flexmb.elements import FAMILIES, register
from flexmb.elements.family import ElementData, ElementFamily, NodeTable, frozen_arrays, listing
from flexmb.errors import ModelError

if TYPE_CHECKING:  # type hints only
    from flexmb.model import Model

__all__ = ["ShapeSpec", "ShapeData", "Shapes", "read_mesh", "add_visual", "add_beam_shapes", "box_mesh",
           "cylinder_mesh", "sphere_mesh"]


@dataclass(frozen=True, eq=False)
class ShapeSpec:
    """A shape: ``points`` (n, 3) each in the axes of its carrier node ``nodes[i]``, relative to it,
    and ``triangles`` (m, 3) of point indices."""

    name: str
    nodes: tuple[str, ...]
    points: np.ndarray
    triangles: np.ndarray


@dataclass(frozen=True, eq=False)
class ShapeData(ElementData):
    point_node: np.ndarray  # carrier node of every point                                   (n_points)
    points: np.ndarray  # the points in their carrier node's axes, relative to it [m]      (n_points x 3)
    triangles: np.ndarray  # point indices of every triangle                               (n_triangles x 3)
    triangle_shape: np.ndarray  # the shape each triangle belongs to                        (n_triangles)


class Shapes(ElementFamily):
    """Triangle meshes carried by nodes (module docstring): data only, drawn as cells of kind ``shape``."""

    name = "shape"
    label = "shape"
    plural = "shapes"
    forces = False
    cell_kind = "shape"
    drawing_keys = ("shape_point_node", "shape_points", "shape_triangles", "shape_triangle_shape")
    drawing_real_keys = ("shape_points",)
    #: integer drawing arrays that index points or shapes, not nodes (flexmb.results.drawing.check_drawing)
    drawing_index_keys = ("shape_triangles", "shape_triangle_shape")

    def compile(self, records: Sequence[ShapeSpec], nodes: NodeTable) -> ShapeData:
        node, pts, tris, owner, first = [], [], [], [], 0
        for k, r in enumerate(records):
            if not isinstance(r, ShapeSpec):
                raise ModelError(f"shape {getattr(r, 'name', r)!r}: a shape record must be a ShapeSpec (add_visual).")
            node += [nodes.index(n, f"shape '{r.name}'") for n in r.nodes]
            pts.append(np.asarray(r.points, dtype=float).reshape(-1, 3))
            tris.append(np.asarray(r.triangles, dtype=np.int64).reshape(-1, 3) + first)
            owner.append(np.full(len(r.triangles), k, dtype=np.int64))
            first += len(r.points)
        return ShapeData(**frozen_arrays(dict(
            names=tuple(r.name for r in records), point_node=np.array(node, dtype=np.int64),
            points=np.concatenate(pts) if pts else np.zeros((0, 3)),
            triangles=np.concatenate(tris) if tris else np.zeros((0, 3), dtype=np.int64),
            triangle_shape=np.concatenate(owner) if owner else np.zeros(0, dtype=np.int64))))

    def drawing(self, model: Model, data: ShapeData) -> dict[str, np.ndarray]:
        return {"shape_point_node": np.asarray(data.point_node, dtype=np.int64),
                "shape_points": np.asarray(data.points, dtype=np.float64).reshape(-1, 3),
                "shape_triangles": np.asarray(data.triangles, dtype=np.int64).reshape(-1, 3),
                "shape_triangle_shape": np.asarray(data.triangle_shape, dtype=np.int64)}

    def check_drawing(self, d: Mapping[str, np.ndarray], n_nodes: int, names: Mapping[str, int]) -> str:
        node, pts, tri, owner = (d[k] for k in self.drawing_keys)
        if node.ndim != 1 or pts.shape != (node.size, 3):
            return f"drawing 'shape_points' has shape {pts.shape}, expected ({node.size}, 3)"
        if not np.isfinite(pts).all():
            return "drawing 'shape_points' holds non-finite values"
        if tri.ndim != 2 or tri.shape[1] != 3 or owner.shape != (tri.shape[0],):
            return f"drawing 'shape_triangles' has shape {tri.shape} ('shape_triangle_shape' {owner.shape})"
        if tri.size and (tri.min() < 0 or tri.max() >= node.size):
            return f"drawing 'shape_triangles' points at point {int(tri.max())} of {node.size}"
        if owner.size and owner.min() < 0:
            return "drawing 'shape_triangle_shape' holds a negative index"
        return ""

    def points(self, d: Mapping[str, np.ndarray], x: np.ndarray, R: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The shapes' points at node poses x, R: x_node + R_node p."""
        n = d["shape_point_node"]
        return np.einsum("pij,pj->pi", R[n], d["shape_points"]) + x[n], n

    def triangles(self, d: Mapping[str, np.ndarray], first_point: int) -> np.ndarray:
        """Triangle cells (n, 3): point indices of the drawing (its own points start at ``first_point``)."""
        return np.asarray(d["shape_triangles"], dtype=np.int64).reshape(-1, 3) + first_point

    def element_nodes(self, data: ShapeData) -> np.ndarray:
        return np.zeros((data.n, 0), dtype=np.int64)

    def node_roles(self, model: Model, data: ShapeData) -> dict[int, list[str]]:
        out: dict[int, list[str]] = {}
        owner = np.zeros(len(data.point_node), dtype=np.int64)
        for k in range(data.n):
            owner[np.unique(data.triangles[data.triangle_shape == k])] = k
        for n, k in zip(data.point_node, owner):
            names = out.setdefault(int(n), [])
            if data.names[k] not in names:
                names.append(data.names[k])
        return out

    def describe(self, model: Model, data: ShapeData, limit: int) -> list[str]:
        roles = self.node_roles(model, data)
        rows = [f"  {name}: {int((data.triangle_shape == k).sum())} triangles on node(s) "
                f"{[model.node_names[n] for n, s in roles.items() if name in s][:4]}" for k, name in enumerate(data.names)]
        return ["shapes (drawn only):"] + listing(rows, limit)


if "shape" not in FAMILIES:
    register(Shapes())


# ---------------------------------------------------------------------------- meshes
def _triangulate(cells: Sequence[tuple[str, np.ndarray]]) -> np.ndarray:
    out = []
    for kind, data in cells:
        data = np.asarray(data, dtype=np.int64)
        if kind == "triangle":
            out.append(data)
        elif kind in ("quad", "polygon") or kind.startswith("polygon"):
            for i in range(1, data.shape[1] - 1):  # a fan: convex faces, as mesh files hold them
                out.append(data[:, [0, i, i + 1]])
    return np.concatenate(out) if out else np.zeros((0, 3), dtype=np.int64)


def read_mesh(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """(points (n, 3), triangles (m, 3)) of the surface mesh in ``path``: meshio's formats (STL, OBJ,
    VTK, VTU, PLY, OFF, ...; quads and polygons split into triangles), Collada (.dae) through trimesh
    where it is installed (yourdfpy brings it). ModelError naming the file if it cannot be read or
    holds no triangle."""
    p = Path(path)
    if not p.is_file():
        raise ModelError(f"mesh '{p}': no such file.")
    if p.suffix.lower() == ".dae":
        try:
            import trimesh  # an optional dependency (yourdfpy's): meshio has no Collada reader
        except ImportError:
            raise ModelError(f"mesh '{p}': Collada (.dae) needs trimesh (pip install trimesh pycollada); or give an "
                             "STL or OBJ of it.") from None
        try:
            m = trimesh.load(str(p), force="mesh")
        except Exception as exc:  # the file's reader failing: reported, not raised through
            raise ModelError(f"mesh '{p}': trimesh cannot read it ({type(exc).__name__}: {exc}).") from None
        pts, tri = np.asarray(m.vertices, dtype=float), np.asarray(m.faces, dtype=np.int64)
    else:
        import meshio  # a flexmb dependency, imported where a mesh is read (a second to load)

        try:
            with np.errstate(over="ignore"):  # meshio's binary-size test of an ASCII STL overflows harmlessly
                m = meshio.read(p)
        except Exception as exc:  # meshio raises several kinds for unreadable files
            raise ModelError(f"mesh '{p}': meshio cannot read it ({type(exc).__name__}: {exc}).") from None
        pts, tri = np.asarray(m.points, dtype=float)[:, :3], _triangulate([(c.type, c.data) for c in m.cells])
    if not len(tri):
        raise ModelError(f"mesh '{p}': it holds no triangles, quads or polygons (a surface mesh is needed).")
    if not np.isfinite(pts).all():
        raise ModelError(f"mesh '{p}': its points are not all finite numbers.")
    return pts, tri


def box_mesh(size: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """A box of edge lengths ``size`` centred on the origin (8 points, 12 triangles)."""
    s = 0.5 * np.asarray(size, dtype=float)
    pts = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=float) * s
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    return pts, _triangulate([("quad", np.array(quads))])


def cylinder_mesh(radius: float, length: float, sides: int = 24) -> tuple[np.ndarray, np.ndarray]:
    """A closed cylinder along z, centred on the origin."""
    a = 2 * np.pi * np.arange(sides) / sides
    ring = np.stack([radius * np.cos(a), radius * np.sin(a)], axis=1)
    pts = np.concatenate([np.c_[ring, np.full(sides, -length / 2)], np.c_[ring, np.full(sides, length / 2)],
                          [[0, 0, -length / 2], [0, 0, length / 2]]])
    i, j = np.arange(sides), (np.arange(sides) + 1) % sides
    tri = np.concatenate([np.stack([i, j, sides + j], 1), np.stack([i, sides + j, sides + i], 1),
                          np.stack([np.full(sides, 2 * sides), j, i], 1),
                          np.stack([np.full(sides, 2 * sides + 1), sides + i, sides + j], 1)])
    return pts, tri


def sphere_mesh(radius: float, n: int = 12) -> tuple[np.ndarray, np.ndarray]:
    """A UV sphere (``n`` bands, 2n sides), centred on the origin."""
    th = np.pi * np.arange(1, n) / n
    ph = 2 * np.pi * np.arange(2 * n) / (2 * n)
    ring = [np.stack([np.sin(t) * np.cos(ph), np.sin(t) * np.sin(ph), np.full(2 * n, np.cos(t))], 1) for t in th]
    pts = radius * np.concatenate([[[0, 0, 1]], *ring, [[0, 0, -1]]])
    m, tri = 2 * n, []
    k = np.arange(m)
    tri.append(np.stack([np.zeros(m, dtype=int), 1 + k, 1 + (k + 1) % m], 1))
    for b in range(n - 2):
        a0, a1 = 1 + b * m, 1 + (b + 1) * m
        tri += [np.stack([a0 + k, a1 + k, a1 + (k + 1) % m], 1), np.stack([a0 + k, a1 + (k + 1) % m, a0 + (k + 1) % m], 1)]
    last = len(pts) - 1
    tri.append(np.stack([np.full(m, last), 1 + (n - 2) * m + (k + 1) % m, 1 + (n - 2) * m + k], 1))
    return pts, np.concatenate(tri)


# ---------------------------------------------------------------------------- builder side
def _new_name(builder: Any, base: str) -> str:
    taken = builder.elements.get("shape", {})
    name, k = base, 1
    while name in taken:
        k += 1
        name = f"{base}.{k}"
    return name


def add_visual(builder: Any, node: str, mesh: str | Path | tuple[np.ndarray, np.ndarray],
               position: Sequence[float] = (0.0, 0.0, 0.0), rotation: Any = None, scale: float | Sequence[float] = 1.0,
               name: str | None = None) -> str:
    """Give ``node`` a shape: ``mesh`` a file (:func:`read_mesh`) or (points, triangles), placed in the
    node's axes as p = rotation · (scale · p_mesh) + position (``scale``: one factor or three).
    Stored once per shape; returns its name (default: ``<node>.shape``, numbered if taken)."""
    who = f"add_visual: shape on node {node!r}"
    if node not in builder.nodes:
        raise ModelError(f"{who}: unknown node {node!r}. Known nodes: {list(builder.nodes)[:20]}.")
    if isinstance(mesh, (str, Path)):
        pts, tri = read_mesh(mesh)
    else:
        pts, tri = (np.asarray(a) for a in mesh)
        if pts.ndim != 2 or pts.shape[1] != 3 or tri.ndim != 2 or tri.shape[1] != 3 or not len(tri):
            raise ModelError(f"{who}: mesh must be a file name or (points (n, 3), triangles (m, 3)).")
        if tri.min() < 0 or tri.max() >= len(pts):
            raise ModelError(f"{who}: the triangles point at points that are not there.")
    s = np.broadcast_to(np.asarray(scale, dtype=float), (3,))
    if not (np.isfinite(s).all() and (s > 0).all()):
        raise ModelError(f"{who}: scale = {scale!r} must be one positive number or three.")
    R = np.eye(3) if rotation is None else args.matrix3(rotation, who, "rotation")
    if np.abs(R.T @ R - np.eye(3)).max() > 1e-9 or np.linalg.det(R) < 0:
        raise ModelError(f"{who}: rotation is not a proper rotation matrix.")
    p = args.vector(position, 3, who, "position")
    local = (np.asarray(pts, dtype=float) * s) @ R.T + p
    name = _new_name(builder, f"{node}.shape") if name is None else args.name(name, who)
    return builder.add_element("shape", ShapeSpec(name, (node,) * len(local), local, np.asarray(tri, dtype=np.int64)))


def add_beam_shapes(builder: Any, beams: Sequence[str] | None = None, kind: str = "tube",
                    size: float | Sequence[float] | None = None, sides: int = 16) -> list[str]:
    """Draw beam elements with their section (module docstring): ``kind="tube"`` a tube of outer radius
    ``size`` (default: a circular tube with the section's A and I, r_o² = (4 I / A + A / π) / 2 with
    I = (Iy + Iz) / 2: exact for round tubes and bars), ``kind="box"`` a box of ``size`` = (width along
    e2, height along e3). ``beams``: element names (default: all). Each element's end rings ride on its
    two nodes (in their axes through the element's section frame). Returns the shape names."""
    if kind not in ("tube", "box"):
        raise ModelError(f"add_beam_shapes: kind = {kind!r} must be 'tube' or 'box'.")
    if kind == "box" and (size is None or np.ndim(size) != 1 or len(size) != 2):
        raise ModelError("add_beam_shapes: a box needs size = (width along e2, height along e3).")
    names = list(builder.beams) if beams is None else list(beams)
    out = []
    for bn in names:
        if bn not in builder.beams:
            raise ModelError(f"add_beam_shapes: unknown beam element {bn!r}.")
        b = builder.beams[bn]
        s = b.section
        if kind == "tube":
            r = float(size) if size is not None else float(np.sqrt(0.5 * (2 * (s.Iy + s.Iz) / s.A + s.A / np.pi)))
            a = 2 * np.pi * np.arange(sides) / sides
            ring = np.stack([np.zeros(sides), r * np.cos(a), r * np.sin(a)], 1)  # section axes (e1 along the beam)
        else:
            w, h = 0.5 * float(size[0]), 0.5 * float(size[1])
            ring = np.array([[0, -w, -h], [0, w, -h], [0, w, h], [0, -w, h]], dtype=float)
        m = len(ring)
        pts, nodes = [], []
        for nd in (b.node_a, b.node_b):
            spec = builder.nodes[nd]
            C = spec.rotation.T @ b.frame  # section frame in the node's axes (constant: elements/beam C_i)
            pts.append(ring @ C.T)
            nodes += [nd] * m
        i, j = np.arange(m), (np.arange(m) + 1) % m
        tri = np.concatenate([np.stack([i, j, m + j], 1), np.stack([i, m + j, m + i], 1)])
        out.append(builder.add_element("shape", ShapeSpec(_new_name(builder, f"{bn}.section"), tuple(nodes),
                                                          np.concatenate(pts), tri)))
    return out
