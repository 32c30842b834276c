"""Forward kinematics over the joint tree: node poses, twists, velocity-product
accelerations (zeta = B'u) and the sparse velocity-transformation matrix B (6N x n_u).

Spatial vectors are 6-vectors ``(v_O, w)`` taken at the global origin; a joint
coordinate's axis ``S_k`` is ``(P x g, g)`` for a rotation about the unit axis ``g`` through
``P`` and ``(tau, 0)`` for a translation along ``tau``. A node's twist is ``(v, w)`` with
``v`` the velocity of the node origin: ``v = v_O + w x x``. Then (DESIGN.md §4)

    V_child = V_parent + sum_k S_k u_k,      A_child = A_parent + sum_k (V_k- x S_k) u_k,

where ``V_k-`` is the spatial velocity of the frame carrying axis k and ``x`` the motion
cross product. Column k of B holds, for every node i downstream of coordinate k, the node
twist ``(S_v + S_w x x_i, S_w)`` (Issa & Arczewski eq. 4.9, 4.13; its block pattern is the
secondary path matrix pi*).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .rotations import axis_angle, cross

__all__ = ["Kinematics", "TreePattern", "forward_kinematics", "motion_cross"]


def motion_cross(V: np.ndarray, S: np.ndarray) -> np.ndarray:
    """Spatial motion cross product ``V x S`` for 6-vectors ordered ``(v, w)``."""
    v, w = V[..., :3], V[..., 3:]
    sv, sw = S[..., :3], S[..., 3:]
    return np.concatenate([cross(w, sv) + cross(v, sw), cross(w, sw)], axis=-1)


class TreePattern:
    """Index structure of B computed once per model: the (node, coordinate) pairs with node i
    downstream of coordinate k, and their positions in B's CSC data array."""

    def __init__(self, model) -> None:
        n_nodes, n_u = model.n_nodes, model.n_u
        # joints on the path from ground to each node (tree order: parents first)
        self.ancestors: list[list[int]] = [[] for _ in range(n_nodes)]
        for k in range(model.n_joints):
            p = model.joint_parent[k]
            self.ancestors[model.joint_child[k]] = ([] if p < 0 else self.ancestors[p]) + [k]
        nodes, coords = [], []
        for i in range(n_nodes):
            for k in self.ancestors[i]:
                s, n = model.joint_u_start[k], model.joint_kinds[k].n_u
                nodes.extend([i] * n)
                coords.extend(range(s, s + n))
        self.pair_node = np.array(nodes, dtype=int)
        self.pair_coord = np.array(coords, dtype=int)
        rows = (6 * self.pair_node[:, None] + np.arange(6)).ravel()
        cols = np.repeat(self.pair_coord, 6)
        order = np.lexsort((rows, cols))
        self.perm = order
        self.indices = rows[order].astype(np.int32)
        self.indptr = np.searchsorted(cols[order], np.arange(n_u + 1)).astype(np.int32)
        self.shape = (6 * n_nodes, n_u)
        # ---- vectorised kinematics: component slots per joint (-1 -> padding)
        nj = model.n_joints
        self.axT = np.zeros((nj, 3, 3))
        self.axR = np.zeros((nj, 2, 3))
        self.uT = np.full((nj, 3), -1)
        self.qT = np.full((nj, 3), -1)
        self.uR = np.full((nj, 2), -1)
        self.qR = np.full((nj, 2), -1)
        self.uB = np.full((nj, 3), -1)
        self.ball = np.where(model.joint_ball >= 0, model.joint_ball, model.n_ball)
        for k, kind in enumerate(model.joint_kinds):
            iu, iq = int(model.joint_u_start[k]), int(model.joint_q_start[k])
            nt = nr = 0
            for comp, ai in kind.components:
                if comp == "T":
                    self.axT[k, nt], self.uT[k, nt], self.qT[k, nt] = model.joint_axes[k, ai], iu, iq
                    nt, iu, iq = nt + 1, iu + 1, iq + 1
                elif comp == "R":
                    self.axR[k, nr], self.uR[k, nr], self.qR[k, nr] = model.joint_axes[k, ai], iu, iq
                    nr, iu, iq = nr + 1, iu + 1, iq + 1
                else:
                    self.uB[k] = np.arange(iu, iu + 3)
                    iu += 3
        # parent node of each joint (N = ground) and pointer-jumping schedule over nodes
        self.joint_parent_ext = np.where(model.joint_parent < 0, n_nodes, model.joint_parent)
        jump = np.full(n_nodes + 1, n_nodes)
        jump[model.joint_child] = self.joint_parent_ext
        self.jumps: list[np.ndarray] = []
        while np.any(jump != n_nodes):
            self.jumps.append(jump)
            jump = jump[jump]
        # depth-first preorder: every subtree is a contiguous range [first, last)
        children: list[list[int]] = [[] for _ in range(n_nodes + 1)]
        for k in range(nj):
            children[self.joint_parent_ext[k]].append(int(model.joint_child[k]))
        order: list[int] = []
        stack = list(reversed(children[n_nodes]))
        while stack:
            i = stack.pop()
            order.append(i)
            stack.extend(reversed(children[i]))
        self.preorder = np.array(order, dtype=int)
        pos = np.empty(n_nodes, dtype=int)
        pos[self.preorder] = np.arange(n_nodes)
        size = np.ones(n_nodes + 1, dtype=int)
        parent_of_node = np.full(n_nodes, n_nodes)
        parent_of_node[model.joint_child] = self.joint_parent_ext
        for i in reversed(order):  # children before parents
            size[parent_of_node[i]] += size[i]
        size = size[:n_nodes]
        self.sub_first = pos
        self.sub_last = pos + size
        self.joint_child = model.joint_child
        self.coord_joint = np.repeat(np.arange(nj), [kd.n_u for kd in model.joint_kinds])
        self.coord_child = model.joint_child[self.coord_joint]

    def path_sum(self, local: np.ndarray, child: np.ndarray) -> np.ndarray:
        """Per node: sum of per-joint values along its path from ground."""
        return _tree_sum(local, child, self.jumps, len(self.sub_first))

    def subtree_sum(self, values: np.ndarray) -> np.ndarray:
        """Per node: sum of per-node values over its subtree (preorder cumulative sums)."""
        cs = np.concatenate([np.zeros((1,) + values.shape[1:]), np.cumsum(values[self.preorder], axis=0)])
        return cs[self.sub_last] - cs[self.sub_first]

    def assemble(self, values: np.ndarray) -> sp.csc_matrix:
        """B from pair values of shape (n_pairs, 6)."""
        return sp.csc_matrix((values.reshape(-1)[self.perm], self.indices, self.indptr), shape=self.shape)


