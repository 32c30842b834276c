"""Nodal loads: forces and moments, fixed (global) or follower (axes of the node or of another
node, ``axes_node``), functions of time."""

from __future__ import annotations

import numpy as np

__all__ = ["nodal_wrenches", "turned"]


def turned(Rk: np.ndarray, f: np.ndarray) -> np.ndarray:
    """Rk f with each row's products summed left to right (docs/motion_forces.md (M19)): the arithmetic of the
    compiled steps' follower loads (flexmb/solvers/motion_load_step.py), so both give the same bits."""
    return Rk[:, 0] * f[0] + Rk[:, 1] * f[1] + Rk[:, 2] * f[2]


def nodal_wrenches(loads, t: float, R: np.ndarray | None, n_nodes: int) -> np.ndarray:
    """Sum of all nodal loads at time ``t`` as node wrenches (n_nodes, 6), global axes; a follower load turned by
    its node's rotation in ``R`` (:func:`turned`), left out where ``R`` is None (the compiled steps turn them
    per iterate: flexmb/solvers/motion_load_step.py)."""
    out = np.zeros((n_nodes, 6))
    for ld in loads:
        if ld.follower and R is None:
            continue
        f = np.asarray(ld.force(t), dtype=float)
        m = np.asarray(ld.moment(t), dtype=float)
        if ld.follower:
            Rk = R[ld.node if ld.axes_node < 0 else ld.axes_node]
            f, m = turned(Rk, f), turned(Rk, m)
        out[ld.node, :3] += f
        out[ld.node, 3:] += m
    return out
