"""Compiled (numba) passes over the joint tree that the forward pass (engine/kinematics.py) and the
time steps share: B's (node, coordinate) pattern (_path_pairs), node twists B u (_node_twists: the
spatial path sums, then each node's origin velocity), generalized forces Bᵀ w (_project_node: the
wrenches moved to the origin, then subtree sums projected on each coordinate's axis), their versions
with the joints on ground split over threads (node_twists_threads, project_node_threads: the
one-thread pass's values bit for bit, flexmb/engine/parallel.py), and the node-mass products
(mass_times_add, zero_mass_times_add, kinetic_energy). Spatial vectors as in engine/kinematics.py:
6-vectors ``(v_O, w)`` at the global origin (docs/equations_of_motion.md §2).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = ["mass_times_add", "zero_mass_times_add", "kinetic_energy", "node_twists_threads", "project_node_threads"]

@njit(cache=True)
def _path_pairs(parent, child, coord_start, coord_count, n_nodes):
    """(pair_node, pair_coord): for every node i in ascending order, the coordinates of the joints on
    its path from ground, root first, each joint's coordinates ascending; parent index n_nodes is
    ground, joints in tree order (parents first)."""
    joint_of = np.full(n_nodes, -1, dtype=np.int64)
    size = np.zeros(n_nodes + 1, dtype=np.int64)
    for k in range(parent.size):
        joint_of[child[k]] = k
        size[child[k]] = size[parent[k]] + coord_count[k]
    total = 0
    for i in range(n_nodes):
        total += size[i]
    nodes = np.empty(total, dtype=np.int64)
    coords = np.empty(total, dtype=np.int64)
    pos = 0
    for i in range(n_nodes):
        end = pos + size[i]
        t = end  # filled from the node back to the root
        k = joint_of[i]
        while k >= 0:
            t -= coord_count[k]
            for a in range(coord_count[k]):
                nodes[t + a] = i
                coords[t + a] = coord_start[k] + a
            p = parent[k]
            k = joint_of[p] if p < n_nodes else -1
        pos = end
    return nodes, coords


@njit(cache=True, inline="always")
def _path_sum_joint(k, parent, child, coord_start, coord_count, S, u, out):
    """Joint k of :func:`_path_sum`: its child's sum from its parent's (ground: 0) and its coordinates."""
    N = out.shape[0]
    p = parent[k]
    c = child[k]
    for i in range(6):
        out[c, i] = 0.0 if p == N else out[p, i]
    for kk in range(coord_start[k], coord_start[k] + coord_count[k]):
        for i in range(6):
            out[c, i] += S[kk, i] * u[kk]


@njit(cache=True)
def _path_sum(parent, child, coord_start, coord_count, S, u, out):
    """out[node] = sum of S_k u_k over the coordinates on the node's path (spatial, at the origin)."""
    for k in range(parent.size):
        _path_sum_joint(k, parent, child, coord_start, coord_count, S, u, out)


@njit(cache=True, inline="always")
def _project_joint(k, parent, child, coord_start, coord_count, S, W, out):
    """Joint k of :func:`_project`: its coordinates' projections of its child's subtree sum, which it
    then adds to its parent's (not to ground)."""
    N = W.shape[0]
    c = child[k]
    for kk in range(coord_start[k], coord_start[k] + coord_count[k]):
        s = 0.0
        for i in range(6):
            s += S[kk, i] * W[c, i]
        out[kk] = s
    p = parent[k]
    if p != N:
        for i in range(6):
            W[p, i] += W[c, i]


@njit(cache=True)
def _project(parent, child, coord_start, coord_count, S, W, out):
    """out_k = S_k . (sum of the spatial wrenches W over the subtree of coordinate k's joint);
    W (N,6) is overwritten with the subtree sums."""
    for k in range(parent.size - 1, -1, -1):
        _project_joint(k, parent, child, coord_start, coord_count, S, W, out)


@njit(cache=True, inline="always")
def _origin_velocity_row(out, x, i):
    """Node i's path sum (v_O, w) at the origin into its origin velocity: v_O + w x x."""
    w0, w1, w2 = out[i, 3], out[i, 4], out[i, 5]
    out[i, 0] += w1 * x[i, 2] - w2 * x[i, 1]
    out[i, 1] += w2 * x[i, 0] - w0 * x[i, 2]
    out[i, 2] += w0 * x[i, 1] - w1 * x[i, 0]


@njit(cache=True, inline="always")
def _origin_wrench_row(w, x, W, i):
    """Node i's wrench (f, m) moved to the origin: W_i = (f, m + x x f)."""
    f0, f1, f2 = w[i, 0], w[i, 1], w[i, 2]
    W[i, 0], W[i, 1], W[i, 2] = f0, f1, f2
    W[i, 3] = w[i, 3] + (x[i, 1] * f2 - x[i, 2] * f1)
    W[i, 4] = w[i, 4] + (x[i, 2] * f0 - x[i, 0] * f2)
    W[i, 5] = w[i, 5] + (x[i, 0] * f1 - x[i, 1] * f0)


