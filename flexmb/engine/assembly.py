"""Assembly of the generalized Newton–Euler equations (DESIGN.md §4):

    B^T [ M (B udot + zeta) + g(V) - f_ext ] - tau(q, u) = r                     (1)

M: node-level mass (rigid bodies, elements/rigid_body.py), g: gyroscopic forces, f_ext:
gravity and nodal loads, tau: joint springs and dampers and applied joint forces. ``r`` is zero for the unknown
coordinates; for a driven coordinate it is the actuator force/torque (inverse dynamics).
M̄ = B^T M B (Attia eq. 6.3; Issa & Arczewski eq. 3.7).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from flexmb.elements import bushing as bushing_kernels
from flexmb.elements import loads as load_kernels
from flexmb.elements import rigid_body
from flexmb.elements.beam import exact as beam_exact
from flexmb.elements.beam import kernels as beam_kernels
from flexmb.engine.friction import JointFriction
from flexmb.engine.iteration_matrix import IterationMatrices, MassPairs
from flexmb.engine.kinematics import Kinematics, TreePattern, forward_kinematics
from flexmb.rotations import cross

__all__ = ["Assembler", "Evaluation"]


@dataclass
class Evaluation:
    """Everything the solvers need at one state.

    Mb (N,6,6) node masses; bias (N,6) = M zeta + g - f_ext; loads (N,6) nodal loads only;
    tau (n_u) joint spring/damper forces. Products with B and B^T run as sums along the tree
    (path sums down, subtree sums up) without forming B; ``B`` builds it on request.
    """

    kin: Kinematics
    Mb: np.ndarray
    bias: np.ndarray
    loads: np.ndarray
    tau: np.ndarray
    bushing_K: np.ndarray | None = None  # (n_bushing, 12, 12) tangents in node twists
    bushing_C: np.ndarray | None = None
    strain_energy: float = 0.0
    element_dissipation: float = 0.0  # power dissipated by element dampers
    beam_frame: np.ndarray | None = None  # (n_beam,3,3) co-rotated frames R_r (element mass, beam.py eq. 5)
    beam_Ml: np.ndarray | None = None  # (n_beam,12,12) local consistent masses
    beam_nodes: tuple[np.ndarray, np.ndarray] | None = None
    beam_forces: np.ndarray | None = None  # (n_beam, 6) N, Vy, Vz, T, My, Mz
    beam_energy: np.ndarray | None = None  # (n_beam,)
    beam_kinetic: float = 0.0
    beam_weight_energy: float = 0.0
    _tangents: object = None  # callable -> (K, C, K_material) of all elements
    friction: JointFriction | None = None  # bearing friction (flexmb/friction.py), implicit in udot
    _tangent_cache: tuple | None = None

    def element_tangents(self) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """Element stiffness, damping and material stiffness (n_el, 12, 12), or None."""
        if self._tangents is None:
            return None
        if self._tangent_cache is None:
            self._tangent_cache = self._tangents()
        return self._tangent_cache

    @property
    def B(self) -> sp.csc_matrix:
        """Velocity-transformation matrix (6N x n_u): node twists = B u."""
        return self.kin.B()

    def twists(self, u: np.ndarray) -> np.ndarray:
        """Node twists (N,6) for generalized velocities u, i.e. (B u) per node."""
        return self.kin.pattern.twists(self.kin.S, u, self.kin.x)

    def project(self, w: np.ndarray) -> np.ndarray:
        """Generalized forces B^T w for node wrenches w (N,6) about the node origins."""
        return self.kin.pattern.project(self.kin.S, w, self.kin.x)

    def node_wrenches(self, udot: np.ndarray) -> np.ndarray:
        """Per-node M (B udot + zeta) + g - f (N,6): what each node needs from its joint."""
        a = self.twists(udot)
        w = np.einsum("nij,nj->ni", self.Mb, a) + self.bias
        if self.beam_frame is not None:
            w += self.beam_mass_forces(a)
        return w

    def beam_mass_forces(self, a: np.ndarray) -> np.ndarray:
        """Node forces (N,6) of the beams' element masses for node accelerations a (N,6)."""
        out = np.zeros_like(a)
        beam_kernels.mass_forces(*self.beam_nodes, self.beam_frame, self.beam_Ml, np.ascontiguousarray(a), out)
        return out

    def element_masses(self) -> np.ndarray | None:
        """Element mass matrices (n_beam,12,12) in global node components, or None."""
        if self.beam_frame is None:
            return None
        return beam_exact.global_mass(self.beam_frame, self.beam_Ml)

    def residual(self, udot: np.ndarray) -> np.ndarray:
        """Eq. (1) for all velocity coordinates."""
        w = self.node_wrenches(udot)
        r = self.project(w) - self.tau
        if self.friction is not None:  # bearing friction torques from the reactions = subtree sums of w
            r[self.friction.u] -= self.friction.torques(w)
        return r


