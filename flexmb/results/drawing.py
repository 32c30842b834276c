"""What a mechanism looks like as points and line cells (docs/paraview.md), independent of the file
format: :func:`drawing_of` extracts the topology a picture needs from a Model (stored with
every result, so a result can be drawn without rebuilding its model), :func:`frames` turns a
result into points, point data and cell data per output time.

Points: the nodes, then the current joint points, then the element families' own points (the
bodies' centres of mass). Line cells, by kind (``cell_kind`` says which, so ParaView can
threshold on it; :func:`cell_kinds`), each drawn by its element family (flexmb.elements):

* 0 ``beam``: node a -> node b of every beam element (in element order, so cell i is beam
  element i);
* 1 ``joint``: parent node -> joint point -> child node of every tree joint (the rigid link
  a body forms between its node and its joint points; free joints draw nothing, a segment of
  zero length is left out);
* 2 ``body``: node -> centre of mass of every rigid body;
* 3 ``particle``: first particle node -> each further particle node of every particle body;
* 4 ``bushing``: node a -> node b of every bushing, in bushing order (one bushing to ground is a
  cell of zero length at its node b);
* 5, ...: the cells of further registered element families, in registry order (``rigid_cut``:
  one cell per rigid cut, drawn like a bushing; ``spring_damper``: one cell per spring-damper, from
  its point on node a (or on ground) to its point on node b; ``shape``: the triangles of the body and
  beam shapes of flexmb.builder.shapes, :func:`triangles`, whose points follow their carrier nodes).

Point data: ``displacement`` (from the first output time), ``velocity`` of the point itself,
``angular_velocity`` and axes ``e1``, ``e2``, ``e3`` of the node that carries the point (a
joint point moves with the joint's child node, a centre of mass with its body's node; a point fixed on
ground is at rest, with the global axes).
Cell data: the element families' recorded outputs on their cells (ElementFamily.outputs: the
beams' section forces ``axial_force``, ``shear_force_y``, ``shear_force_z``, ``torque``,
``bending_moment_y``, ``bending_moment_z`` in the element's co-rotated axes, and
``strain_energy``; the cut forces of bushings and rigid cuts, ``cut_force_x`` ... ``cut_moment_z``
in the cut's axes and ``cut_force_global_x`` ... ``cut_moment_global_z``, on one cell per cut; the
spring-dampers' ``spring_damper_length``, ``spring_damper_rate`` and ``spring_damper_force``);
zero on the other cells; ``cell_kind`` (int).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

import numpy as np

from flexmb.elements import FAMILIES

if TYPE_CHECKING:  # type hints only: results/ stands below the model and the result loaders
    from flexmb.model import Model
    from flexmb.results.result import Result

__all__ = ["cell_kinds", "drawing_keys", "drawing_of", "check_drawing", "lines", "triangles", "frames", "frame_indices"]

_FIXED_POINT_KINDS = ("revolute", "spherical", "universal", "fixed")
_JOINT_KEYS = ("n_nodes", "joint_parent", "joint_child", "joint_draw", "joint_child_segment")


def _drawn(d: Mapping[str, np.ndarray] | None = None) -> list:
    """The registered element families that draw cells, in the order of their cell kinds; with a
    drawing ``d``, those it has arrays of (a result written before a family was registered has
    none of its arrays: the family draws nothing there)."""
    fams = [f for f in FAMILIES.values() if f.cell_kind and (d is None or any(k in d for k in f.drawing_keys))]
    return sorted(fams, key=lambda f: cell_kinds().index(f.cell_kind))


def cell_kinds() -> tuple[str, ...]:
    """The cell kinds by ``cell_kind`` number: beam, joint, body, particle, bushing, then those of
    further registered element families."""
    base = ("beam", "joint", "body", "particle", "bushing")
    return base + tuple(f.cell_kind for f in FAMILIES.values() if f.cell_kind and f.cell_kind not in base)


def drawing_keys() -> tuple[str, ...]:
    """The arrays of a drawing (:func:`drawing_of`): the joints' and every drawn family's."""
    return _JOINT_KEYS + tuple(k for f in _drawn() for k in f.drawing_keys)


def drawing_of(model: Model) -> dict[str, np.ndarray]:
    """The topology needed to draw ``model``: a dict of small int/float arrays (JSON- and
    npz-friendly): the joints', then each element family's (ElementFamily.drawing)."""
    kinds = [k.name for k in model.joint_kinds]
    offset0 = np.linalg.norm(np.asarray(model.joint_child_offset).reshape(-1, 3), axis=1)
    out = {
        "n_nodes": np.array(model.n_nodes, dtype=np.int64),
        "joint_parent": np.asarray(model.joint_parent, dtype=np.int64),
        "joint_child": np.asarray(model.joint_child, dtype=np.int64),
        "joint_draw": np.array([k != "free" for k in kinds], dtype=np.int64),
        "joint_child_segment": np.array([not (k in _FIXED_POINT_KINDS and o == 0.0) and k != "free"
                                         for k, o in zip(kinds, offset0)], dtype=np.int64),
    }
    for f in _drawn():
        if f.name in model.elements:
            out.update(f.drawing(model, model.elements[f.name]))
    return out


def check_drawing(d: dict[str, np.ndarray], n_nodes: int, n_joints: int, names: Mapping[str, int]) -> str:
    """What is wrong with the drawing ``d`` of a result with ``n_nodes`` nodes, ``n_joints``
    joints and the name counts ``names`` (e.g. ``{"element_names": 3}``) ('' if nothing): the
    joints' keys and every key of each family it has arrays of, integer index arrays (floats where a family says so) pointing at
    existing nodes, of the lengths the joints and each family (ElementFamily.check_drawing) need."""
    keys = _JOINT_KEYS + tuple(k for f in _drawn(d) for k in f.drawing_keys)
    missing = [k for k in keys if k not in d]
    if missing:
        return f"the drawing lacks {', '.join(missing)}"
    reals = {k for f in _drawn(d) for k in f.drawing_real_keys}
    for k in keys:
        a = d[k]
        real = k in reals
        if not isinstance(a, np.ndarray) or a.dtype.kind not in ("f" if real else "iu"):
            return f"drawing '{k}' is not an array of {'numbers' if real else 'integers'}"
    if d["n_nodes"].shape != () or int(d["n_nodes"]) != n_nodes:
        return f"drawing 'n_nodes' is {d['n_nodes'].tolist()}, the result has {n_nodes} nodes"
    for k in _JOINT_KEYS[1:]:
        if d[k].shape != (n_joints,):
            return f"drawing '{k}' has shape {d[k].shape}, expected ({n_joints},)"
    for f in _drawn(d):
        bad = f.check_drawing(d, n_nodes, names)
        if bad:
            return bad
    indices = {k for f in _drawn(d) for k in getattr(f, "drawing_index_keys", ())}  # point or element indices
    grounds = {k for f in _drawn(d) for k in f.drawing_ground_keys}
    for k in ("joint_parent", "joint_child") + tuple(k for k in keys[len(_JOINT_KEYS):] if k not in reals | indices):
        a = d[k]
        lo = -1 if k == "joint_parent" or k in grounds else 0  # -1: the ground
        if a.size and (a.min() < lo or a.max() >= n_nodes):
            return f"drawing '{k}' points at node {int(a.min() if a.min() < lo else a.max())} of {n_nodes}"
    return ""


def lines(d: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Line cells (n_cells, 2), their kind (n_cells,) and each point's carrier node."""
    N = int(d["n_nodes"])
    nj = d["joint_child"].size
    jp = N + np.arange(nj)
    draw = d["joint_draw"].astype(bool)
    par = draw & (d["joint_parent"] >= 0)
    chi = draw & d["joint_child_segment"].astype(bool)
    joints = np.concatenate([np.stack([d["joint_parent"][par], jp[par]], axis=1),
                             np.stack([jp[chi], d["joint_child"][chi]], axis=1)])
    kinds = cell_kinds()
    segs = {"joint": joints}
    carrier = [np.arange(N), d["joint_child"]]
    first = N + nj
    x0, R0 = np.zeros((N, 3)), np.broadcast_to(np.eye(3), (N, 3, 3))  # any pose: only the points' count and carriers
    for f in _drawn(d):
        pts, car = f.points(d, x0, R0)
        segs[f.cell_kind] = np.asarray(f.lines(d, first), dtype=np.int64).reshape(-1, 2)
        carrier.append(np.asarray(car, dtype=np.int64))
        first += len(pts)
    cells = [segs.get(k, np.zeros((0, 2), dtype=np.int64)) for k in kinds]
    kind = np.concatenate([np.full(len(c), i, dtype=np.int64) for i, c in enumerate(cells)])
    return (np.concatenate(cells).astype(np.int64).reshape(-1, 2), kind,
            np.concatenate(carrier).astype(np.int64))


