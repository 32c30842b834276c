"""Assembly of the generalized Newton–Euler equations (docs/equations_of_motion.md §3):

    B^T [ M (B udot + zeta) + g(V) - f_ext ] - tau(q, u) = r                     (1)

M: node-level mass (rigid bodies and particles, elements/rigid_body), g: gyroscopic forces,
f_ext: gravity and nodal loads, tau: joint springs and dampers and applied joint forces; the
element families (flexmb.elements: bushings, beams, ...) add their node wrenches to the bias
and their element masses to M. ``r`` is zero for the unknown
coordinates; for a driven coordinate it is the actuator force/torque (inverse dynamics).
M̄ = B^T M B (Attia eq. 6.3; Issa & Arczewski eq. 3.7).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from flexmb.elements import FAMILIES
from flexmb.elements import loads as load_kernels
from flexmb.elements.family import FamilyEvaluation, StartContext, StepContext
from flexmb.engine.friction import JointFriction
from flexmb.engine.iteration_matrix import IterationMatrices, MassPairs
from flexmb.engine.kinematics import (
    Kinematics,
    KinematicsBuffers,
    TreePattern,
    forward_kinematics,
    kinetic_energy,
    mass_times_add,
)
from flexmb.engine.tree_pairs import joint_blocks, joint_pairs
from flexmb.model import Model
from flexmb.motion_forces import HOLD_KEY
from flexmb.rotations import cross
from flexmb.state import State

if TYPE_CHECKING:  # type hints only
    from flexmb.engine.tree_solver import TreeSolver

__all__ = ["Assembler", "Evaluation", "LazyEvaluation"]


@dataclass
class Evaluation:
    """Everything the solvers need at one state.

    Mb (N,6,6) node masses; bias (N,6) = M zeta + g - f_ext plus the element families' node
    wrenches; loads (N,6) nodal loads only; tau (n_u) joint spring/damper forces; ``elements``:
    each element family's evaluation at this state, by name (FAMILIES order; families without
    elements, or left out, are absent); ``strain_energy`` and ``element_dissipation``: their sums.
    Products with B and B^T run as sums along the tree (path sums down, subtree sums up)
    without forming B; ``B`` builds it on request.
    """

    kin: Kinematics
    Mb: np.ndarray
    bias: np.ndarray
    loads: np.ndarray
    tau: np.ndarray
    elements: dict[str, FamilyEvaluation] = field(default_factory=dict)
    strain_energy: float = 0.0
    element_dissipation: float = 0.0  # power dissipated by element dampers
    element_drive_power: float = 0.0  # power put in by the elements' prescribed motions (actuators): drive work
    element_load_power: float = 0.0  # power of the elements' applied loads (node loads of the motion): load work
    position_noise: float = 0.0  # [m] the largest of the families' (FamilyEvaluation.position_noise)
    #: the drive forces of the state where they are not eq. (1) at it: a step whose families corrected its state
    #: after Newton reports those of its converged iterate (flexmb.solvers.newton_loop.accept); None: eq. (1)
    drive_forces: np.ndarray | None = None
    friction: JointFriction | None = None  # bearing friction (engine/friction.py), implicit in udot
    #: the joint forces of the motion's values and tangents (k = -df/dq, c = -df/du; flexmb/motion_forces.py), each
    #: (n_u,), zero off their coordinates; None without such forces
    motion: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    mass_terms: list[Callable[[np.ndarray, np.ndarray], None]] = field(default_factory=list)  # element masses: out += M_e a
    #: (u̇ array, its values, eq. (1) there) of the last Newton iterate, set by the integrator: the
    #: drive forces and powers of the accepted step ask for that residual again (see :meth:`residual`)
    residual_known: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    #: (u̇ values, node wrenches there (N,6)) of the compiled step's accepted iterate, which formed them
    #: (flexmb.solvers.element_run): the output row's joint reactions take them (see :meth:`node_wrenches`)
    wrenches_known: tuple[np.ndarray, np.ndarray] | None = None

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
        """Per-node M (B udot + zeta) + g - f (N,6): what each node needs from its joint (a copy of
        ``wrenches_known`` where ``udot`` has its values: the same sums, formed in the step)."""
        known = self.wrenches_known
        if known is not None and np.array_equal(udot, known[0]):
            return known[1].copy()
        a = self.twists(udot)
        w = np.empty_like(a)
        mass_times_add(self.Mb, a, self.bias, w)
        if self.mass_terms:
            w += self.element_mass_forces(a)
        return w

    def element_mass_forces(self, a: np.ndarray) -> np.ndarray:
        """Node forces (N,6) of the element masses for node accelerations a (N,6)."""
        out = np.zeros_like(a)
        for add in self.mass_terms:
            add(a, out)
        return out

    def residual(self, udot: np.ndarray) -> np.ndarray:
        """Eq. (1) for all velocity coordinates (a copy of ``residual_known`` when ``udot`` is that
        array with the same values)."""
        known = self.residual_known
        if known is not None and udot is known[0] and np.array_equal(udot, known[1]):
            return known[2].copy()
        w = self.node_wrenches(udot)
        r = self.project(w) - self.tau
        if self.friction is not None:  # bearing friction torques from the reactions = subtree sums of w
            r[self.friction.u] -= self.friction.torques(w)
        return r


def _add_blocks(f, model: Model, data: Any, prep: Any, fe: FamilyEvaluation, ck: float, cc: float, cm: float,
                material_only: bool, exact_tangent: bool, scatter: Any, kin: Kinematics, out: np.ndarray) -> None:
    """A family's Bₑᵀ (ck K + cc C + cm M) Bₑ into the iteration matrix's values (ElementFamily.add_blocks)."""
    f.add_blocks(model, data, prep, fe, kin, ck, cc, cm, material_only, exact_tangent, scatter, out)


class LazyEvaluation:
    """The evaluation of a state taken without evaluating it (GeneralizedAlpha.step accepts a Newton
    iterate whose next correction is predicted below tolerance without evaluating it): computed
    when first used, so a step whose evaluation nobody needs costs none. The kinematics alone (the
    error estimate's) are one forward pass; element dissipation and friction are known without
    evaluating where the model has none (Assembler.dissipative, no bearing friction); anything else
    evaluates the state in full, once (Assembler.evaluate: the same numbers as an evaluation in the
    step, bit for bit). ``near``: the kinematics of the iterate the step evaluated last (one Newton
    correction before the state taken, so its positions differ by β' times that last correction):
    good enough for an estimate (:attr:`near`; the step's error estimate, flexmb.solvers.step_control
    (E5)), never used as the state's own."""

    def __init__(self, asm: Assembler, state: State, near: Kinematics | None = None) -> None:
        # the state as taken (its time may be set to the step's end afterwards: keep this one)
        self._asm = asm
        self._state = State(state.t, state.q, state.balls, state.u, state.udot, state.elements)
        self._kin: Kinematics | None = None
        self._full: Evaluation | None = None
        self._near = near

    @property
    def near(self) -> Kinematics | None:
        """The kinematics of this state if computed, else those of the last evaluated iterate of its
        step if given (class docstring), else None."""
        if self._full is not None or self._kin is not None:
            return self.kin
        return self._near

    @property
    def full(self) -> Evaluation:
        """The full evaluation (Assembler.evaluate of the state), computed on first use."""
        if self._full is None:
            self._full = self._asm.evaluate(self._state)
        return self._full

    @property
    def evaluated(self) -> bool:
        """Whether the full evaluation was computed."""
        return self._full is not None

    @property
    def kin(self) -> Kinematics:
        if self._full is not None:
            return self._full.kin
        if self._kin is None:
            self._kin = forward_kinematics(self._asm.model, self._state, self._asm.pattern)
        return self._kin

    def kin_into(self, buffers: KinematicsBuffers | None) -> tuple[Kinematics, KinematicsBuffers | None]:
        """The kinematics for a caller that needs them only now (the error estimate): those known, or
        one forward pass into the caller's ``buffers`` (made here if None; not kept here, so a later
        use of :attr:`kin` computes them again). Returns (kinematics, buffers)."""
        if self._full is not None or self._kin is not None:
            return self.kin, buffers
        if buffers is None:
            buffers = KinematicsBuffers(self._asm.model, self._asm.pattern)
        return buffers.forward(self._state), buffers

    @property
    def element_dissipation(self) -> float:
        return self.full.element_dissipation if self._asm.dissipative else 0.0

    @property
    def element_drive_power(self) -> float:
        return self.full.element_drive_power if self._asm.prescribing else 0.0

    @property
    def element_load_power(self) -> float:
        return self.full.element_load_power if self._asm.loading else 0.0

    @property
    def friction(self) -> JointFriction | None:
        return self.full.friction if self._asm.model.friction_u.size else None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.full, name)


class Assembler:
    """Evaluates eq. (1), M̄ and the iteration matrix for a model; index structures are built once.

    The element families (flexmb.elements.FAMILIES) with elements in the model are evaluated in
    registry order: the node-mass families first (their Mb ζ is then added once), then the
    others. M̄'s node-mass part comes from the composite-rigid-body pairs, the element masses'
    from their blocks (engine/iteration_matrix.py).
    """

    def __init__(self, model: Model, exact_tangent: bool = False) -> None:
        """``exact_tangent``: element stiffness by the families' consistent tangents (for the
        static solve; the beam's by differentiating its exact internal forces); otherwise their
        time-step tangents (the beam's material + string stiffness: enough for Newton in time
        steps, several times cheaper)."""
        self.model = model
        self.exact_tangent = exact_tangent
        self.pattern = TreePattern(model)
        # the families with elements in the model: (family, data, prep), in registry order
        active = [(f, model.elements[name]) for name, f in FAMILIES.items()
                  if name in model.elements and f.forces and model.elements[name].n]
        active = [(f, d, f.prepare(model, d)) for f, d in active]
        self.node_mass = tuple(a for a in active if a[0].node_mass)
        self.families = tuple(a for a in active if not a[0].node_mass)
        self.with_blocks = tuple(a for a in self.families if a[0].has_blocks)
        self.with_state = tuple(a for a in active if a[0].has_state)
        #: some element may dissipate power (ElementFamily.dissipates): the power of a state needs its evaluation
        self.dissipative = any(f.dissipates(d) for f, d, _ in self.families)
        self.prescribing = any(f.prescribes for f, _, _ in self.families)  # power that is drive work (actuators)
        self.loading = any(f.loads for f, _, _ in self.families)  # power that is load work (loads of the motion)
        #: no element couples two nodes (no family with blocks has elements): the iteration matrix is
        #: the tree's composite form and the O(n) tree factorization applies (engine/tree_solver.py)
        self.rigid_tree = not self.with_blocks
        #: spring-dampers only, each across one joint: the tree factor takes their joint blocks (engine/tree_pairs.py,
        #: docs/spring_damper.md (S17)); None otherwise, ``tree_pairs_refusal`` saying why
        self.tree_pairs, self.tree_pairs_refusal = joint_pairs(model, self.with_blocks) if self.with_blocks else (None, "")
        self._node_maps_cache: list[tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None
        # M̄'s composite-inertia pairs and the iteration matrices' pattern maps (engine/iteration_matrix.py)
        self.matrices = IterationMatrices(MassPairs(self.pattern, model.n_u),
                                          [f.element_nodes(d) for f, d, _ in self.with_blocks],
                                          [f.internal_pair for f, _, _ in self.with_blocks])

    def evaluate(self, state: State, load_factor: float = 1.0, elastic_cuts: bool = True) -> Evaluation:
        """Kinematics, masses and forces at ``state``; gravity and nodal loads are scaled by
        ``load_factor`` (load stepping of the static solve); ``elastic_cuts=False`` leaves the
        cut families' forces out (bushings: the rigid-equivalent model of flexmb.analysis.rigid)."""
        m = self.model
        kin = forward_kinematics(m, state, self.pattern)
        N = m.n_nodes
        Mb = np.zeros((N, 6, 6))
        w = np.zeros((N + 1, 6))  # node wrenches; row N: ground (element ends on ground), discarded
        bias = w[:N]
        elements: dict[str, FamilyEvaluation] = {}
        for f, d, prep in self.node_mass:
            elements[f.name] = f.evaluate(m, d, prep, state, kin, load_factor, Mb, w)
        if m.loads:
            loads = load_factor * load_kernels.nodal_wrenches(m.loads, state.t, kin.R, N)
            bias -= loads
        else:
            loads = np.zeros((N, 6))
        mass_times_add(Mb, kin.zeta, bias, bias)
        tau = np.zeros(m.n_u)
        if m.spring_u.size:
            qk = state.q[m.u_to_q[m.spring_u]]
            tau[m.spring_u] = -m.spring_k * (qk - m.spring_rest) - m.spring_c * state.u[m.spring_u]
        if m.jforce_u.size:  # applied joint forces (ModelBuilder.add_joint_force), scaled like the loads
            tau[m.jforce_u] += load_factor * np.array([float(f(state.t)) for f in m.jforce_f])
        motion = motion_forces(m, state, load_factor) if m.mforce_u.size else None
        if motion is not None:
            tau += motion[0]
        for f, d, prep in self.families:
            if f.cut and not elastic_cuts:
                continue
            elements[f.name] = f.evaluate(m, d, prep, state, kin, load_factor, Mb, w)
        ev = self.evaluation(kin, Mb, w, loads, tau, elements)
        if m.friction_u.size:
            ev.friction = JointFriction(m, kin, self.pattern, state.u)
        ev.motion = motion
        return ev

    def evaluation(self, kin: Kinematics, Mb: np.ndarray, w: np.ndarray, loads: np.ndarray, tau: np.ndarray,
                   elements: dict[str, FamilyEvaluation]) -> Evaluation:
        """The Evaluation of computed parts (:meth:`evaluate`; the compiled element step's iterates):
        node masses Mb, node wrenches w (N+1, 6; row N ground), nodal loads, τ and the families'
        evaluations by name (node-mass families first, registry order), with the sums of their
        energies and element-mass products. Bearing friction is not included."""
        ev = Evaluation(kin, Mb, w[:-1], loads, tau, elements)
        for f, d, prep in self.families:
            fe = elements.get(f.name)
            if fe is None:
                continue
            ev.strain_energy += fe.strain_energy
            ev.element_dissipation += fe.dissipation
            ev.element_drive_power += fe.drive_power
            ev.element_load_power += fe.load_power
            ev.position_noise = max(ev.position_noise, fe.position_noise)
            if f.has_mass:
                ev.mass_terms.append(partial(f.add_mass_forces, d, prep, fe))
        return ev

    def element_output(self, ev: Evaluation, family: str, name: str) -> np.ndarray:
        """The per-element output ``name`` of ``family`` at ``ev`` (ElementFamily.outputs)."""
        return FAMILIES[family].output(self.model, self.model.elements[family], ev.elements.get(family), name)

    def element_blocks(self, ev: Evaluation, ck: float, cc: float, material_only: bool = False,
                       cm: float = 1.0) -> list[np.ndarray | None]:
        """ck K + cc C + cm M of every family with blocks, one (n_el, 6m, 6m) array each (None
        for a family left out of ``ev``), in the order of ``self.with_blocks``. In time steps the
        beams' K is the material plus string stiffness (compiled); with ``exact_tangent`` their
        consistent tangent. ``material_only`` drops the geometric stiffness."""
        out = []
        for f, d, prep in self.with_blocks:
            fe = ev.elements.get(f.name)
            out.append(None if fe is None else
                       f.blocks(self.model, d, prep, fe, ev.kin, ck, cc, cm, material_only, self.exact_tangent))
        return out

    def _node_maps(self) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Per family with blocks, the node-level (6N x 6N) positions of its blocks' entries (ground
        rows and columns dropped): (kept entries, rows, columns). Built on first use and kept (about
        2.2 kB per beam: time steps never need them, so a run does not hold them)."""
        if self._node_maps_cache is None:
            N = self.model.n_nodes
            maps = []
            for f, d, _ in self.with_blocks:
                nodes = f.element_nodes(d)
                k = 6 * nodes.shape[1]
                dof = (6 * np.where(nodes < 0, N, nodes)[:, :, None] + np.arange(6)).reshape(len(nodes), k)
                rr = np.repeat(dof[:, :, None], k, axis=2)
                cc = np.repeat(dof[:, None, :], k, axis=1)
                keep = (rr < 6 * N) & (cc < 6 * N)
                maps.append((keep.reshape(len(nodes), k * k), rr[keep], cc[keep]))
            self._node_maps_cache = maps
        return self._node_maps_cache

    def element_matrix(self, ev: Evaluation, ck: float, cc: float, material_only: bool = False,
                       cm: float = 1.0) -> sp.csr_matrix | None:
        """Node-level sparse matrix ck K + cc C + cm M of all element blocks (6N x 6N), or None."""
        if not self.with_blocks:
            return None
        data, rows, cols = [], [], []
        for E, (keep, rr, cc_) in zip(self.element_blocks(ev, ck, cc, material_only, cm), self._node_maps()):
            data.append(np.zeros(rr.size) if E is None else E.reshape(len(E), -1)[keep])
            rows.append(rr)
            cols.append(cc_)
        N6 = 6 * self.model.n_nodes
        return sp.csr_matrix((np.concatenate(data), (np.concatenate(rows), np.concatenate(cols))), shape=(N6, N6))

    def iteration_matrix(self, ev: Evaluation, cols: np.ndarray, gp: float, bp: float, diag: np.ndarray,
                         material_only: bool = False, with_mass: bool = True,
                         out: np.ndarray | None = None, projection: bool = False) -> sp.csc_matrix | np.ndarray:
        """S = M̄ + γ' C̄ + β' K̄ on the coordinates ``cols`` (joint springs in ``diag``);
        ``with_mass=False`` gives γ' C̄ + β' K̄ alone (the static tangent). Assembled in place on
        the structural pattern (engine/iteration_matrix.py; scatter maps built once per ``cols``);
        with ``out`` only its values, written into ``out`` (SparseCholesky.values).
        Bearing friction adds its viscous slope near rest to the diagonal (engine/friction.py).
        ``projection=True``: M̄ + β' K̄_c instead, K̄_c the blocks of the families with
        ``projection_blocks`` (the augmented-Lagrangian cuts' penalties): the metric of their
        mass-orthogonal projections (flexmb.elements.rigid_cut (AL5)); ``diag`` and friction left out."""
        if ev.friction is not None and not projection:
            diag = diag + gp * ev.friction.damping_diag(cols)
        if ev.motion is not None and not projection:
            diag = diag + motion_diag(ev.motion, cols, gp, bp)
        cm = 1.0 if with_mass else 0.0

        def coefficients(f) -> tuple[float, float] | None:  # (ck, cc) of a family, None: it adds nothing
            if not projection:
                return bp, gp
            return (bp, 0.0) if f.projection_blocks else ((0.0, 0.0) if f.has_mass else None)

        adders = [None if (fe := ev.elements.get(f.name)) is None or (c := coefficients(f)) is None else
                  partial(_add_blocks, f, self.model, d, prep, fe, c[0], c[1], cm, material_only, self.exact_tangent)
                  for f, d, prep in self.with_blocks]
        # without node masses (no body, no particle) M̄'s node part is zero: its pairs add nothing
        return self.matrices.get(np.asarray(cols)).assemble(self.matrices.pairs, ev.Mb, ev.kin, adders, diag,
                                                            with_mass and bool(self.node_mass), out)

    def mbar(self, ev: Evaluation, cols: np.ndarray | None = None, diag: np.ndarray | None = None,
             with_elements: bool = True) -> sp.csc_matrix:
        """Generalized mass matrix M̄ (restricted to ``cols``; plus ``diag`` on its diagonal).
        Node-block part by composite inertias on a fixed pattern, plus Bᵀ M_e B of the element masses."""
        cols = np.arange(self.model.n_u) if cols is None else np.asarray(cols)
        M = self.matrices.pairs.mbar(ev.Mb, ev.kin, cols, diag)
        if with_elements and ev.mass_terms:
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

    def tree_joint_blocks(self, ev: Evaluation, solver: TreeSolver, gp: float, bp: float) -> np.ndarray | None:
        """The joint blocks (docs/spring_damper.md (S17)) the tree factor ``solver`` adds at the evaluation
        ``ev`` (the Python step's tree terms): the spring-dampers' blocks (S8) (the exact tangent's (S9)
        with ``exact_tangent``) for ck = β', cc = γ', through engine/tree_pairs.py joint_blocks; None for
        a rigid tree without them."""
        jp = self.tree_pairs
        if jp is None:
            return None
        f, d, prep = self.with_blocks[0]
        E = f.blocks(self.model, d, prep, ev.elements[f.name], ev.kin, float(bp), float(gp), 1.0, False, self.exact_tangent)
        out = np.empty((self.model.n_u, 6))
        joint_blocks(jp.child, jp.end, jp.joint, solver.jf_ptr, solver.jf_coord, ev.kin.S, ev.kin.x, E, out)
        return out

    # ------------------------------------------------------------------ internal state of element families
    def newton_update(self, ev: Evaluation, state: State) -> tuple[dict[str, np.ndarray], bool, bool]:
        """The element families' internal state after a Newton iteration at ``state`` (evaluated
        as ``ev``), whether every family has settled and whether a family's blocks changed
        (ElementFamily.newton_update)."""
        nxt = dict(state.elements)
        settled, changed = True, False
        for f, d, prep in self.with_state:
            fe = ev.elements.get(f.name)
            res = None if fe is None else f.newton_update(self.model, d, prep, fe, state)
            if res is not None:
                nxt[f.name], ok = res[0], res[1]
                settled = settled and bool(ok)
                changed = changed or (len(res) > 2 and bool(res[2]))
        return nxt, settled, changed

    def newton_failure(self, ev: Evaluation) -> list[str]:
        """What the families with internal state say of a time step whose Newton iteration failed at
        ``ev`` (ElementFamily.newton_failure: cuts left open, a singular configuration), for its message."""
        out = []
        for f, d, prep in self.with_state:
            fe = ev.elements.get(f.name)
            if fe is not None:
                out += f.newton_failure(self.model, d, prep, fe, ev)
        return out

    def begin_step(self, state: State, ctx: StepContext) -> dict[str, np.ndarray]:
        """The element families' internal state to start a time step with (ElementFamily.begin_step)."""
        out = dict(state.elements)
        for f, d, prep in self.with_state:
            s = f.begin_step(self.model, d, prep, state, ctx)
            if s is not None:
                out[f.name] = s
        return out

    def start(self, state: State, ctx: StartContext) -> State:
        """``state`` corrected by the families with internal state before the initial accelerations
        (ElementFamily.start; e.g. rigid cuts closed and their multipliers set)."""
        st = state.copy()
        for f, d, prep in self.with_state:
            f.start(self.model, d, prep, st, ctx)
        return st

    def between(self, st0: State, st1: State, state: State, s: float, ctx: StartContext) -> State:
        """``state``, interpolated at the fraction ``s`` of the step from ``st0`` to ``st1`` (dense
        output), with the families' internal state between theirs (ElementFamily.between) and corrected
        onto their constraints (ElementFamily.close)."""
        for f, d, prep in self.with_state:
            if f.name in st0.elements and f.name in st1.elements:
                state.elements = {**state.elements, f.name: f.between(d, st0.elements[f.name], st1.elements[f.name], s)}
            f.close(self.model, d, prep, state, ctx)
        return state

    def end_step(self, ev: Evaluation, state: State, ctx: StepContext) -> None:
        """Let the families with internal state correct the converged ``state`` (ElementFamily.end_step)."""
        for f, d, prep in self.with_state:
            fe = ev.elements.get(f.name)
            if fe is not None:
                f.end_step(self.model, d, prep, fe, state, ctx)

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

    def energies(self, ev: Evaluation, state: State) -> tuple[float, float]:
        """Kinetic energy and potential energy (gravity + joint springs + element strain): the node
        masses' kinetic energy, then per family (node-mass families, the joint springs, the
        others) its element masses' kinetic and its weight's potential energy."""
        m = self.model
        T = kinetic_energy(ev.kin.V, ev.Mb)  # node masses (bodies, particles)
        V = 0.0
        for f, d, _ in self.node_mass:
            t, v = f.energies(m, d, ev.elements[f.name], ev.kin)
            T += t
            V += v
        if m.spring_u.size:
            qk = state.q[m.u_to_q[m.spring_u]]
            V += float(0.5 * np.sum(m.spring_k * (qk - m.spring_rest) ** 2))
        for f, d, _ in self.families:
            fe = ev.elements.get(f.name)
            if fe is not None:
                t, v = f.energies(m, d, fe, ev.kin)
                T += t
                V += v
        return T, V + ev.strain_energy


def motion_forces(m: Model, state: State, load_factor: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The joint forces of the motion f(t, q, u) at ``state`` (scaled by ``load_factor``) and their
    tangents k = -∂f/∂q, c = -∂f/∂u (docs/motion_forces.md (M2)), each (n_u,) and zero elsewhere. A
    sampled force (M6) gives its held value (``state.elements["motion_hold"]``) and no tangent."""
    f, k, c = np.zeros(m.n_u), np.zeros(m.n_u), np.zeros(m.n_u)
    hold = state.elements.get(HOLD_KEY) if state.elements else None
    for i, (j, mf) in enumerate(zip(m.mforce_u, m.mforce)):
        if mf.sampled:  # the held value (docs/motion_forces.md (M6)): the state's hold is the step's start's
            f[j] = load_factor * hold[0, i] if hold is not None else 0.0
            continue
        q, u = float(state.q[m.u_to_q[j]]), float(state.u[j])
        f[j] = load_factor * mf.value(state.t, q, u)
        dq, du = mf.tangent(state.t, q, u)
        k[j], c[j] = -load_factor * dq, -load_factor * du
    return f, k, c


def motion_diag(motion: tuple[np.ndarray, np.ndarray, np.ndarray], cols: np.ndarray, gp: float, bp: float) -> np.ndarray:
    """γ' c + β' k of the joint forces of the motion on the coordinates ``cols`` (docs/motion_forces.md (M3))."""
    return gp * motion[2][cols] + bp * motion[1][cols]