@dataclass
class Kinematics:
    """Node poses and motion of one state.

    x (N,3), R (N,3,3): node positions and rotations; V (N,6): node twists (v, w);
    zeta (N,6): node accelerations for udot = 0; S (n_u,6): coordinate axes at the global
    origin; joint_point (n_joints,3): current joint points; Vs, As: spatial velocity and bias
    acceleration of each node's frame.
    """

    x: np.ndarray
    R: np.ndarray
    V: np.ndarray
    zeta: np.ndarray
    S: np.ndarray
    joint_point: np.ndarray
    Vs: np.ndarray
    As: np.ndarray
    pattern: TreePattern

    def B(self) -> sp.csc_matrix:
        """Velocity-transformation matrix B (6N x n_u): node twists = B u."""
        p = self.pattern
        S = self.S[p.pair_coord]
        w = S[:, 3:]
        v = S[:, :3] + cross(w, self.x[p.pair_node])
        return p.assemble(np.concatenate([v, w], axis=1))

    def node_twist_from_spatial(self, A: np.ndarray) -> np.ndarray:
        """Node-origin form (a, alpha) of per-node spatial accelerations A (N,6)."""
        w = self.V[:, 3:]
        return np.concatenate([A[:, :3] + cross(A[:, 3:], self.x) + cross(w, self.V[:, :3]), A[:, 3:]], axis=1)


