"""Forward kinematics over the joint tree: node poses, twists, velocity-product
accelerations (zeta = B'u) and the sparse velocity-transformation matrix B (6N x n_u).

Spatial vectors are 6-vectors ``(v_O, w)`` taken at the global origin; a joint
coordinate's axis ``S_k`` is ``(P x g, g)`` for a rotation about the unit axis ``g`` through
``P`` and ``(tau, 0)`` for a translation along ``tau``. A node's twist is ``(v, w)`` with
``v`` the velocity of the node origin: ``v = v_O + w x x``. Then (docs/equations_of_motion.md §2)

    V_child = V_parent + sum_k S_k u_k,      A_child = A_parent + sum_k (V_k- x S_k) u_k,

where ``V_k-`` is the spatial velocity of the frame carrying axis k and ``x`` the motion
cross product. Column k of B holds, for every node i downstream of coordinate k, the node
twist ``(S_v + S_w x x_i, S_w)`` (Issa & Arczewski eq. 4.9, 4.13; its block pattern is the
secondary path matrix pi*). The recursions run as compiled loops over the joints in tree order
(numba): O(n) per evaluation, no temporaries per joint.

This module holds the forward pass (poses, twists, zeta, the axes S and their rates) and B's
pattern; the passes over the tree it shares with the time steps (B u, Bᵀ w, B's pattern pairs,
the node-mass products) are in engine/tree_projections.py and re-exported here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numba import njit, prange

from flexmb.engine import parallel
from flexmb.engine.tree_data import JointTree, KinematicsArrays
from flexmb.engine.tree_projections import (  # re-exported: callers import them from here
    _node_twists,
    _path_pairs,
    _path_sum,
    _path_sum_joint,
    _path_sum_joints,
    _project,
    _project_joint,
    _project_joints,
    _project_node,
    kinetic_energy,
    mass_times_add,
    node_twists_threads,
    project_node_threads,
    zero_mass_times_add,
)
from flexmb.model import Model
from flexmb.rotations import axis_angle_into, cross, matmul3_into
from flexmb.state import State

__all__ = ["Kinematics", "TreePattern", "forward_kinematics", "motion_cross", "mass_times_add", "zero_mass_times_add",
           "kinetic_energy",
           # the tree passes of engine/tree_projections.py, importable from here as before the split
           "_node_twists", "_path_pairs", "_path_sum", "_path_sum_joint", "_path_sum_joints", "_project", "_project_joint",
           "_project_joints", "_project_node", "node_twists_threads", "project_node_threads"]


def motion_cross(V: np.ndarray, S: np.ndarray) -> np.ndarray:
    """Spatial motion cross product ``V x S`` for 6-vectors ordered ``(v, w)``."""
    v, w = V[..., :3], V[..., 3:]
    sv, sw = S[..., :3], S[..., 3:]
    return np.concatenate([cross(w, sv) + cross(v, sw), cross(w, sw)], axis=-1)


class TreePattern:
    """Index structure of B computed once per model: the (node, coordinate) pairs with node i
    downstream of coordinate k, and their positions in B's CSC data array, and the JointTree the
    compiled passes read (``joint_tree``: engine/tree_data.py)."""

    def __init__(self, model: Model) -> None:
        n_nodes, n_u = model.n_nodes, model.n_u
        self.n_nodes = n_nodes
        # (node, coordinate) pairs: per node (ascending) the coordinates of the joints on its path
        # from ground (root first), built in compiled code (O(pairs), no Python loop over them)
        counts = np.array([kd.n_u for kd in model.joint_kinds], dtype=np.int64)
        parent_ext = np.where(model.joint_parent < 0, n_nodes, model.joint_parent).astype(np.int64)
        self.pair_node, self.pair_coord = _path_pairs(parent_ext, np.asarray(model.joint_child, dtype=np.int64),
                                                      np.asarray(model.joint_u_start, dtype=np.int64), counts, n_nodes)
        self.shape = (6 * n_nodes, n_u)
        self._csc: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # B's CSC index, built on first use
        # ---- compiled kinematics: component slots per joint (-1 -> none)
        nj = model.n_joints
        self.axT = np.zeros((nj, 3, 3))
        self.axR = np.zeros((nj, 2, 3))
        self.uT = np.full((nj, 3), -1, dtype=np.int64)
        self.qT = np.full((nj, 3), -1, dtype=np.int64)
        self.uR = np.full((nj, 2), -1, dtype=np.int64)
        self.qR = np.full((nj, 2), -1, dtype=np.int64)
        self.uB = np.full((nj, 3), -1, dtype=np.int64)
        self.ball = np.asarray(model.joint_ball, dtype=np.int64)
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
        # parent node of each joint (N = ground), coordinate ranges of the joints
        self.joint_parent_ext = np.where(model.joint_parent < 0, n_nodes, model.joint_parent).astype(np.int64)
        self.coord_start = np.asarray(model.joint_u_start, dtype=np.int64)
        self.coord_count = np.array([kd.n_u for kd in model.joint_kinds], dtype=np.int64)
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
        self.joint_child = np.asarray(model.joint_child, dtype=np.int64)
        self.coord_joint = np.repeat(np.arange(nj), [kd.n_u for kd in model.joint_kinds])
        self.coord_child = model.joint_child[self.coord_joint]
        #: the compiled passes' JointTree (engine/tree_data.py)
        self.joint_tree = JointTree(self.joint_parent_ext, self.joint_child, np.ascontiguousarray(model.joint_point, dtype=float),
                                    self.axT, self.axR, self.qT, self.qR, self.uT, self.uR, self.uB, self.ball,
                                    np.ascontiguousarray(model.joint_child_rot, dtype=float),
                                    np.ascontiguousarray(model.joint_child_offset, dtype=float), self.coord_start,
                                    self.coord_count)

    def twists(self, S: np.ndarray, u: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Node twists (N,6) (velocity of the node origin, angular velocity) = B u, for spatial
        coordinate axes S (n_u,6) and node positions x (N,3); one compiled pass."""
        A = np.empty((x.shape[0], 6))
        _node_twists(self.joint_parent_ext, self.joint_child, self.coord_start, self.coord_count, S,
                     np.ascontiguousarray(u, dtype=float), x, A)
        return A

    def project(self, S: np.ndarray, w: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Generalized forces B^T w (n_u,) for node wrenches w (N,6) about the node origins; one
        compiled pass (w is not modified)."""
        out = np.empty(S.shape[0])
        _project_node(self.joint_parent_ext, self.joint_child, self.coord_start, self.coord_count, S,
                      np.ascontiguousarray(w, dtype=float), x, np.empty((x.shape[0], 6)), out)
        return out

    def subtree_sum(self, values: np.ndarray) -> np.ndarray:
        """Per node: sum of per-node values over its subtree (preorder cumulative sums)."""
        cs = np.concatenate([np.zeros((1,) + values.shape[1:]), np.cumsum(values[self.preorder], axis=0)])
        return cs[self.sub_last] - cs[self.sub_first]

    def _csc_index(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(perm, indices, indptr) of B in CSC form, built on first use (a long chain has O(n²)
        pairs: sorting them costs more than many time steps, and the tree solver never forms B)."""
        if self._csc is None:
            rows = (6 * self.pair_node[:, None] + np.arange(6)).ravel()
            cols = np.repeat(self.pair_coord, 6)
            order = np.lexsort((rows, cols))
            self._csc = (order, rows[order].astype(np.int32),
                         np.searchsorted(cols[order], np.arange(self.shape[1] + 1)).astype(np.int32))
        return self._csc

    def assemble(self, values: np.ndarray) -> sp.csc_matrix:
        """B from pair values of shape (n_pairs, 6)."""
        perm, indices, indptr = self._csc_index()
        return sp.csc_matrix((values.reshape(-1)[perm], indices, indptr), shape=self.shape)


@dataclass
class Kinematics:
    """Node poses and motion of one state.

    x (N,3), R (N,3,3): node positions and rotations; V (N,6): node twists (v, w);
    zeta (N,6): node accelerations for udot = 0; S (n_u,6): coordinate axes at the global
    origin; joint_point (n_joints,3): current joint points; Vs, As: spatial velocity and bias
    acceleration of each node's frame; Sdot (n_u,6): Ṡ_k = V_k x S_k with V_k the spatial velocity
    of the frame carrying axis k, for the velocity tangent of engine/tree_solver.py: then ∂ζ/∂u_k =
    2 Ṡ_k - V_i x S_k at node i. The three axes of a ball, carried by the child, take the mean of
    the velocities before and after the ball (its bias term uses the velocity before it).
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
    Sdot: np.ndarray | None = None

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


def forward_kinematics(model: Model, state: State, pattern: TreePattern) -> Kinematics:
    """Poses, twists and bias accelerations of all nodes: one compiled pass over the joints in
    tree order (parents first), per joint the local transform (translations, rotations, ball),
    the coordinate axes S_k, their rates Ṡ_k and the recursions of the module docstring."""
    return KinematicsBuffers(model, pattern).forward(state)


def kinematics_arrays(model: Model, zeroed: bool = True) -> KinematicsArrays:
    """New KinematicsArrays for _forward's outputs (x, R, Vs, As, S, Sd, P, V, ζ) of ``model``: S and Sd
    zero, or with ``zeroed`` False not initialised (for a caller that zeroes Sd before each pass, as
    the compiled steps' _evaluate does: _forward writes every row of S; megabytes per step for a
    large model)."""
    N, n_u = model.n_nodes, model.n_u
    new = np.zeros if zeroed else np.empty
    return KinematicsArrays(np.empty((N, 3)), np.empty((N, 3, 3)), np.empty((N, 6)), np.empty((N, 6)), new((n_u, 6)),
                            new((n_u, 6)), np.empty((model.n_joints, 3)), np.empty((N, 6)), np.empty((N, 6)))


class KinematicsBuffers:
    """The arrays of :func:`forward_kinematics` kept for repeated passes (e.g. the error estimate of
    steps taken without their evaluation or its last iterate's kinematics, flexmb.solvers.step_control):
    :meth:`forward` fills them for a state and returns its
    Kinematics over them, valid until the next call."""

    def __init__(self, model: Model, pattern: TreePattern) -> None:
        self.model, self.pattern = model, pattern
        self.arrays = kinematics_arrays(model)  # _forward's outputs in its order
        self.x, self.R, self.Vs, self.As, self.S, self.Sd, self.P, self.V, self.zeta = self.arrays

    def forward(self, state: State) -> Kinematics:
        """forward_kinematics of ``state`` into these arrays."""
        t, model = self.pattern, self.model
        self.Sd[:] = 0.0  # the axes' rates are summed (_forward)
        _forward(t.joint_tree, np.ascontiguousarray(state.q, dtype=float),
                 np.ascontiguousarray(state.balls.reshape(-1, 3, 3), dtype=float),
                 np.ascontiguousarray(state.u, dtype=float), self.arrays, parallel.threads_for(model.n_joints))
        return Kinematics(self.x, self.R, self.V, self.zeta, self.S, self.P, self.Vs, self.As, t, self.Sd)


# ---------------------------------------------------------------------------- compiled kernels

@njit(cache=True)
def _mcross_add(V, S, u, out):
    """out += (V x S) u: spatial motion cross product of 6-vectors (v, w)."""
    out[0] += u * (V[4] * S[2] - V[5] * S[1] + V[1] * S[5] - V[2] * S[4])
    out[1] += u * (V[5] * S[0] - V[3] * S[2] + V[2] * S[3] - V[0] * S[5])
    out[2] += u * (V[3] * S[1] - V[4] * S[0] + V[0] * S[4] - V[1] * S[3])
    out[3] += u * (V[4] * S[5] - V[5] * S[4])
    out[4] += u * (V[5] * S[3] - V[3] * S[5])
    out[5] += u * (V[3] * S[4] - V[4] * S[3])


@njit(cache=True, inline="always")
def _cross_row(V, i, S, k):
    """The spatial motion cross product V[i] x S[k] of rows of 2-D arrays indexed in place (no views,
    so no reference counting per call): :func:`_mcross_add`'s expressions."""
    return (V[i, 4] * S[k, 2] - V[i, 5] * S[k, 1] + V[i, 1] * S[k, 5] - V[i, 2] * S[k, 4],
            V[i, 5] * S[k, 0] - V[i, 3] * S[k, 2] + V[i, 2] * S[k, 3] - V[i, 0] * S[k, 5],
            V[i, 3] * S[k, 1] - V[i, 4] * S[k, 0] + V[i, 0] * S[k, 4] - V[i, 1] * S[k, 3],
            V[i, 4] * S[k, 5] - V[i, 5] * S[k, 4],
            V[i, 5] * S[k, 3] - V[i, 3] * S[k, 5],
            V[i, 3] * S[k, 4] - V[i, 4] * S[k, 3])


@njit(cache=True, inline="always")
def _add_scaled_row(out, j, u, c):
    """out[j] += u c for a 6-tuple c."""
    out[j, 0] += u * c[0]
    out[j, 1] += u * c[1]
    out[j, 2] += u * c[2]
    out[j, 3] += u * c[3]
    out[j, 4] += u * c[4]
    out[j, 5] += u * c[5]


@njit(cache=True, inline="always")
def _mcross_add_rows(V, i, S, k, u, out, j):
    """out[j] += (V[i] x S[k]) u: :func:`_mcross_add` on rows (the same values)."""
    _add_scaled_row(out, j, u, _cross_row(V, i, S, k))


@njit(cache=True, inline="always")
def _mcross_add2_rows(V, i, S, k, u1, out1, j1, u2, out2, j2):
    """out1[j1] += (V[i] x S[k]) u1 and out2[j2] += (V[i] x S[k]) u2 with the cross product formed
    once (the same values: each entry is u times the same sum)."""
    c = _cross_row(V, i, S, k)
    _add_scaled_row(out1, j1, u1, c)
    _add_scaled_row(out2, j2, u2, c)


@njit(cache=True)
def _axis_row(S, k, P, g):
    """S[k] = (P x g, g): a rotation axis g through P (spatial, at the origin)."""
    S[k, 0] = P[1] * g[2] - P[2] * g[1]
    S[k, 1] = P[2] * g[0] - P[0] * g[2]
    S[k, 2] = P[0] * g[1] - P[1] * g[0]
    S[k, 3] = g[0]
    S[k, 4] = g[1]
    S[k, 5] = g[2]


@njit(cache=True, inline="always")
def _no_axes(axR, k):
    """Whether both rotation axes of joint k are zero (no rotation coordinate: a free or prismatic joint)."""
    for m in range(2):
        for i in range(3):
            if axR[k, m, i] != 0.0:
                return False
    return True


@njit(cache=True)
def _forward(tree, q, balls, u, kin, threads=1):
    """Kernel of forward_kinematics: the joints of the JointTree ``tree`` in tree order (parent index N
    means ground) at the coordinates q, balls (n_ball x 3 x 3), u, into the KinematicsArrays ``kin``:
    poses, joint points, axes, their rates Sd and the node-origin twists V and velocity-product
    accelerations ζ of every node. With ``threads`` > 1 the joints on ground (free FE nodes: they
    depend on no other joint) are split over the threads first, then the others follow in tree
    order: each joint's values are the same as in one pass (flexmb/engine/parallel.py). ``kin.Sd``
    with no rows: the axes' rates are not formed (a caller that does not use them, e.g. the beams'
    compiled iterates; the other outputs are the same bit for bit)."""
    parent = tree.parent
    if threads > 1:
        N = kin.x.shape[0]
        ground = np.nonzero(parent == N)[0]
        rest = np.nonzero(parent != N)[0]
        _forward_threads(ground, threads, tree, q, balls, u, kin)
        _forward_joints(rest, 0, rest.size, tree, q, balls, u, kin)
    else:
        _forward_joints(np.empty(0, dtype=np.int64), 0, parent.size, tree, q, balls, u, kin)


@njit(cache=True, parallel=True)
def _forward_threads(ground, nt, tree, q, balls, u, kin):
    """_forward_joints over the joints ``ground`` (all on ground) in ``nt`` contiguous slices, one per thread."""
    m = ground.size
    for c in prange(nt):
        _forward_joints(ground, c * m // nt, (c + 1) * m // nt, tree, q, balls, u, kin)


@njit(cache=True)
def _forward_joints(idx, lo, hi, tree, q, balls, u, kin):
    """The joints idx[lo:hi] of _forward in that order (``idx`` empty: the joints lo:hi); each joint
    reads only its parent node's values. One loop body over a joint's cases (on ground without a
    rotation coordinate, below a frame, a ball) rather than helper functions: inlined or called, per
    joint those read the fields of ``tree`` and ``kin`` again and take views of the work arrays, and the
    100-link chain's forward pass took 2.4 times as long (benchmarks/results/2026-11-28-tree_kernel_data.md)."""
    parent, child, jpoint, axT, axR, qT, qR, uT, uR, uB, ball, C, coff = (
        tree.parent, tree.child, tree.jpoint, tree.axT, tree.axR, tree.qT, tree.qR, tree.uT, tree.uR, tree.uB, tree.ball,
        tree.C, tree.coff)
    x, R, Vs, As, S, Sd, P, V, zeta = kin.x, kin.R, kin.Vs, kin.As, kin.S, kin.Sd, kin.P, kin.V, kin.zeta
    N = x.shape[0]
    with_sd = Sd.shape[0] > 0
    Q1 = np.empty((3, 3))
    Q2 = np.empty((3, 3))
    Q = np.empty((3, 3))
    QC = np.empty((3, 3))
    L = np.empty((3, 3))
    Qrel = np.empty((3, 3))
    RpQ1 = np.empty((3, 3))
    tl = np.empty(3)
    d = np.empty(3)
    g = np.empty(3)
    Vp = np.empty(6)
    Ap = np.empty(6)
    Rp = np.empty((3, 3))
    xp = np.empty(3)
    for t in range(lo, hi):
        k = idx[t] if idx.size else t
        p = parent[k]
        c = child[k]
        for i in range(3):  # the joint's translation: its point plus the translation coordinates along their axes
            tl[i] = jpoint[k, i]
        for m in range(3):
            if qT[k, m] >= 0:
                for i in range(3):
                    tl[i] += axT[k, m, i] * q[qT[k, m]]
        if p == N and qR[k, 0] < 0 and qR[k, 1] < 0 and uR[k, 0] < 0 and uR[k, 1] < 0 and _no_axes(axR, k):
            # on ground, no rotation coordinate (free FE nodes and bodies, balls, prismatic and fixed joints):
            # the general formulas below with the parent's pose the identity at the origin and its twists
            # zero, without the products by them: a product by 1 is exact and those by 0 add ±0 to sums
            # started at +0 (finite values), so each value is the general one (a zero's sign aside), and
            # the parent's velocity products Vp x S, zero, are left out of As and Sd (zeroed before)
            if ball[k] >= 0:
                matmul3_into(C[k], balls[ball[k]], L)
            else:
                L[:, :] = C[k]
            for i in range(3):  # Qrel = L C^T
                for j in range(3):
                    Qrel[i, j] = L[i, 0] * C[k, j, 0] + L[i, 1] * C[k, j, 1] + L[i, 2] * C[k, j, 2]
            for i in range(3):
                d[i] = tl[i] + Qrel[i, 0] * coff[k, 0] + Qrel[i, 1] * coff[k, 1] + Qrel[i, 2] * coff[k, 2]
                x[c, i] = 0.0 + d[i]
                P[k, i] = 0.0 + tl[i]
            for i in range(3):
                for j in range(3):
                    R[c, i, j] = L[i, j]
            for i in range(6):
                Vs[c, i] = 0.0
                As[c, i] = 0.0
            for m in range(3):
                kk = uT[k, m]
                if kk >= 0:
                    for i in range(3):
                        S[kk, i] = axT[k, m, i]
                        S[kk, 3 + i] = 0.0
                    for i in range(6):
                        Vs[c, i] += S[kk, i] * u[kk]
        else:
            if p == N:
                for i in range(3):
                    xp[i] = 0.0
                    for j in range(3):
                        Rp[i, j] = 1.0 if i == j else 0.0
                for i in range(6):
                    Vp[i] = 0.0
                    Ap[i] = 0.0
            else:
                for i in range(3):
                    xp[i] = x[p, i]
                    for j in range(3):
                        Rp[i, j] = R[p, i, j]
                for i in range(6):
                    Vp[i] = Vs[p, i]
                    Ap[i] = As[p, i]
            # local transform: the translations (tl, above), two rotations, ball
            if qR[k, 0] < 0 and qR[k, 1] < 0 and _no_axes(axR, k):
                # no rotation coordinate (e.g. a free joint): axis_angle_into about a zero axis by 0 and
                # their product are the identity exactly (+0 off the diagonal); the same Q1 and Q
                for i in range(3):
                    for j in range(3):
                        Q1[i, j] = Q[i, j] = 1.0 if i == j else 0.0
            else:
                th0 = q[qR[k, 0]] if qR[k, 0] >= 0 else 0.0
                th1 = q[qR[k, 1]] if qR[k, 1] >= 0 else 0.0
                axis_angle_into(axR[k, 0, 0], axR[k, 0, 1], axR[k, 0, 2], th0, Q1)
                axis_angle_into(axR[k, 1, 0], axR[k, 1, 1], axR[k, 1, 2], th1, Q2)
                matmul3_into(Q1, Q2, Q)
            matmul3_into(Q, C[k], QC)
            if ball[k] >= 0:
                matmul3_into(QC, balls[ball[k]], L)
            else:
                L[:, :] = QC
            for i in range(3):  # Qrel = L C^T
                for j in range(3):
                    Qrel[i, j] = L[i, 0] * C[k, j, 0] + L[i, 1] * C[k, j, 1] + L[i, 2] * C[k, j, 2]
            for i in range(3):
                d[i] = tl[i] + Qrel[i, 0] * coff[k, 0] + Qrel[i, 1] * coff[k, 1] + Qrel[i, 2] * coff[k, 2]
            # child pose and joint point
            for i in range(3):
                x[c, i] = xp[i] + Rp[i, 0] * d[0] + Rp[i, 1] * d[1] + Rp[i, 2] * d[2]
                P[k, i] = xp[i] + Rp[i, 0] * tl[0] + Rp[i, 1] * tl[1] + Rp[i, 2] * tl[2]
            for i in range(3):
                for j in range(3):
                    R[c, i, j] = Rp[i, 0] * L[0, j] + Rp[i, 1] * L[1, j] + Rp[i, 2] * L[2, j]
            # coordinate axes and the velocity / bias-acceleration recursions (module docstring)
            for i in range(6):
                Vs[c, i] = Vp[i]
                As[c, i] = Ap[i]
            for m in range(3):  # translations along parent axes, velocity of the frame before: Vp
                kk = uT[k, m]
                if kk >= 0:
                    for i in range(3):
                        S[kk, i] = Rp[i, 0] * axT[k, m, 0] + Rp[i, 1] * axT[k, m, 1] + Rp[i, 2] * axT[k, m, 2]
                        S[kk, 3 + i] = 0.0
                    _mcross_add(Vp, S[kk], u[kk], As[c])
                    if with_sd:
                        _mcross_add(Vp, S[kk], 1.0, Sd[kk])
            for m in range(3):
                kk = uT[k, m]
                if kk >= 0:
                    for i in range(6):
                        Vs[c, i] += S[kk, i] * u[kk]
            if uR[k, 1] >= 0:  # the second rotation's axis is turned by the first
                matmul3_into(Rp, Q1, RpQ1)
            for m in range(2):
                kk = uR[k, m]
                if kk >= 0:
                    M = Rp if m == 0 else RpQ1
                    for i in range(3):
                        g[i] = M[i, 0] * axR[k, m, 0] + M[i, 1] * axR[k, m, 1] + M[i, 2] * axR[k, m, 2]
                    _axis_row(S, kk, P[k], g)
                    if with_sd:
                        _mcross_add2_rows(Vs, c, S, kk, u[kk], As, c, 1.0, Sd, kk)
                    else:
                        _mcross_add_rows(Vs, c, S, kk, u[kk], As, c)
                    for i in range(6):
                        Vs[c, i] += S[kk, i] * u[kk]
        if uB[k, 0] >= 0:  # ball: axes = the child's axes (columns of R_c)
            for m in range(3):
                kk = uB[k, m]
                for i in range(3):
                    g[i] = R[c, i, m]
                _axis_row(S, kk, P[k], g)
            for m in range(3):
                kk = uB[k, m]
                if with_sd:
                    _mcross_add2_rows(Vs, c, S, kk, u[kk], As, c, 0.5, Sd, kk)
                else:
                    _mcross_add_rows(Vs, c, S, kk, u[kk], As, c)
            for m in range(3):
                kk = uB[k, m]
                for i in range(6):
                    Vs[c, i] += S[kk, i] * u[kk]
            if with_sd:
                for m in range(3):  # Sd of a ball: the mean of the velocities before and after it (Kinematics)
                    _mcross_add_rows(Vs, c, S, uB[k, m], 0.5, Sd, uB[k, m])
        # node-origin twist (v = v_O + w x x) and velocity-product acceleration of the child
        w0, w1, w2 = Vs[c, 3], Vs[c, 4], Vs[c, 5]
        V[c, 0] = Vs[c, 0] + (w1 * x[c, 2] - w2 * x[c, 1])
        V[c, 1] = Vs[c, 1] + (w2 * x[c, 0] - w0 * x[c, 2])
        V[c, 2] = Vs[c, 2] + (w0 * x[c, 1] - w1 * x[c, 0])
        V[c, 3], V[c, 4], V[c, 5] = w0, w1, w2
        a0, a1, a2 = As[c, 3], As[c, 4], As[c, 5]
        zeta[c, 0] = As[c, 0] + (a1 * x[c, 2] - a2 * x[c, 1]) + (w1 * V[c, 2] - w2 * V[c, 1])
        zeta[c, 1] = As[c, 1] + (a2 * x[c, 0] - a0 * x[c, 2]) + (w2 * V[c, 0] - w0 * V[c, 2])
        zeta[c, 2] = As[c, 2] + (a0 * x[c, 1] - a1 * x[c, 0]) + (w0 * V[c, 1] - w1 * V[c, 0])
        zeta[c, 3], zeta[c, 4], zeta[c, 5] = a0, a1, a2
