"""Compiled Newton iterations for models with beams on CHOLMOD, dense or band factors (issue 14: the lean
Newton iteration): the arguments of the compiled kernels and the Python side of a step.

In a generalized-α step of :class:`flexmb.solvers.generalized_alpha.GeneralizedAlpha` each Newton
iteration forms a trial state, evaluates it and forms eq. (1) of engine/assembly.py; a
factorization also assembles the iteration matrix. In Python that is some forty calls and as many
small arrays per iteration, several times the arithmetic on small models. For models whose forces
are those of rigid bodies, beams, joint springs, dampers, drives, applied joint forces, nodal and follower
loads, loads of the motion and bearing friction (:meth:`ElementStep.applies`), the kernels of
flexmb/solvers/element_kernels.py do one iteration's work in one compiled call (element_iterate) and
write the iteration matrix's values M̄ + γ' C̄ + β' K̄ straight into the factor's matrix (element_matrix);
on the dense and band factors the whole Newton loop is one call (element_newton_step, :meth:`ElementStep.newton`),
on CHOLMOD the loop stays the Python step's (tests, factor reuse, restarts, the lazy acceptance) and so do
CHOLMOD's factorization and solves. Both call the same kernels in the same order as the Python evaluation,
so a step's result is the same bit for bit (tests/test_element_step.py). :class:`ElementStep` holds their
arguments as named structures (docs/architecture.md P6): the model's arrays once, in a
flexmb.solvers.step_args.StepArgs per factor (:meth:`ElementStep.kernel_args`), the step's buffers and start
new per step (:meth:`ElementStep.begin`). The State and Evaluation objects are built only for the iterate
a step accepts (or one that fails, for its message).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from flexmb.elements import FAMILIES
from flexmb.elements.rotational_spring_damper import rotational_failure
from flexmb.engine import parallel
from flexmb.engine.assembly import Evaluation
from flexmb.engine.friction import JointFriction, friction_arrays, friction_diag
from flexmb.engine.iteration_matrix import ElementScatter
from flexmb.engine.kinematics import Kinematics
from flexmb.model import Model
from flexmb.solvers import motion_load_step as load_step
from flexmb.solvers.actuator_step import SHORT, actuator_arrays, actuator_error, set_targets
from flexmb.solvers.element_families import (
    COUPLING_CST,
    COUPLING_NXT,
    CUT_CST,
    CUT_FLAGS,
    CUT_NXT,
    ROT_FLAGS,
    coupling_arrays,
    element_step_refusal,
    family_outputs,
    iterate_evaluations,
    iterate_flags,
    rotational_arrays,
)
from flexmb.solvers.element_kernels import (
    LAZY,
    IterateModel,
    MatrixMaps,
    NewtonSettings,
    StepBuffers,
    StepModel,
    StepStart,
    element_iterate,
    element_matrix,
    element_newton_step,
)
from flexmb.solvers.family_tuples import Families, FamilyOutputs
from flexmb.solvers.law_step import SPRING_FLAGS, spring_arrays, spring_failure
from flexmb.solvers.motion_step import motion_evaluation, step_motion, with_motion_diag
from flexmb.solvers.step_args import StepArgs, step_args
from flexmb.solvers.tree_step import CompiledStep
from flexmb.state import State

__all__ = ["ElementStep", "LAZY"]

_NO_INT, _NO_FLOAT = np.empty(0, dtype=np.int64), np.empty(0)  # the band factor's arrays, for the dense one


def _maps(x: ElementScatter) -> tuple:
    """The arrays of ``x`` that _scatter_elements takes: (nodes, anc_ptr, anc_coord, pos_ptr, pos, max_ne)."""
    return x.nodes, x.anc_ptr, x.anc_coord, x.pos_ptr, x.pos, x.max_ne


def _band_maps(dst: np.ndarray, lower: tuple, es: ElementStep, nt: int) -> MatrixMaps:
    """The MatrixMaps of ``es`` on the band factor (BandCholesky.dst ``dst``: pattern position -> band position,
    -1 in the upper triangle) of the families' lower-triangle scatters ``lower`` (beams, bushings, rigid cuts,
    spring-dampers, couplings, actuators, rotational ones, loads of the motion), the beams' thread plan for ``nt`` threads."""

    def banded(x: ElementScatter) -> ElementScatter:
        pos = x.pos.astype(np.int64)
        pos[pos >= 0] = dst[pos[pos >= 0]]  # the lower triangle's positions: all in the band
        return replace(x, pos=pos.astype(x.pos.dtype) if pos.max(initial=0) < 2**31 else pos)

    bsc, bscb, bscr, bscs, bscc, bsca, bsro, bsml = (banded(x) for x in lower)
    bplan = bsc.thread_plan(nt)
    mpos = dst[es.mbar[0]]  # M̄'s pairs in both triangles: the lower one's
    sc = es.scatters  # the block buffers shared
    return MatrixMaps(es.pairs, (mpos[mpos >= 0], es.mbar[1][mpos >= 0]), dst[es.diag_pos],
                      ((*_maps(bsc), bsc.skip, (bplan.doff, bplan.dmap)), _maps(bscb), sc[2], _maps(bscr), sc[4],
                       _maps(bscs), sc[6], _maps(bscc), sc[8], _maps(bsca), sc[10], _maps(bsro), sc[12],
                       _maps(bsml), sc[14]))