@njit(cache=True)
def _node_twists(parent, child, coord_start, coord_count, S, u, x, out):
    """out = B u: the spatial path sums of _path_sum, then each node's origin velocity v_O + w x x."""
    _path_sum(parent, child, coord_start, coord_count, S, u, out)
    for i in range(out.shape[0]):
        _origin_velocity_row(out, x, i)


@njit(cache=True)
def _project_node(parent, child, coord_start, coord_count, S, w, x, W, out):
    """out = Bᵀ w: the wrenches moved to the origin, W = (f, m + x x f), then _project."""
    for i in range(w.shape[0]):
        _origin_wrench_row(w, x, W, i)
    _project(parent, child, coord_start, coord_count, S, W, out)


@njit(cache=True)
def _path_sum_joints(idx, lo, hi, parent, child, coord_start, coord_count, S, u, out):
    """The joints idx[lo:hi] of :func:`_path_sum`, each as there (it reads its parent's sum only)."""
    for t in range(lo, hi):
        _path_sum_joint(idx[t], parent, child, coord_start, coord_count, S, u, out)


@njit(cache=True)
def _project_joints(idx, lo, hi, parent, child, coord_start, coord_count, S, W, out):
    """The joints idx[lo:hi] of :func:`_project` in that order, each as there."""
    for t in range(lo, hi):
        _project_joint(idx[t], parent, child, coord_start, coord_count, S, W, out)


@njit(cache=True, parallel=True)
def node_twists_threads(ground, rest, nt, parent, child, coord_start, coord_count, S, u, x, out):
    """:func:`_node_twists` with the joints on ground (``ground``: free FE nodes, each the root of its
    path) split over ``nt`` threads, then the others (``rest``, in tree order) on one, then each
    node's v_O + w x x over the threads: every value the one-thread pass's, bit for bit."""
    m = ground.size
    for c in prange(nt):
        _path_sum_joints(ground, c * m // nt, (c + 1) * m // nt, parent, child, coord_start, coord_count, S, u, out)
    _path_sum_joints(rest, 0, rest.size, parent, child, coord_start, coord_count, S, u, out)
    n = out.shape[0]
    for c in prange(nt):
        for i in range(c * n // nt, (c + 1) * n // nt):
            _origin_velocity_row(out, x, i)


@njit(cache=True, parallel=True)
def project_node_threads(ground, rest, nt, parent, child, coord_start, coord_count, S, w, x, W, out):
    """:func:`_project_node` on ``nt`` threads: the wrenches moved to the origin over the threads,
    the joints off ground (``rest``, tree order) summed into their parents on one thread in reverse
    order, then the joints on ground (``ground``, no parent to add to) over the threads: every value
    the one-thread pass's (the same sums in the same order), bit for bit."""
    n = w.shape[0]
    for c in prange(nt):
        for i in range(c * n // nt, (c + 1) * n // nt):
            _origin_wrench_row(w, x, W, i)
    back = rest[::-1]
    _project_joints(back, 0, back.size, parent, child, coord_start, coord_count, S, W, out)
    m = ground.size
    for c in prange(nt):
        _project_joints(ground, c * m // nt, (c + 1) * m // nt, parent, child, coord_start, coord_count, S, W, out)


@njit(cache=True)
def mass_times_add(Mb, a, b, out):
    """out_i = Mb_i a_i + b_i for node blocks Mb (N,6,6), a, b, out (N,6) (out may be b)."""
    for i in range(Mb.shape[0]):
        for r in range(6):
            s = 0.0
            for c in range(6):
                s += Mb[i, r, c] * a[i, c]
            out[i, r] = s + b[i, r]


@njit(cache=True)
def zero_mass_times_add(a, b, out):
    """mass_times_add for node blocks that are all +0 (no node masses), without them: per node
    s = 0 + 0·a_0 + ... + 0·a_5 (+0, or NaN where an a_c is not finite, as every row's sum of
    +0 · a_c there) and out_i = s + b_i: the same values bit for bit (out may be b)."""
    for i in range(a.shape[0]):
        s = 0.0
        for c in range(6):
            s += 0.0 * a[i, c]
        for r in range(6):
            out[i, r] = s + b[i, r]


@njit(cache=True)
def kinetic_energy(V, Mb) -> float:
    """1/2 Σ_i V_iᵀ Mb_i V_i: the kinetic energy of the node masses Mb (N,6,6) at node twists V (N,6)."""
    T = 0.0
    for i in range(V.shape[0]):
        for r in range(6):
            s = 0.0
            for c in range(6):
                s += Mb[i, r, c] * V[i, c]
            T += V[i, r] * s
    return 0.5 * T