def triangles(d: dict[str, np.ndarray]) -> tuple[np.ndarray, int]:
    """Triangle cells (n, 3) of the drawing (point indices; the families with a ``triangles`` method,
    the shapes of flexmb.builder.shapes) and their cell kind."""
    N = int(d["n_nodes"])
    first = N + d["joint_child"].size
    x0, R0 = np.zeros((N, 3)), np.broadcast_to(np.eye(3), (N, 3, 3))
    out, kind = [], -1
    for f in _drawn(d):
        if hasattr(f, "triangles"):
            out.append(np.asarray(f.triangles(d, first), dtype=np.int64).reshape(-1, 3))
            kind = cell_kinds().index(f.cell_kind)
        first += len(f.points(d, x0, R0)[0])
    return (np.concatenate(out) if out else np.zeros((0, 3), dtype=np.int64)), kind


def frame_indices(n_rows: int, every: int = 1) -> list[int]:
    """Output rows drawn when writing every ``every``-th one (the last always)."""
    if n_rows == 0:
        return []
    return sorted(set(range(0, n_rows, max(1, int(every)))) | {n_rows - 1})


def _points(result: Result, d: dict[str, np.ndarray], i: int) -> np.ndarray:
    x, R = result.x[i], result.R[i]
    return np.concatenate([x, result.joint_points[i]] + [f.points(d, x, R)[0] for f in _drawn(d)], axis=0)