class ElementStep(CompiledStep):
    """The compiled Newton iterates of one integrator for a model with beams (module docstring).
    Per step :meth:`begin` evaluates what depends on time only and gives new arrays for the step's
    state and evaluation; :meth:`iterate` fills them for an iterate, :meth:`matrix` the iteration
    matrix's values; :meth:`state` and :meth:`evaluation` wrap the current iterate."""

    #: the element families whose forces and blocks the compiled iterates form (elements/beam/kernels.py,
    #: elements/cut_kernels.py); a model with any other family takes the Python iterates
    FAMILIES = ("bushing", "beam", "rigid_cut", "spring_damper", "actuator", "coupling", "rotational_spring_damper",
                "motion_load")

    @staticmethod
    def applies(model: Model, asm, cholmod: bool) -> bool:
        """On a matrix factor, a model of the families :attr:`FAMILIES` (rigid bodies the only node masses) whose
        user functions numba compiles (element_step_refusal)."""
        return not ElementStep.refusal(model, asm, cholmod)

    @staticmethod
    def refusal(model: Model, asm, cholmod: bool) -> str:
        """Why a model takes the Python Newton iterates instead (empty if :meth:`applies`): the
        family, load or setting that keeps it there, named for ``flexmb info`` (element_step_refusal)."""
        return element_step_refusal(model, asm, cholmod, ElementStep.FAMILIES)

    def __init__(self, model: Model, asm, band_dst: np.ndarray | None = None) -> None:
        super().__init__(model, asm)
        self.asm = asm
        i64 = np.int64
        d = model.elements["beam"]  # either family may have no elements: empty arrays then
        self.beam = FAMILIES["beam"].prepare(model, d)  # BeamArrays (elements/beam/kernel_data.py)
        bu = model.elements["bushing"]
        ia, ib = FAMILIES["bushing"].prepare(model, bu)
        self.bushing = (np.asarray(ia, dtype=i64), np.asarray(ib, dtype=i64), bu.sa, bu.Ea, bu.sb, bu.Eb,
                        np.asarray(bu.mode, dtype=i64), bu.K, bu.C)
        self._n_bushing = bu.n
        rc = model.elements["rigid_cut"]
        ra, rb = FAMILIES["rigid_cut"].prepare(model, rc)
        self.rigid = (np.asarray(ra, dtype=i64), np.asarray(rb, dtype=i64), rc.sa, rc.Ea, rc.sb, rc.Eb,
                      np.asarray(rc.mode, dtype=i64), rc.mask, rc.alpha_scale, rc.tol, rc.tol_rot)
        self._n_rigid = rc.n
        sd = model.elements["spring_damper"]
        self.spring = spring_arrays(model, FAMILIES["spring_damper"].prepare(model, sd), self.springs[5][4])  # law_step.py
        self._n_spring = sd.n
        self.coupling, self._n_coupling = coupling_arrays(model), model.elements["coupling"].n
        self.actuator, self._n_actuator = actuator_arrays(model), model.elements["actuator"].n  # actuator_step.py
        self.rotational = rotational_arrays(model, self.springs[5][4])  # the step's time: the torque laws' too
        self._n_rotational = model.elements["rotational_spring_damper"].n
        self.motion_load = load_step.node_load_inputs(model)  # the loads of the motion (flexmb/solvers/motion_load_step.py)
        free = np.asarray(model.free_u, dtype=i64)
        im = asm.matrices.get(free)
        group = {f.name: k for k, (f, _, _) in enumerate(asm.with_blocks)}

        def lower(name: str, m: int) -> ElementScatter:  # the factors read S's lower triangle only
            if name not in group:
                return ElementScatter(np.zeros((0, m), dtype=i64), im.groups[0].anc_ptr, im.groups[0].anc_coord,
                                      np.zeros(1, dtype=i64), np.zeros(0, dtype=im.groups[0].pos.dtype), 1,
                                      np.zeros(0, dtype=i64))
            return im.groups[group[name]].lower_only(im.indices, im.indptr)

        sc, scb, scr, scs, scml = (lower(f, m) for f, m in (("beam", 2), ("bushing", 2), ("rigid_cut", 2), ("spring_damper", 2),
                                                            ("motion_load", 1)))
        scc, sca, scro = lower("coupling", 4), lower("actuator", 2), lower("rotational_spring_damper", 2)
        self.pairs = (asm.matrices.pairs.pa, asm.matrices.pairs.pb)
        self.mbar = (np.asarray(im.mbar_pos, dtype=i64), np.asarray(im.mbar_src, dtype=i64))
        self.diag_pos = np.asarray(im.diag_pos, dtype=i64)
        # on threads each adds its elements' products to S itself but at the seams (ElementScatter.thread_plan)
        nt = parallel.threads_for(d.n)
        plan = sc.thread_plan(nt)
        self.scatters = ((*_maps(sc), sc.skip, (plan.doff, plan.dmap)), _maps(scb), np.empty((bu.n, 12, 12)), _maps(scr),
                         np.empty((rc.n, 12, 12)), _maps(scs), np.empty((sd.n, 12, 12)), _maps(scc),
                         np.empty((self._n_coupling, 24, 24)), _maps(sca), np.empty((self._n_actuator, 12, 12)), _maps(scro),
                         np.empty((self._n_rotational, 12, 12)), _maps(scml), np.empty((len(self.motion_load[1]), 6, 6)))
        # on the band factor the compiled loop writes S straight into its band storage: the same positions remapped
        self.band_maps = None if band_dst is None else _band_maps(np.asarray(band_dst, dtype=i64), (sc, scb, scr, scs, scc,
                                                                                                  sca, scro, scml), self, nt)
        self.with_mass = bool(asm.node_mass)
        N, n_u, n = model.n_nodes, model.n_u, d.n
        parent = self.tree[0]  # the joints on ground (parent N) and the others, in tree order (node_twists_threads)
        self.work = (np.empty(n_u), np.empty((int(model.u_is_ball.sum()) // 3, 3)), np.empty((N, 6)), np.empty((N, 6)),
                     np.empty((N, 6)), np.empty((N, 6)), np.flatnonzero(parent == N).astype(i64),
                     np.flatnonzero(parent != N).astype(i64), friction_arrays(model, self.pattern, free))
        self.r, self._n_el = np.empty(free.size), n
        self._sizes = (n, bu.n, rc.n, sd.n, self._n_coupling, self._n_actuator, self._n_rotational)
        self._no_outs: FamilyOutputs | None = None  # the outputs of families without elements (begin)
        # the beams' passes and the joints on ground on numba's threads from PARALLEL_MIN of them (engine/parallel.py)
        self.threads = (nt, parallel.threads_for(model.n_joints))  # nt: also the plan's
        # the kernels' named arguments (element_kernels.py): the model's arrays and the matrix's maps, made once
        self.iterate_model = IterateModel(self.tree, self.bodies, self.gravity, self.springs, self.jforce_u, self.coords,
                                          self.fams, self.threads)
        self.maps = MatrixMaps(self.pairs, self.mbar, self.diag_pos, self.scatters)
        self._args: tuple | None = None  # (StepArgs, key) of the last factor (step_args)

    def begin(self, st: State, a: np.ndarray, h: float, t1: float, params: tuple, elements: dict | None = None,
              reuse: bool = False, inputs: tuple | None = None) -> None:
        """Start a step of size h from (st, a) to t1 with ``params`` = (αm, αf, γ, β, h): the time
        inputs at t1 (``inputs``: those already evaluated at t1, as :meth:`inputs` gives them) and new arrays
        for its iterates; ``elements``: the families' internal state to start the step with
        (ElementFamily.begin_step; the rigid cuts' penalties). ``reuse``: the last step's arrays but the cuts',
        couplings' and actuators' (element_run: their evaluation is used up; kernels write before reading); a model
        whose only family with state is the rigid cuts' keeps theirs too, their state copied in (the same StepBuffers).
        Families without elements share one set of empty outputs (element_families.family_outputs)."""
        drives, jf, loads = self.inputs(np.array([t1])) if inputs is None else inputs
        step_motion(self.springs[5], st, t1)
        load_step.step_node_loads(self.springs[6], self.motion_load, self.model, st, t1)  # follower loads, loads of the motion
        self._st, self._a, self._t1, self._params = st, a, t1, params
        self._drives = (self.driven, drives[0][0], drives[1][0], drives[2][0])
        self._jf, self._loads = jf[0], loads[0]
        els = st.elements if elements is None else elements
        if self._n_actuator:
            set_targets(self.actuator, self.model.elements["actuator"], t1)  # (L, L', L'')(t1) (actuator_step.py)
        self.start = StepStart(self._jf, self._loads, self._drives, params, st.q, st.balls, st.u, st.udot, a)
        if reuse and getattr(self, "outs", None) is not None:  # the cuts', couplings' and actuators' arrays new (their state)
            if self._n_rigid and not (self._n_coupling or self._n_actuator):  # element_run's: the cuts' state in place
                cut = self.outs.rigid_cut  # cut_outputs' cst and flags as new; StepBuffers and StepArgs kept
                cut[CUT_CST][:] = els["rigid_cut"]
                cut[CUT_FLAGS][:] = 0.0
                self._cst0 = cut[CUT_CST].copy()
            elif self._n_rigid or self._n_coupling or self._n_actuator:
                self.outs = family_outputs(self._sizes, self.spring, self.rotational, els, self.outs, False)
                self._cst0, self._ccst0, self._acst0 = self._state_copies()
                self.step_buffers = self._buffers()
            return
        n_u = self.model.n_u
        self.out_state = (np.empty_like(st.q), np.empty_like(st.balls), np.empty(n_u), np.empty(n_u), np.empty(n_u))
        self.kin, self.Mb, self.wfull, self.tau, self.rfull = self.buffers(with_sd=False)  # no Sd: the tree solver's
        if self._no_outs is None:  # the outputs of families without elements, shared by every step
            self._no_outs = family_outputs((0,) * 7, self.spring, self.rotational, {}, None, True)
        self.outs = family_outputs(self._sizes, self.spring, self.rotational, els, self._no_outs, True)
        self._cst0, self._ccst0, self._acst0 = self._state_copies()
        self.step_buffers = self._buffers()

    def _state_copies(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Copies of the rigid cuts', couplings' and actuators' state ``cst`` at the step's start (:meth:`restart`)."""
        outs = self.outs
        return outs.rigid_cut[CUT_CST].copy(), outs.coupling[COUPLING_CST].copy(), outs.actuator.cst.copy()

    def _buffers(self) -> StepBuffers:
        """The begun step's buffers as element_kernels.StepBuffers (the same arrays)."""
        return StepBuffers(self.out_state, self.kin, self.Mb, self.wfull, self.tau, self.outs, self.rfull, self.r, self.work)

    def restart(self) -> None:
        """The rigid cuts' state back to that of the step's start (a Newton restart with a fresh factor)."""
        if self._n_rigid:
            self.outs.rigid_cut[CUT_CST][:] = self._cst0
        if self._n_coupling:
            self.outs.coupling[COUPLING_CST][:] = self._ccst0
        if self._n_actuator:
            self.outs.actuator.cst[:] = self._acst0

    @property
    def cut_flags(self) -> tuple[bool, bool, float, int]:
        """(settled, changed, position noise, stuck) of the last iterate's rigid cuts, actuators and couplings
        (iterate_flags; stuck 0 where one is stuck, else -1: element_families.stuck_error names it)."""
        settled, changed, noise, stuck = iterate_flags(self.fams, self.outs)
        return bool(settled), bool(changed), float(noise), 0 if stuck else -1

    def elements(self) -> dict:
        """The families' internal state after the last iterate's update (the next iterate's)."""
        out = dict(self._st.elements)
        if self._n_rigid:
            out["rigid_cut"] = self.outs.rigid_cut[CUT_NXT].copy()
        if self._n_coupling:
            out["coupling"] = self.outs.coupling[COUPLING_NXT].copy()
        if self._n_actuator:
            out["actuator"] = self.outs.actuator.nxt.copy()
        return out

    def iterate(self, udot: np.ndarray, evaluate: bool, first: bool) -> tuple[float, float]:
        """The iterate of accelerations ``udot`` (element_iterate): (max |r| on the free coordinates,
        force scale at the ``first`` iteration)."""
        rn, scale = element_iterate(self.iterate_model, self.step_buffers, self.start, udot, evaluate, first)
        outs = self.outs
        if self._n_spring and outs.spring_damper[SPRING_FLAGS][0] >= 0.0:  # (S11) or a law not finite: as its evaluate
            raise spring_failure(self.model.elements["spring_damper"], outs.spring_damper, self._t1)
        if self._n_actuator and outs.actuator.flags[SHORT] >= 0.0:  # (S11) for an actuator: as actuator.evaluate
            raise actuator_error(self.model.elements["actuator"], self.actuator, outs.actuator, self._t1)
        if self._n_rotational and outs.rotational[ROT_FLAGS][0] >= 0.0:  # (R12) or a law not finite (R15): as its evaluate
            raise rotational_failure(self.model.elements["rotational_spring_damper"], outs.rotational, self._t1)
        load_step.node_load_check(self.motion_load, self.model, self._t1)  # a load not finite: as MotionLoads.evaluate
        return rn, scale

    @property
    def fams(self) -> Families:
        """The compiled families' arrays by name (flexmb/solvers/family_tuples.py): beams, bushings, rigid cuts,
        spring-dampers, couplings, actuators, rotational spring-dampers, loads of the motion."""
        return Families(self.beam, self.bushing, self.rigid, self.spring, self.coupling, self.actuator, self.rotational,
                        self.motion_load)

    def kernel_args(self, chol) -> StepArgs:
        """The kernels' StepArgs (flexmb/solvers/step_args.py) of this model on the dense or band factor ``chol``:
        element_kernels.StepModel of :attr:`iterate_model`, the maps (the band's positions on the band factor:
        S straight into its band storage) and :meth:`factor_arrays`; made again only where the factor's arrays
        are other objects, so a compiled call unboxes one pointer for them (element_newton_step, element_run)."""
        factor = self.factor_arrays(chol)
        key = (chol, *(x.base if isinstance(x, np.ndarray) and x.base is not None else x for x in factor))
        if self._args is None or len(self._args[1]) != len(key) or not all(a is b for a, b in zip(self._args[1], key)):
            maps = self.band_maps if chol.kind == "band" else self.maps
            self._args = step_args(StepModel(self.iterate_model, maps, factor), key, None)
        return self._args[0]

    @staticmethod
    def factor_arrays(chol) -> tuple:
        """element_newton_step's ``factor`` of the dense or band factor ``chol`` (S straight into the band)."""
        if chol.kind == "band":
            return True, _NO_INT, _NO_INT, chol.L.reshape(-1), chol.L, chol.perm, chol.dinv, chol._y
        return False, chol.indptr, chol.indices, chol.values, chol.L, _NO_INT, _NO_FLOAT, _NO_FLOAT

    def newton(self, chol, gp: float, bp: float, diag: np.ndarray, tol: tuple, lazy: bool) -> tuple[int, int, int, float]:
        """The step begun by :meth:`begin`, its whole Newton loop on the dense or band factor ``chol``
        (element_newton_step) with (γ', β'), ``diag`` added to S's diagonal and ``tol`` = (rtol,
        atol_u̇, eps_pos, length scale, max_iter): (status, iterations, factorizations, residual)."""
        info = np.zeros(5)
        newton = NewtonSettings(float(gp), float(bp), *(float(v) for v in tol[:4]), int(tol[4]), bool(lazy), self.with_mass,
                                np.ascontiguousarray(tol[5], dtype=float))
        element_newton_step(self.kernel_args(chol), self.step_buffers, self.start, np.ascontiguousarray(diag, dtype=float),
                            newton, info)
        return int(info[3]), int(info[0]), int(info[1]), float(info[2])

    def end_run(self, st: State, t1: float, loads: np.ndarray) -> None:
        """After steps taken by flexmb.solvers.element_run in this step's buffers: the last one's state
        ``st``, end time ``t1`` and nodal loads, for :meth:`state` and :meth:`evaluation`."""
        self._st, self._t1, self._loads = st, t1, loads

    udot = property(lambda self: self.out_state[3], doc="The current iterate's accelerations (drives applied).")
    a1 = property(lambda self: self.out_state[4], doc="The current iterate's pseudo-acceleration.")

    def matrix(self, gp: float, bp: float, diag: np.ndarray, material_only: bool, out: np.ndarray) -> None:
        """M̄ + γ' C̄ + β' K̄ + diag at the current iterate into ``out`` (element_matrix), with the forces of
        the motion's and the bearing friction's slopes on the diagonal (with_motion_diag, friction_diag)."""
        diag = with_motion_diag(self.springs[5], float(gp), float(bp), np.ascontiguousarray(diag, dtype=float))
        fric = self.work[8]
        if fric[0].size:
            friction_diag(self.out_state[2], fric[0], fric[8], fric[5], fric[6], fric[7], fric[10], fric[11], float(gp),
                          diag.copy(), diag)
        terms = (float(bp), float(gp), bool(material_only), self.with_mass, True)
        element_matrix(self.tree, self.fams, self.maps, self.outs, diag, terms, self.kin, self.Mb, out, self.threads)

    def state(self) -> State:
        """The current iterate as a State at the step's end (element state carried over)."""
        q1, balls1, u1, udot1, _ = self.out_state
        st = self._st
        return State(self._t1, q1, balls1, u1, udot1, {k: v.copy() for k, v in st.elements.items()})

    def kinematics(self) -> Kinematics:
        """The kinematics of the iterate evaluated last (over this step's arrays: a later step has its own)."""
        x, R, Vs, As, S, Sd, P, V, zeta = self.kin
        return Kinematics(x, R, V, zeta, S, P, Vs, As, self.pattern, Sd if Sd.shape[0] else None)

    def evaluation(self) -> Evaluation:
        """The current iterate's Evaluation (what Assembler.evaluate gives at its state), with eq. (1)
        at its u̇ known (``residual_known``)."""
        kin = self.kinematics()
        family_evals = iterate_evaluations(self, kin)
        ev = self.asm.evaluation(kin, self.Mb, self.wfull, self._loads if self.model.loads else np.zeros_like(self._loads),
                                 self.tau, family_evals)
        ev.residual_known = (self.udot, self.udot.copy(), self.rfull)
        ev.motion = motion_evaluation(self.springs[5], self.model.n_u)
        if self.model.friction_u.size:  # its radial loads those of the iterate's residual (as Evaluation.residual leaves them)
            ev.friction = JointFriction(self.model, kin, self.pattern, self.out_state[2])
            ev.friction.load = self.work[8][10].copy()
        return ev
