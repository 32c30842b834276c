"""ParaView output through meshio: one VTU file per output time and a ``.pvd`` collection
(the format ParaView 5.11 opens reliably; see DESIGN §6).

Points: the nodes, then the current joint points, then the bodies' centres of mass.
Cells (lines): parent node -> joint point -> child node for every tree joint, and node ->
centre of mass for every body, so a rigid mechanism is visible. Point data: displacement,
velocity of the point itself and angular_velocity and axes e1, e2, e3 of the node that
carries it (a joint point moves with the child node, a centre of mass with its body's node).
"""

from __future__ import annotations

from pathlib import Path
from xml.sax.saxutils import quoteattr

import meshio
import numpy as np

__all__ = ["write_pvd"]


def _geometry(model) -> tuple[np.ndarray, np.ndarray]:
    N, nj = model.n_nodes, model.n_joints
    lines = []
    carrier = list(range(N)) + [int(c) for c in model.joint_child] + [int(b) for b in model.body_node]
    for k in range(nj):
        jp = N + k
        if model.joint_parent[k] >= 0:
            lines.append((int(model.joint_parent[k]), jp))
        lines.append((jp, int(model.joint_child[k])))
    for b, node in enumerate(model.body_node):
        lines.append((int(node), N + nj + b))
    return np.array(lines, dtype=int).reshape(-1, 2), np.array(carrier, dtype=int)


def write_pvd(result, model, out_dir: str | Path, name: str = "mechanism", every: int = 1) -> Path:
    """Write ``name_XXXXX.vtu`` per output time and ``name.pvd`` into ``out_dir``; returns the
    .pvd path. Time values in the collection are the simulation times; ``every`` writes
    every n-th output time (the last one always)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    lines, carrier = _geometry(model)
    com = np.einsum("tbij,bj->tbi", result.R[:, model.body_node], model.body_com) + result.x[:, model.body_node]
    points = np.concatenate([result.x, result.joint_points, com], axis=1)
    disp = points - points[0]
    entries = []
    frames = sorted(set(range(0, len(result.t), max(1, int(every)))) | {len(result.t) - 1})
    for i in frames:
        t = result.t[i]
        V = result.twists[i][carrier]
        vel = V[:, :3] + np.cross(V[:, 3:], points[i] - result.x[i][carrier])
        pdata = {"displacement": disp[i], "velocity": vel, "angular_velocity": V[:, 3:]}
        for a in range(3):
            pdata[f"e{a + 1}"] = result.R[i][carrier, :, a]
        fname = f"{name}_{i:05d}.vtu"
        meshio.write(out / fname, meshio.Mesh(points[i], [("line", lines)], point_data=pdata))
        entries.append(f'    <DataSet timestep="{float(t)!r}" group="" part="0" file={quoteattr(fname)}/>')
    pvd = out / f"{name}.pvd"
    pvd.write_text(
        '<?xml version="1.0"?>\n<VTKFile type="Collection" version="0.1" byte_order="LittleEndian">\n'
        "  <Collection>\n" + "\n".join(entries) + "\n  </Collection>\n</VTKFile>\n"
    )
    return pvd