def forward_kinematics(model, state, pattern: TreePattern) -> Kinematics:
    """Poses, twists and bias accelerations of all nodes, vectorised over joints.

    Each joint's local transform (translation, rotations, ball) is computed for all joints at
    once; composition down the tree and the sums ``V = sum S_k u_k``, ``A = sum (V_k- x S_k) u_k``
    along each node's path are parallel prefix operations (pointer jumping, ceil(log2 depth)
    vectorised rounds) instead of a Python loop over joints.
    """
    t = pattern
    N = model.n_nodes
    qpad = np.append(state.q, 0.0)
    upad = np.append(state.u, 0.0)
    # ---- local joint transforms (all joints at once)
    t_loc = model.joint_point + np.einsum("kij,ki->kj", t.axT, qpad[t.qT])
    th = qpad[t.qR]
    Q1 = axis_angle(t.axR[:, 0], th[:, 0])
    Q2 = axis_angle(t.axR[:, 1], th[:, 1])
    Qb = np.concatenate([state.balls.reshape(-1, 3, 3), np.eye(3)[None]], axis=0)[t.ball]
    C = model.joint_child_rot
    Q = Q1 @ Q2
    L = Q @ C @ Qb  # child rotation in parent axes
    Qrel = L @ np.swapaxes(C, 1, 2)
    d = t_loc + np.einsum("kij,kj->ki", Qrel, model.joint_child_offset)
    # ---- compose down the tree: M_i maps node-i axes to global
    M = np.zeros((N + 1, 4, 4))
    M[:, 3, 3] = 1.0
    M[N, :3, :3] = np.eye(3)
    M[model.joint_child, :3, :3] = L
    M[model.joint_child, :3, 3] = d
    for jump in t.jumps:
        M = M[jump] @ M
    x = M[:N, :3, 3].copy()
    R = M[:N, :3, :3].copy()
    # ---- coordinate axes (spatial, at the global origin)
    par = t.joint_parent_ext
    Rp = M[par, :3, :3]
    xp = M[par, :3, 3]
    P = xp + np.einsum("kij,kj->ki", Rp, t_loc)
    gT = np.einsum("kij,kaj->kai", Rp, t.axT)  # (nj, 3 comps, 3)
    RpQ1 = Rp @ Q1
    gR = np.stack([np.einsum("kij,kj->ki", Rp, t.axR[:, 0]), np.einsum("kij,kj->ki", RpQ1, t.axR[:, 1])], axis=1)
    gB = np.swapaxes(Rp @ L, 1, 2)  # rows = ball axes (child axes, global)
    zeros = np.zeros_like(gT)
    ST = np.concatenate([gT, zeros], axis=2)
    SR = np.concatenate([cross(P[:, None, :], gR), gR], axis=2)
    SB = np.concatenate([cross(P[:, None, :], gB), gB], axis=2)
    uT, uR, uB = upad[t.uT], upad[t.uR], upad[t.uB]
    S = np.zeros((model.n_u + 1, 6))
    S[t.uT] = ST
    S[t.uR] = SR
    S[t.uB] = SB
    S = S[:-1]
    # ---- velocities: per-joint increments, then prefix sums along the tree
    VT = np.einsum("kai,ka->ki", ST, uT)
    VR0 = SR[:, 0] * uR[:, :1]
    VR1 = SR[:, 1] * uR[:, 1:]
    VB = np.einsum("kai,ka->ki", SB, uB)
    Vs = _tree_sum(VT + VR0 + VR1 + VB, model.joint_child, t.jumps, N)
    Vp = np.concatenate([Vs, np.zeros((1, 6))])[par]
    V1 = Vp + VT
    V2 = V1 + VR0
    V3 = V2 + VR1
    dA = (
        np.einsum("kai,ka->ki", motion_cross(Vp[:, None, :], ST), uT)
        + motion_cross(V1, SR[:, 0]) * uR[:, :1]
        + motion_cross(V2, SR[:, 1]) * uR[:, 1:]
        + np.einsum("kai,ka->ki", motion_cross(V3[:, None, :], SB), uB)
    )
    As = _tree_sum(dA, model.joint_child, t.jumps, N)
    w = Vs[:, 3:]
    v = Vs[:, :3] + cross(w, x)
    zeta = np.concatenate([As[:, :3] + cross(As[:, 3:], x) + cross(w, v), As[:, 3:]], axis=1)
    return Kinematics(x, R, np.concatenate([v, w], axis=1), zeta, S, P, Vs, As, pattern)


def _tree_sum(local: np.ndarray, child: np.ndarray, jumps: list[np.ndarray], N: int) -> np.ndarray:
    """Sum of per-joint values along every node's path from ground (pointer jumping)."""
    acc = np.zeros((N + 1,) + local.shape[1:])
    acc[child] = local
    for jump in jumps:
        acc = acc + acc[jump]
    return acc[:N]
