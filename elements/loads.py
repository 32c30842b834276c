"""Nodal loads: forces and moments, fixed (global) or follower (axes of the node or of another
node, ``axes_node``), functions of time."""

from __future__ import annotations

import numpy as np

__all__ = ["nodal_wrenches"]


def nodal_wrenches(loads, t: float, R: np.ndarray, n_nodes: int) -> np.ndarray:
    """Sum of all nodal loads at time ``t`` as node wrenches (n_nodes, 6), global axes."""
    out = np.zeros((n_nodes, 6))
    for ld in loads:
        f = np.asarray(ld.force(t), dtype=float)
        m = np.asarray(ld.moment(t), dtype=float)
        if ld.follower:
            Rk = R[ld.node if ld.axes_node < 0 else ld.axes_node]
            f, m = Rk @ f, Rk @ m
        out[ld.node, :3] += f
        out[ld.node, 3:] += m
    return out
