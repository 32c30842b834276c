"""Assembly of the generalized Newton–Euler equations (DESIGN.md §4):

    B^T [ M (B udot + zeta) + g(V) - f_ext ] - tau(q, u) = r                     (1)

M: node-level mass (rigid bodies, elements/rigid_body.py), g: gyroscopic forces, f_ext:
gravity and nodal loads, tau: joint springs and dampers. ``r`` is zero for the unknown
coordinates; for a driven coordinate it is the actuator force/torque (inverse dynamics).
M̄ = B^T M B (Attia eq. 6.3; Issa & Arczewski eq. 3.7).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from flexmb.elements import loads as load_kernels
from flexmb.elements import rigid_body

from .kinematics import Kinematics, TreePattern, forward_kinematics
from .topology import GROUND

__all__ = ["Assembler", "Evaluation"]


@dataclass
class Evaluation:
    """Everything the solvers need at one state.

    Mb (N,6,6) node masses; bias (N,6) = M zeta + g - f_ext; loads (N,6) nodal loads only;
    B velocity transformation; tau (n_u) joint spring/damper forces.
    """

    kin: Kinematics
    Mb: np.ndarray
    bias: np.ndarray
    loads: np.ndarray
    B: sp.csc_matrix
    tau: np.ndarray

    def node_wrenches(self, udot: np.ndarray) -> np.ndarray:
        """Per-node M (B udot + zeta) + g - f (N,6): what each node needs from its joint."""
        a = (self.B @ udot).reshape(-1, 6)
        return np.einsum("nij,nj->ni", self.Mb, a) + self.bias

    def residual(self, udot: np.ndarray) -> np.ndarray:
        """Eq. (1) for all velocity coordinates."""
        return self.B.T @ self.node_wrenches(udot).reshape(-1) - self.tau


class Assembler:
    """Evaluates eq. (1) and M̄ for a model; index structures are built once."""

    def __init__(self, model) -> None:
        self.model = model
        self.pattern = TreePattern(model)
        N = model.n_nodes
        blk = np.arange(N)[:, None, None] * 6
        self._Mrows = (blk + np.arange(6)[None, :, None] + np.zeros((1, 1, 6), dtype=int)).ravel()
        self._Mcols = (blk + np.arange(6)[None, None, :] + np.zeros((1, 6, 1), dtype=int)).ravel()

    def mass_matrix_nodes(self, Mb: np.ndarray) -> sp.csr_matrix:
        """Block-diagonal node mass matrix (6N x 6N)."""
        N = self.model.n_nodes
        return sp.csr_matrix((Mb.ravel(), (self._Mrows, self._Mcols)), shape=(6 * N, 6 * N))

    def evaluate(self, state, load_factor: float = 1.0) -> Evaluation:
        """Kinematics, masses and forces at ``state``; gravity and nodal loads are scaled by
        ``load_factor`` (load stepping of the static solve)."""
        m = self.model
        kin = forward_kinematics(m, state, self.pattern)
        N = m.n_nodes
        Mb = np.zeros((N, 6, 6))
        bias = np.zeros((N, 6))
        if len(m.body_names):
            Rb = kin.R[m.body_node]
            np.add.at(Mb, m.body_node, rigid_body.mass_blocks(Rb, m.body_mass, m.body_com, m.body_inertia))
            gy = rigid_body.gyroscopic(Rb, kin.V[m.body_node, 3:], m.body_mass, m.body_com, m.body_inertia)
            gr = rigid_body.gravity_wrench(Rb, m.body_mass, m.body_com, m.gravity)
            np.add.at(bias, m.body_node, gy - load_factor * gr)
        loads = load_factor * load_kernels.nodal_wrenches(m.loads, state.t, kin.R, N)
        bias += np.einsum("nij,nj->ni", Mb, kin.zeta) - loads
        tau = np.zeros(m.n_u)
        if m.spring_u.size:
            qk = state.q[m.u_to_q[m.spring_u]]
            tau[m.spring_u] = -m.spring_k * (qk - m.spring_rest) - m.spring_c * state.u[m.spring_u]
        return Evaluation(kin, Mb, bias, loads, kin.B(), tau)

    def mbar(self, ev: Evaluation, cols: np.ndarray | None = None) -> sp.csc_matrix:
        """Generalized mass matrix M̄ = B^T M B (restricted to ``cols`` if given)."""
        B = ev.B if cols is None else ev.B[:, cols]
        return sp.csc_matrix(B.T @ (self.mass_matrix_nodes(ev.Mb) @ B))

    def stiffness_damping_diag(self, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Diagonal K̄ and C̄ of the joint springs/dampers on the coordinates ``cols``."""
        m = self.model
        k = np.zeros(m.n_u)
        c = np.zeros(m.n_u)
        k[m.spring_u] = m.spring_k
        c[m.spring_u] = m.spring_c
        return k[cols], c[cols]

    def structural_pattern(self, cols: np.ndarray) -> sp.csc_matrix:
        """Sparsity pattern of M̄ restricted to ``cols`` (all ones), independent of values."""
        p = self.pattern
        Bp = p.assemble(np.ones((p.pair_node.size, 6)))[:, cols]
        N = self.model.n_nodes
        Mp = self.mass_matrix_nodes(np.ones((N, 6, 6)))
        P = sp.csc_matrix(Bp.T @ (Mp @ Bp)) + sp.eye(len(cols), format="csc")
        P.data[:] = 1.0
        return P

    def reactions(self, ev: Evaluation, udot: np.ndarray) -> np.ndarray:
        """Joint reaction wrenches (n_joints, 6): force and moment (about the current joint
        point, global axes) that the parent exerts on the child's subtree. Their projection on
        the joint's axes is the joint's generalized force (drive + spring)."""
        m = self.model
        kin = ev.kin
        w = ev.node_wrenches(udot)
        Wsp = np.concatenate([w[:, :3], w[:, 3:] + np.cross(kin.x, w[:, :3])], axis=1)  # at origin
        out = np.zeros((m.n_joints, 6))
        acc = Wsp.copy()
        eon = m.tree.edge_of_node
        for k in range(m.n_joints - 1, -1, -1):
            c = m.joint_child[k]
            out[k] = acc[c]
            p = m.joint_parent[k]
            if p != GROUND:
                acc[p] += acc[c]
        del eon
        F = out[:, :3]
        out[:, 3:] -= np.cross(kin.joint_point, F)
        return out

    def energies(self, ev: Evaluation, state) -> tuple[float, float]:
        """Kinetic energy and potential energy (gravity + joint springs)."""
        m = self.model
        T = rigid_body.kinetic_energy(ev.Mb, ev.kin.V)
        V = 0.0
        if len(m.body_names):
            V += rigid_body.potential_energy(ev.kin.x[m.body_node], ev.kin.R[m.body_node], m.body_mass, m.body_com, m.gravity)
        if m.spring_u.size:
            qk = state.q[m.u_to_q[m.spring_u]]
            V += float(0.5 * np.sum(m.spring_k * (qk - m.spring_rest) ** 2))
        return T, V
