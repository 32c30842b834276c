"""What a mechanism looks like as points and line cells (DESIGN §6), independent of the file
format: :func:`drawing_of` extracts the topology a picture needs from a Model (stored with
every result, so a result can be drawn without rebuilding its model), :func:`frames` turns a
result into points, point data and cell data per output time.

Points: the nodes, then the current joint points, then the bodies' centres of mass.
Line cells, in this order (``cell_kind`` says which, so ParaView can threshold on it):

* 0 ``beam``: node a -> node b of every beam element (in the order of ``model.beam_names``,
  so cell i is beam element i);
* 1 ``joint``: parent node -> joint point -> child node of every tree joint (the rigid link
  a body forms between its node and its joint points; free joints draw nothing, a segment of
  zero length is left out);
* 2 ``body``: node -> centre of mass of every rigid body;
* 3 ``particle``: first particle node -> each further particle node of every particle body;
* 4 ``bushing``: node a -> node b of every bushing between two nodes.

Point data: ``displacement`` (from the first output time), ``velocity`` of the point itself,
``angular_velocity`` and axes ``e1``, ``e2``, ``e3`` of the node that carries the point (a
joint point moves with the joint's child node, a centre of mass with its body's node).
Cell data: section forces of the beams (``axial_force``, ``shear_force_y``,
``shear_force_z``, ``torque``, ``bending_moment_y``, ``bending_moment_z``, in the element's
co-rotated axes) and ``strain_energy``; zero on the other cells; ``cell_kind`` (int).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

__all__ = ["CELL_KINDS", "FORCE_NAMES", "DRAWING_KEYS", "drawing_of", "check_drawing", "lines", "frames", "frame_indices"]

CELL_KINDS = ("beam", "joint", "body", "particle", "bushing")
FORCE_NAMES = ("axial_force", "shear_force_y", "shear_force_z", "torque", "bending_moment_y", "bending_moment_z")
_FIXED_POINT_KINDS = ("revolute", "spherical", "universal", "fixed")
DRAWING_KEYS = ("n_nodes", "joint_parent", "joint_child", "joint_draw", "joint_child_segment", "body_node", "body_com",
                "beam_a", "beam_b", "particle_nodes", "particle_counts", "bushing_a", "bushing_b")
"""The arrays of a drawing (:func:`drawing_of`)."""


def drawing_of(model) -> dict[str, np.ndarray]:
    """The topology needed to draw ``model``: a dict of small int/float arrays (JSON- and
    npz-friendly). Particle bodies are read from ``model.particle_body_nodes`` when the model
    has them."""
    kinds = [k.name for k in model.joint_kinds]
    offset0 = np.linalg.norm(np.asarray(model.joint_child_offset).reshape(-1, 3), axis=1)
    pnodes = tuple(getattr(model, "particle_body_nodes", ()) or ())
    bus_a = np.asarray(getattr(model, "bushing_a", np.zeros(0, int)), dtype=np.int64)
    bus_b = np.asarray(getattr(model, "bushing_b", np.zeros(0, int)), dtype=np.int64)
    both = bus_a >= 0
    return {
        "n_nodes": np.array(model.n_nodes, dtype=np.int64),
        "joint_parent": np.asarray(model.joint_parent, dtype=np.int64),
        "joint_child": np.asarray(model.joint_child, dtype=np.int64),
        "joint_draw": np.array([k != "free" for k in kinds], dtype=np.int64),
        "joint_child_segment": np.array([not (k in _FIXED_POINT_KINDS and o == 0.0) and k != "free"
                                         for k, o in zip(kinds, offset0)], dtype=np.int64),
        "body_node": np.asarray(model.body_node, dtype=np.int64),
        "body_com": np.asarray(model.body_com, dtype=np.float64).reshape(-1, 3),
        "beam_a": np.asarray(model.beam_a, dtype=np.int64),
        "beam_b": np.asarray(model.beam_b, dtype=np.int64),
        "particle_nodes": np.array([n for nodes in pnodes for n in nodes], dtype=np.int64),
        "particle_counts": np.array([len(nodes) for nodes in pnodes], dtype=np.int64),
        "bushing_a": bus_a[both],
        "bushing_b": bus_b[both],
    }


def check_drawing(d: dict[str, np.ndarray], n_nodes: int, n_joints: int, n_beams: int) -> str:
    """What is wrong with the drawing ``d`` of a result with ``n_nodes`` nodes, ``n_joints``
    joints and ``n_beams`` beam elements ('' if nothing): every key of :data:`DRAWING_KEYS`,
    integer index arrays of the right lengths pointing at existing nodes, a (n_bodies, 3)
    float ``body_com``, particle counts that add up to the particle nodes."""
    missing = [k for k in DRAWING_KEYS if k not in d]
    if missing:
        return f"the drawing lacks {', '.join(missing)}"
    for k in DRAWING_KEYS:
        a = d[k]
        if not isinstance(a, np.ndarray) or a.dtype.kind not in ("f" if k == "body_com" else "iu"):
            return f"drawing '{k}' is not an array of {'numbers' if k == 'body_com' else 'integers'}"
    if d["n_nodes"].shape != () or int(d["n_nodes"]) != n_nodes:
        return f"drawing 'n_nodes' is {d['n_nodes'].tolist()}, the result has {n_nodes} nodes"
    nb = d["body_node"].shape[0] if d["body_node"].ndim == 1 else -1
    sizes = {"joint_parent": n_joints, "joint_child": n_joints, "joint_draw": n_joints, "joint_child_segment": n_joints,
             "body_node": nb, "beam_a": n_beams, "beam_b": n_beams, "bushing_a": d["bushing_a"].size,
             "bushing_b": d["bushing_a"].size, "particle_counts": d["particle_counts"].size,
             "particle_nodes": int(d["particle_counts"].sum()) if d["particle_counts"].ndim == 1 else -1}
    for k, n in sizes.items():
        if d[k].shape != (n,):
            return f"drawing '{k}' has shape {d[k].shape}, expected ({n},)"
    if d["body_com"].shape != (nb, 3):
        return f"drawing 'body_com' has shape {d['body_com'].shape}, expected ({nb}, 3)"
    if not np.isfinite(d["body_com"]).all():
        return "drawing 'body_com' holds non-finite values"
    if d["particle_counts"].size and d["particle_counts"].min() < 0:
        return "drawing 'particle_counts' holds a negative count"
    for k in ("joint_parent", "joint_child", "body_node", "beam_a", "beam_b", "particle_nodes", "bushing_a", "bushing_b"):
        a = d[k]
        lo = -1 if k == "joint_parent" else 0  # -1: the ground
        if a.size and (a.min() < lo or a.max() >= n_nodes):
            return f"drawing '{k}' points at node {int(a.min() if a.min() < lo else a.max())} of {n_nodes}"
    return ""


def lines(d: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Line cells (n_cells, 2), their kind (n_cells,) and each point's carrier node."""
    N = int(d["n_nodes"])
    nj, nb = d["joint_child"].size, d["body_node"].size
    jp = N + np.arange(nj)
    segs: list[np.ndarray] = [np.stack([d["beam_a"], d["beam_b"]], axis=1)]
    kind = [np.zeros(d["beam_a"].size, dtype=np.int64)]
    draw = d["joint_draw"].astype(bool)
    par = draw & (d["joint_parent"] >= 0)
    chi = draw & d["joint_child_segment"].astype(bool)
    segs += [np.stack([d["joint_parent"][par], jp[par]], axis=1), np.stack([jp[chi], d["joint_child"][chi]], axis=1)]
    kind += [np.ones(int(par.sum()) + int(chi.sum()), dtype=np.int64)]
    segs.append(np.stack([d["body_node"], N + nj + np.arange(nb)], axis=1))
    kind.append(np.full(nb, 2, dtype=np.int64))
    counts, pn = d["particle_counts"], d["particle_nodes"]
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    first = np.repeat(pn[starts] if pn.size else np.zeros(0, np.int64), np.maximum(counts - 1, 0))
    rest = np.concatenate([pn[s + 1:s + c] for s, c in zip(starts, counts)]) if counts.size else np.zeros(0, np.int64)
    segs.append(np.stack([first, rest.astype(np.int64)], axis=1))
    kind.append(np.full(first.size, 3, dtype=np.int64))
    segs.append(np.stack([d["bushing_a"], d["bushing_b"]], axis=1))
    kind.append(np.full(d["bushing_a"].size, 4, dtype=np.int64))
    carrier = np.concatenate([np.arange(N), d["joint_child"], d["body_node"]]).astype(np.int64)
    return np.concatenate(segs).astype(np.int64).reshape(-1, 2), np.concatenate(kind), carrier