def _cell_columns(result: Result, d: dict[str, np.ndarray], kind: np.ndarray) -> list[tuple[str, np.ndarray, object]]:
    """(cell array name, the cells it lives on, a function of the output row giving its values there).
    Families that share a Result field (the cut forces of bushings and rigid cuts) hold its rows one
    after the other in registry order, each on its own cells; a field whose rows do not match the
    drawn cells (a result written before a family recorded it) is left out."""
    out = []
    drawn = _drawn(d)
    cells = {f.name: np.flatnonzero(kind == cell_kinds().index(f.cell_kind)) for f in drawn}
    sharing: dict[str, list] = {}
    for f in FAMILIES.values():
        for o in f.outputs:
            if o.field and any(k in d for k in f.drawing_keys) and f.cell_kind:
                sharing.setdefault(o.field, []).append(f.name)
    for f in drawn:
        for o in f.outputs:
            a = getattr(result, o.field, None) if o.field else None
            if a is None or a.ndim < 2:
                continue
            first = sum(cells[g].size for g in sharing[o.field][:sharing[o.field].index(f.name)])
            if a.shape[1] != sum(cells[g].size for g in sharing[o.field]):
                continue
            rows = slice(first, first + cells[f.name].size)
            for c, col in enumerate(o.columns or (o.name,)):
                values = (lambda i, o=o, c=c, rows=rows: getattr(result, o.field)[i][rows, c]) if o.columns else \
                    (lambda i, o=o, rows=rows: getattr(result, o.field)[i][rows])
                out.append((col, cells[f.name], values))
    return out


def frames(result: Result, d: dict[str, np.ndarray], every: int = 1) -> Iterator[tuple[int, float, np.ndarray, dict, dict]]:
    """(row, t, points, point_data, cell_data) for every drawn output time of ``result``."""
    cells, kind, carrier = lines(d)
    fixed = carrier < 0
    ncell = cells.shape[0]
    columns = _cell_columns(result, d, kind)
    x0 = None
    for i in frame_indices(len(result.t), every):
        x, R, V = result.x[i], result.R[i], result.twists[i]
        pts = _points(result, d, i)
        if x0 is None:
            x0 = _points(result, d, 0)
        Vc, xc, Rc = V[carrier], x[carrier], R[carrier]
        if fixed.any():  # points on ground (carrier -1): at rest, global axes
            Vc[fixed], xc[fixed], Rc[fixed] = 0.0, pts[fixed], np.eye(3)
        pdata = {"displacement": pts - x0, "velocity": Vc[:, :3] + np.cross(Vc[:, 3:], pts - xc),
                 "angular_velocity": Vc[:, 3:].copy()}
        for a in range(3):
            pdata[f"e{a + 1}"] = Rc[:, :, a]
        cdata: dict[str, np.ndarray] = {}
        for name, on, values in columns:
            col = cdata.setdefault(name, np.zeros(ncell))
            if on.size:
                col[on] = values(i)
        cdata["cell_kind"] = kind
        yield i, float(result.t[i]), pts, pdata, cdata
