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

from .rotations import axis_angle
from .topology import GROUND

__all__ = ["Kinematics", "TreePattern", "forward_kinematics", "motion_cross"]


def motion_cross(V: np.ndarray, S: np.ndarray) -> np.ndarray:
    """Spatial motion cross product ``V x S`` for 6-vectors ordered ``(v, w)``."""
    v, w = V[..., :3], V[..., 3:]
    sv, sw = S[..., :3], S[..., 3:]
    return np.concatenate([np.cross(w, sv) + np.cross(v, sw), np.cross(w, sw)], axis=-1)


class TreePattern:
    """Index structure of B computed once per model: the (node, coordinate) pairs with node i
    downstream of coordinate k, and their positions in B's CSC data array."""

    def __init__(self, model) -> None:
        n_nodes, n_u = model.n_nodes, model.n_u
        ps = model.secondary_path_matrix()
        nodes, coords = [], []
        for i in range(n_nodes):
            for k in np.flatnonzero(ps[i] < 0):
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
        v = S[:, :3] + np.cross(w, self.x[p.pair_node])
        return p.assemble(np.concatenate([v, w], axis=1))

    def node_twist_from_spatial(self, A: np.ndarray) -> np.ndarray:
        """Node-origin form (a, alpha) of per-node spatial accelerations A (N,6)."""
        w = self.V[:, 3:]
        return np.concatenate([A[:, :3] + np.cross(A[:, 3:], self.x) + np.cross(w, self.V[:, :3]), A[:, 3:]], axis=1)


def forward_kinematics(model, state, pattern: TreePattern) -> Kinematics:
    """Recursive pass over the tree (parents first): poses, twists, bias accelerations."""
    N = model.n_nodes
    x = np.zeros((N, 3))
    R = np.zeros((N, 3, 3))
    Vs = np.zeros((N, 6))
    As = np.zeros((N, 6))
    S = np.zeros((model.n_u, 6))
    jpt = np.zeros((model.n_joints, 3))
    q, u, balls = state.q, state.u, state.balls
    eye = np.eye(3)
    zero6 = np.zeros(6)
    for k in range(model.n_joints):
        p, c = model.joint_parent[k], model.joint_child[k]
        if p == GROUND:
            xp, Rp, Vp, Ap = np.zeros(3), eye, zero6, zero6
        else:
            xp, Rp, Vp, Ap = x[p], R[p], Vs[p], As[p]
        kind = model.joint_kinds[k]
        ax = model.joint_axes[k]
        C = model.joint_child_rot[k]
        us = model.joint_u_start[k]
        qs = model.joint_q_start[k]
        t_loc = model.joint_point[k].copy()
        Q = eye
        V = Vp.copy()
        A = Ap.copy()
        iu, iq = us, qs
        ball_rot = None
        for comp, ai in kind.components:
            if comp == "T":
                tau = Rp @ ax[ai]
                Sk = np.concatenate([tau, np.zeros(3)])
                t_loc = t_loc + ax[ai] * q[iq]
                A += motion_cross(Vp, Sk) * u[iu]
                V += Sk * u[iu]
                S[iu] = Sk
                iu += 1
                iq += 1
        P = xp + Rp @ t_loc
        jpt[k] = P
        for comp, ai in kind.components:
            if comp == "R":
                g = Rp @ (Q @ ax[ai])
                Sk = np.concatenate([np.cross(P, g), g])
                A += motion_cross(V, Sk) * u[iu]
                V += Sk * u[iu]
                S[iu] = Sk
                Q = Q @ axis_angle(ax[ai], q[iq])
                iu += 1
                iq += 1
            elif comp == "B":
                ball_rot = balls[model.joint_ball[k]]
                G = Rp @ Q @ C @ ball_rot  # columns: ball axes (child axes)
                Vb = V.copy()
                for a in range(3):
                    g = G[:, a]
                    Sk = np.concatenate([np.cross(P, g), g])
                    A += motion_cross(Vb, Sk) * u[iu]
                    V += Sk * u[iu]
                    S[iu] = Sk
                    iu += 1
        Qrel = Q if ball_rot is None else Q @ C @ ball_rot @ C.T
        x[c] = P + Rp @ (Qrel @ model.joint_child_offset[k])
        R[c] = Rp @ Qrel @ C
        Vs[c] = V
        As[c] = A
    w = Vs[:, 3:]
    v = Vs[:, :3] + np.cross(w, x)
    zeta = np.concatenate([As[:, :3] + np.cross(As[:, 3:], x) + np.cross(w, v), As[:, 3:]], axis=1)
    return Kinematics(x, R, np.concatenate([v, w], axis=1), zeta, S, jpt, Vs, As, pattern)