def frame_indices(n_rows: int, every: int = 1) -> list[int]:
    """Output rows drawn when writing every ``every``-th one (the last always)."""
    if n_rows == 0:
        return []
    return sorted(set(range(0, n_rows, max(1, int(every)))) | {n_rows - 1})


def _points(result, d: dict[str, np.ndarray], i: int) -> np.ndarray:
    x, R, bn = result.x[i], result.R[i], d["body_node"]
    com = np.einsum("bij,bj->bi", R[bn], d["body_com"]) + x[bn]
    return np.concatenate([x, result.joint_points[i], com], axis=0)


def frames(result, d: dict[str, np.ndarray], every: int = 1) -> Iterator[tuple[int, float, np.ndarray, dict, dict]]:
    """(row, t, points, point_data, cell_data) for every drawn output time of ``result``."""
    cells, kind, carrier = lines(d)
    nbeam = d["beam_a"].size
    ncell = cells.shape[0]
    x0 = None
    for i in frame_indices(len(result.t), every):
        x, R, V = result.x[i], result.R[i], result.twists[i]
        pts = _points(result, d, i)
        if x0 is None:
            x0 = _points(result, d, 0)
        Vc = V[carrier]
        pdata = {"displacement": pts - x0, "velocity": Vc[:, :3] + np.cross(Vc[:, 3:], pts - x[carrier]),
                 "angular_velocity": Vc[:, 3:].copy()}
        for a in range(3):
            pdata[f"e{a + 1}"] = R[carrier, :, a]
        cdata: dict[str, np.ndarray] = {}
        ef = result.element_forces[i] if nbeam else np.zeros((0, 6))
        for c, name in enumerate(FORCE_NAMES):
            col = np.zeros(ncell)
            col[:nbeam] = ef[:, c]
            cdata[name] = col
        se = np.zeros(ncell)
        se[:nbeam] = result.element_energy[i] if nbeam else 0.0
        cdata["strain_energy"] = se
        cdata["cell_kind"] = kind
        yield i, float(result.t[i]), pts, pdata, cdata