class Assembler:
    """Evaluates eq. (1) and M̄ for a model; index structures are built once.

    M̄ is computed as in the composite-rigid-body algorithm: with I_i the spatial inertia of
    node i at the global origin and I^C_j = sum over the subtree of joint j,
    M̄_ab = S_a^T I^C_{j(a)} S_b for every coordinate b on the path from j(a) to ground;
    this equals B^T M B (checked in the tests) at O(pairs) cost.
    """

    def __init__(self, model, exact_tangent: bool = False) -> None:
        """``exact_tangent``: beam stiffness by differentiating the exact internal forces (for
        the static solve); otherwise material + string stiffness (enough for Newton in time
        steps, several times cheaper)."""
        self.model = model
        self.exact_tangent = exact_tangent
        self.pattern = TreePattern(model)
        N = model.n_nodes
        self._beam_nz = beam_kernels.mass_pattern(model.beam_Ml)
        # two-node elements (bushings, then beams): node pairs, ground = N
        ia = np.concatenate([np.where(model.bushing_a < 0, N, model.bushing_a), model.beam_a]).astype(int)
        ib = np.concatenate([model.bushing_b, model.beam_b]).astype(int)
        self._bush_ia, self._bush_ib = ia[: len(model.bushing_names)], ib[: len(model.bushing_names)]
        ne = ia.size
        dof = np.concatenate([6 * ia[:, None] + np.arange(6), 6 * ib[:, None] + np.arange(6)], axis=1)
        rr = np.repeat(dof[:, :, None], 12, axis=2)
        cc = np.repeat(dof[:, None, :], 12, axis=1)
        keep = (rr < 6 * N) & (cc < 6 * N)
        self._el_keep = keep.reshape(ne, 144)
        self._el_rows = rr[keep]
        self._el_cols = cc[keep]
        # M̄'s composite-inertia pairs and the iteration matrices' pattern maps (engine/iteration_matrix.py)
        self.matrices = IterationMatrices(MassPairs(self.pattern, model.n_u),
                                          [np.stack([model.bushing_a, model.bushing_b], axis=1),
                                           np.stack([model.beam_a, model.beam_b], axis=1)])
    def evaluate(self, state, load_factor: float = 1.0, elastic_cuts: bool = True) -> Evaluation:
        """Kinematics, masses and forces at ``state``; gravity and nodal loads are scaled by
        ``load_factor`` (load stepping of the static solve); ``elastic_cuts=False`` leaves the
        bushings' forces out (the rigid-equivalent model of flexmb.analysis.rigid)."""
        m = self.model
        kin = forward_kinematics(m, state, self.pattern)
        N = m.n_nodes
        Mb = np.zeros((N, 6, 6))
        bias = np.zeros((N, 6))
        if len(m.body_names):
            rigid_body.accumulate(m.body_node, kin.R, np.ascontiguousarray(kin.V[:, 3:]), m.body_mass, m.body_com,
                                  m.body_inertia, m.gravity, float(load_factor), Mb, bias)
        loads = load_factor * load_kernels.nodal_wrenches(m.loads, state.t, kin.R, N)
        bias += np.einsum("nij,nj->ni", Mb, kin.zeta) - loads
        tau = np.zeros(m.n_u)
        if m.spring_u.size:
            qk = state.q[m.u_to_q[m.spring_u]]
            tau[m.spring_u] = -m.spring_k * (qk - m.spring_rest) - m.spring_c * state.u[m.spring_u]
        if m.jforce_u.size:  # applied joint forces (ModelBuilder.add_joint_force), scaled like the loads
            tau[m.jforce_u] += load_factor * np.array([float(f(state.t)) for f in m.jforce_f])
        ev = Evaluation(kin, Mb, bias, loads, tau)
        if m.friction_u.size:
            ev.friction = JointFriction(m, kin, self.pattern, state.u)
        nb = len(m.bushing_names)
        if nb and elastic_cuts:
            self._bushings(ev)
        if len(m.beam_names):
            self._beams(ev, load_factor)
        if nb or len(m.beam_names):
            ev._tangents = lambda: self._element_tangents(ev, elastic_cuts)
        return ev

    def _element_tangents(self, ev: Evaluation, elastic_cuts: bool):
        """(K, C, K_material) of all two-node elements, bushings first (computed on demand:
        only the iteration matrix needs them)."""
        m = self.model
        nb = len(m.bushing_names)
        Ks, Cs, Km = [], [], []
        if nb:
            z = np.zeros((nb, 12, 12))
            Ks.append(ev.bushing_K if elastic_cuts else z)
            Cs.append(ev.bushing_C if elastic_cuts else z)
            Km.append(ev.bushing_K if elastic_cuts else z)
        if len(m.beam_names):
            a, b = m.beam_a, m.beam_b
            kin = ev.kin
            tangent = beam_exact.tangent if self.exact_tangent else beam_exact.tangent_approx
            K, Kmat = tangent(kin.x[a], kin.R[a], kin.x[b], kin.R[b], m.beam_C1, m.beam_C2, m.beam_L0, m.beam_Kl)
            Ks.append(K)
            Cs.append(m.beam_alpha[:, None, None] * Kmat)
            Km.append(Kmat)
        return np.concatenate(Ks), np.concatenate(Cs), np.concatenate(Km)

    def _beams(self, ev: Evaluation, load_factor: float) -> None:
        """Beam elastic and damping forces, consistent-mass inertia (beam.py eq. 5–6), weight
        (eq. 7), section forces and energies: one compiled pass (elements/beam_kernels.py)."""
        m, kin = self.model, ev.kin
        n = len(m.beam_names)
        frames, fl, en = np.empty((n, 3, 3)), np.empty((n, 7)), np.empty((n, 4))
        beam_kernels.residual(m.beam_a, m.beam_b, kin.x, kin.R, kin.V, kin.zeta, m.beam_C1, m.beam_C2, m.beam_L0,
                               m.beam_Kl, m.beam_alpha, m.beam_Ml, *self._beam_nz, m.beam_mass, m.gravity,
                               float(load_factor), ev.bias, frames, fl, en)
        ev.beam_frame, ev.beam_Ml, ev.beam_nodes = frames, m.beam_Ml, (m.beam_a, m.beam_b)
        ev.beam_kinetic = float(en[:, 2].sum())
        ev.beam_weight_energy = float(en[:, 3].sum())
        ev.strain_energy += float(en[:, 0].sum())
        ev.element_dissipation += float(en[:, 1].sum())
        ev.beam_forces = beam_exact.section_forces(fl, m.beam_L0)
        ev.beam_energy = en[:, 0]

    def _bushings(self, ev: Evaluation) -> None:
        """Bushing forces into the bias (as applied forces), tangents and energies."""
        m, kin = self.model, ev.kin
        xe = np.concatenate([kin.x, np.zeros((1, 3))])
        Re = np.concatenate([kin.R, np.eye(3)[None]])
        Ve = np.concatenate([kin.V, np.zeros((1, 6))])
        ia, ib = self._bush_ia, self._bush_ib
        fa, fb, K, C, energy, power = bushing_kernels.forces(
            xe[ia], Re[ia], xe[ib], Re[ib], Ve[ia], Ve[ib], m.bushing_sa, m.bushing_Ea, m.bushing_sb,
            m.bushing_Eb, m.bushing_mode, m.bushing_K, m.bushing_C)
        be = np.concatenate([ev.bias, np.zeros((1, 6))])
        np.add.at(be, ia, -fa)
        np.add.at(be, ib, -fb)
        ev.bias = be[:-1]
        ev.bushing_K, ev.bushing_C = K, C
        ev.strain_energy = float(energy.sum())
        ev.element_dissipation = float(power.sum())

    def element_blocks(self, ev: Evaluation, ck: float, cc: float, material_only: bool = False,
                       cm: float = 1.0) -> np.ndarray | None:
        """ck K + cc C + cm M of every two-node element (bushings, then beams) as (n_el,12,12), or
        None. In time steps the beams' K is the material plus string stiffness (compiled); with
        ``exact_tangent`` their full consistent tangent (beam.tangent). ``material_only`` drops
        the geometric stiffness."""
        m = self.model
        nb, nbeam = len(m.bushing_names), len(m.beam_names)
        if nb + nbeam == 0:
            return None
        data = np.zeros((nb + nbeam, 12, 12))
        if nb and ev.bushing_K is not None:
            data[:nb] = ck * ev.bushing_K + cc * ev.bushing_C
        if nbeam and not self.exact_tangent:
            kin = ev.kin
            beam_kernels.element_matrices(m.beam_a, m.beam_b, kin.x, kin.R, m.beam_C1, m.beam_C2, m.beam_L0, m.beam_Kl,
                                           m.beam_alpha, m.beam_Ml, float(ck), float(cc), float(cm), bool(material_only),
                                           data[nb:])
        elif nbeam:
            tg = ev.element_tangents()
            data[nb:] = ck * (tg[2][nb:] if material_only else tg[0][nb:]) + cc * tg[1][nb:]
            if cm:
                data[nb:] += cm * ev.element_masses()
        return data

    def element_matrix(self, ev: Evaluation, ck: float, cc: float, material_only: bool = False,
                       cm: float = 1.0) -> sp.csr_matrix | None:
        """Node-level sparse matrix ck K + cc C + cm M of all two-node elements (6N x 6N), or None."""
        data = self.element_blocks(ev, ck, cc, material_only, cm)
        if data is None:
            return None
        N6 = 6 * self.model.n_nodes
        return sp.csr_matrix((data.reshape(len(data), -1)[self._el_keep], (self._el_rows, self._el_cols)), shape=(N6, N6))

    def iteration_matrix(self, ev: Evaluation, cols: np.ndarray, gp: float, bp: float, diag: np.ndarray,
                         material_only: bool = False, with_mass: bool = True) -> sp.csc_matrix:
        """S = M̄ + γ' C̄ + β' K̄ on the coordinates ``cols`` (joint springs in ``diag``);
        ``with_mass=False`` gives γ' C̄ + β' K̄ alone (the static tangent). Assembled in place on
        the structural pattern (engine/iteration_matrix.py; scatter maps built once per ``cols``).
        Bearing friction adds its viscous slope near rest to the diagonal (engine/friction.py)."""
        if ev.friction is not None:
            diag = diag + gp * ev.friction.damping_diag(cols)
        blocks = self.element_blocks(ev, bp, gp, material_only, cm=1.0 if with_mass else 0.0)
        nb = len(self.model.bushing_names)
        groups = [None, None] if blocks is None else [blocks[:nb], blocks[nb:]]
        return self.matrices.get(np.asarray(cols)).assemble(self.matrices.pairs, ev.Mb, ev.kin, groups, diag, with_mass)

    def mbar(self, ev: Evaluation, cols: np.ndarray | None = None, diag: np.ndarray | None = None,
             with_elements: bool = True) -> sp.csc_matrix:
        """Generalized mass matrix M̄ (restricted to ``cols``; plus ``diag`` on its diagonal).
        Node-block part by composite inertias on a fixed pattern, plus B^T M_e B of the beams."""
        cols = np.arange(self.model.n_u) if cols is None else np.asarray(cols)
        M = self.matrices.pairs.mbar(ev.Mb, ev.kin, cols, diag)
        if with_elements and ev.beam_frame is not None:
            B = ev.B[:, cols]
            M = M + sp.csc_matrix(B.T @ (self.element_matrix(ev, 0.0, 0.0, cm=1.0) @ B))
        return M

    def stiffness_damping_diag(self, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Diagonal K̄ and C̄ of the joint springs/dampers on the coordinates ``cols``."""
        m = self.model
        k = np.zeros(m.n_u)
        c = np.zeros(m.n_u)
        k[m.spring_u] = m.spring_k
        c[m.spring_u] = m.spring_c
        return k[cols], c[cols]

    def structural_pattern(self, cols: np.ndarray) -> sp.csc_matrix:
        """Sparsity pattern of the iteration matrix on ``cols`` (all ones), independent of values:
        M̄'s pattern united with that of Bᵀ K B for the elements (engine/iteration_matrix.py)."""
        return self.matrices.get(np.asarray(cols)).pattern

    def reactions(self, ev: Evaluation, udot: np.ndarray, extra: np.ndarray | None = None) -> np.ndarray:
        """Joint reaction wrenches (n_joints, 6): force and moment (about the current joint
        point, global axes) that the parent exerts on the child's subtree. Their projection on
        the joint's axes is the joint's generalized force (drive + spring)."""
        m = self.model
        kin = ev.kin
        w = ev.node_wrenches(udot)
        if extra is not None:  # further node wrenches (inertial minus applied sense)
            w = w + extra
        Wsp = np.concatenate([w[:, :3], w[:, 3:] + cross(kin.x, w[:, :3])], axis=1)  # at origin
        out = self.pattern.subtree_sum(Wsp)[m.joint_child]
        F = out[:, :3]
        out[:, 3:] -= cross(kin.joint_point, F)
        return out

    def energies(self, ev: Evaluation, state) -> tuple[float, float]:
        """Kinetic energy and potential energy (gravity + joint springs + element strain)."""
        m = self.model
        T = rigid_body.kinetic_energy(ev.Mb, ev.kin.V)
        T += ev.beam_kinetic
        V = 0.0
        if len(m.body_names):
            V += rigid_body.potential_energy(ev.kin.x[m.body_node], ev.kin.R[m.body_node], m.body_mass, m.body_com, m.gravity)
        if m.spring_u.size:
            qk = state.q[m.u_to_q[m.spring_u]]
            V += float(0.5 * np.sum(m.spring_k * (qk - m.spring_rest) ** 2))
        V += ev.beam_weight_energy
        return T, V + ev.strain_energy
