"""Generalized-α time integration in Lie-group form (Chung & Hulbert 1993; Arnold & Brüls
2007), Newton iterations on the accelerations with the iteration matrix

    S = M̄ + γ' C̄ + β' K̄,   γ' = γ h (1-αf)/(1-αm),   β' = β h² (1-αf)/(1-αm)     (docs/equations_of_motion.md (G5))

factorized by CHOLMOD: one symbolic analysis per simulation; the numeric factor is reused over
Newton iterations and over time steps (modified Newton) while the iterations contract fast, and
refreshed at the current iterate when they do not (contraction rate above ``theta_refresh``, more
than ``reuse_iterations`` iterations on an old factor, divergence, or a new step size). A step's
result is the same either way (same residual tolerance). Update (Arnold & Brüls eq. 13–16):

    (1-αm) a_{n+1} + αm a_n = (1-αf) udot_{n+1} + αf udot_n
    u_{n+1} = u_n + h (1-γ) a_n + h γ a_{n+1}
    q_{n+1} = q_n ⊕ h [u_n + h (1/2-β) a_n + h β a_{n+1}]     (⊕: R expm(·) for balls)

A step whose Newton iteration fails is retried with half the step, down to dt / 2**max_halvings
(:meth:`GeneralizedAlpha.advance`); only a failure of that smallest step raises a SolverError,
naming the time, the step, the residual and the coordinates that diverge. A NaN or inf is named
by where it first appears (flexmb.solvers.nonfinite).
"""

from __future__ import annotations

import functools
import logging
import math
import time as _time
from dataclasses import dataclass

import numpy as np
from numba import njit

from flexmb.elements import FAMILIES
from flexmb.elements.family import StartContext, StepContext
from flexmb.engine import parallel
from flexmb.engine.assembly import Assembler, Evaluation, LazyEvaluation, motion_diag
from flexmb.engine.kinematics import Kinematics, forward_kinematics, mass_times_add
from flexmb.engine.linear_solver import choose
from flexmb.engine.tree_pairs import tree_joint_blocks
from flexmb.errors import NewtonFailure, SettingsError, SolverError
from flexmb.model import Model
from flexmb.motion_forces import sample_hold
from flexmb.settings import RHO_INF
from flexmb.solvers.element_families import stuck_error
from flexmb.solvers.element_step import LAZY, ElementStep
from flexmb.solvers.law_step import has_laws
from flexmb.solvers.nonfinite import evaluation_source, state_source
from flexmb.solvers.tree_step import OK, TreeStep, _absmax, _absmax_at, _update, corrected
from flexmb.state import State, _retract_balls

__all__ = ["GeneralizedAlpha", "alpha_parameters", "StepInfo"]

log = logging.getLogger("flexmb")


def alpha_parameters(rho_inf: float) -> tuple[float, float, float, float]:
    """(αm, αf, γ, β) of generalized-α for spectral radius ``rho_inf`` in [0, 1]."""
    if not 0.0 <= rho_inf <= 1.0:
        raise SettingsError(f"rho_inf = {rho_inf!r} must lie in [0, 1]")
    am = (2 * rho_inf - 1) / (rho_inf + 1)
    af = rho_inf / (rho_inf + 1)
    gamma = 0.5 + af - am
    beta = 0.25 * (gamma + 0.5) ** 2
    return am, af, gamma, beta


@dataclass
class StepInfo:
    """What one accepted step cost: Newton iterations, refactorizations, final residual."""

    iterations: int
    factorizations: int
    residual: float
    h: float


class GeneralizedAlpha:
    """Generalized-α integrator for one model (the model is never modified).

    ``rho_inf``: spectral radius at infinite frequency (1: no numerical dissipation);
    ``rtol``: Newton tolerance on the residual relative to the force scale;
    ``max_iter``: Newton iterations per attempt; ``max_halvings``: step halvings on failure;
    ``reuse_factor``: keep the factorized iteration matrix across steps while Newton contracts
    at least as fast as ``theta_refresh`` — True, False (refactorize at the first iteration of every
    step) or "auto" (the default: reuse where the iteration matrix has on average at least
    ``reuse_min_density`` nonzeros per column — long serial chains, whose M̄ is dense and costly
    to factorize; elsewhere, e.g. beams, whose stiff axial links make an old matrix a poor one
    after a few degrees of rotation, a fresh factor per step needs about half the iterations and
    is faster). The choice depends on the model only, so a run is reproducible bit for bit.
    ``rtol`` bounds both the residual (relative to the force scale) and, at a tenth of it, the
    last Newton correction relative to the size of the accelerations; an iterate taken without
    its evaluation (``lazy_accept`` below) meets the second bound by prediction only, from the
    contraction of the last two corrections, which can be optimistic where the first correction is
    one of them (on the 1000-element falling link: predicted 8e-11, measured 1.7e-7 against a
    bound of 3.6e-9, that is 4e-14 m in the positions; benchmarks/newton_element_length.py --large). ``linear_solver``: "auto"
    (the O(n) tree factorization with the velocity tangent, engine/tree_solver.py, for rigid trees;
    for other models of at most ``dense_max`` unknowns a dense Cholesky factor of the same matrix as
    CHOLMOD's, engine/dense_cholesky.py; for larger ones whose iteration matrix is banded, e.g. long
    flexible links, a band Cholesky factor, engine/band_cholesky.py, band_suits; CHOLMOD otherwise),
    "tree", "dense", "band" or "cholmod" (these three: M̄ and the element tangents only).
    ``position_tangent``: the tree solver also takes β' K̄, the derivative of the node masses' forces
    (inertia and weight) with respect to the coordinates (engine/tree_solver.py,
    position_tangent_times): Newton then converges quadratically on rigid trees (e.g. 1.9 instead of
    2.6 iterations per step on a falling 10-link chain at rtol 1e-10). True, False or "auto" (the
    default: on for trees of at most ``position_tangent_max`` unknowns, where an iteration saved
    outweighs the extra product and solve per iteration; measured: 5-10 % faster for the double
    pendulum and the 10-link chain, break-even at 30-50 links, 12-18 % slower at 100-1000 links).
    A plain rigid tree (flexmb/solvers/tree_step.py, TreeStep.applies) runs each step's Newton loop
    in one compiled call with the same result bit for bit (``tree_step``; None: the Python loop);
    its time is ``timings["compiled_step"]``. A model with beams on CHOLMOD (flexmb/solvers/element_step.py,
    ElementStep.applies) forms each Newton iterate and the iteration matrix's values in compiled calls,
    with the same result bit for bit (``element_step``; None: the Python iterates); on the dense or band factor,
    without factor reuse, it runs each step's whole Newton loop in one compiled call
    (element_newton_step; ``compiled_newton`` False: the Python loop around the compiled iterates).
    ``lazy_accept`` (class attribute, default True): on CHOLMOD without element state, an iterate
    whose next correction is predicted below tolerance (the contraction test of the next iteration,
    which needs no residual) is taken without evaluating it; its evaluation
    (flexmb.engine.assembly.LazyEvaluation) is computed only when used: the error estimate takes the
    kinematics of the iterate evaluated before it (flexmb.solvers.step_control, (E5); its own where
    the work evaluates the state anyway), the work integrals need nothing more where there are no
    drives, loads, friction or element damping, output rows all of it (with the compiled element step, a model whose work needs
    them evaluates every accepted iterate in the step instead: cheaper there). The state is the same bit for bit; the step's
    ``StepInfo.residual`` is then NaN (not evaluated), and a non-finite force at that state is found
    where it is used or at the next step's first evaluation.
    """

    lazy_accept = True
    theta_refresh = 0.25
    reuse_iterations = 5
    reuse_min_density = 150
    position_tangent_max = 32
    dense_max = 64
    compiled_newton = True

    def __init__(self, model: Model, rho_inf: float = RHO_INF, rtol: float = 1e-10, max_iter: int = 30, max_halvings: int = 10,
                 reuse_factor: bool | str = "auto", linear_solver: str = "auto",
                 position_tangent: bool | str = "auto") -> None:
        self.model = model
        if position_tangent not in (True, False, "auto"):
            raise SettingsError(f"position_tangent = {position_tangent!r} must be True, False or 'auto'")
        self.position_tangent = (model.free_u.size <= self.position_tangent_max if position_tangent == "auto"
                                 else bool(position_tangent))
        self.rho_inf = rho_inf
        self.am, self.af, self.gamma, self.beta = alpha_parameters(rho_inf)
        self.rtol = rtol
        self.atol_udot = 1e-12
        self.length_scale = max(1.0, float(np.abs(model.X0).max(initial=0.0)))
        self.max_iter = max_iter
        self.max_halvings = max_halvings
        self.asm = Assembler(model)
        self.free = model.free_u
        # a rigid tree (no element couples two nodes) is factorized by the O(n) tree recursion with the
        # nonsymmetric velocity tangent (engine/tree_solver.py); everything else densely if small, in band storage if
        # banded (engine/band_cholesky.py), by CHOLMOD otherwise (engine/linear_solver.py)
        self.chol, self.solver_reason = choose(model, self.asm, self.free, linear_solver, self.dense_max)
        kind = None if self.chol is None else self.chol.kind
        self._pchol = None  # a second factor of the kind of chol, for the cuts' projection matrix (_projection_factor)
        self.k_diag, self.c_diag = self.asm.stiffness_damping_diag(self.free)
        # a plain rigid tree takes its whole Newton loop in one compiled call (flexmb/solvers/tree_step.py)
        self.tree_step = (TreeStep(model, self.asm, self.chol) if kind == "tree"
                          and reuse_factor is not True and TreeStep.applies(model, self.asm) else None)
        # a model of beams (and bodies) on CHOLMOD forms its Newton iterates in compiled calls (element_step.py)
        cholmod = kind in ("dense", "band", "cholmod")  # S's values on the CSC pattern
        # the work integrals need the forces of every accepted state (flexmb.solvers.recorder, power): drives,
        # loads, element dampers or friction; the compiled iterates then evaluate it in the step (cheaper than later)
        self._work_needs_forces = bool(model.driven.size or model.loads or self.asm.dissipative or model.friction_u.size)
        self.element_step = (ElementStep(model, self.asm, self.chol.dst if kind == "band" else None)
                             if ElementStep.applies(model, self.asm, cholmod) else None)
        self.timings = {"assembly": 0.0, "factorization": 0.0, "solve": 0.0, "compiled_step": 0.0}
        self.modified_newton = 0
        self.substeps = 0  # steps taken by advance(), halved ones counted one by one
        self.min_step = math.inf
        if reuse_factor not in (True, False, "auto"):
            raise SettingsError(f"reuse_factor = {reuse_factor!r} must be True, False or 'auto'")
        self.reuse_factor = reuse_factor
        self._factor_key: tuple[float, float] | None = None  # (γ', β') of the current factor
        self._t = 0.0
        self._scalar = ~model.u_is_ball  # the scalar coordinates' velocity indices (State.retract)
        self._ball_u = np.flatnonzero(model.u_is_ball)
        self._eps_pos = 16 * np.finfo(float).eps * self.length_scale
        # the node motion per unit of each unknown: 1 for a translation, the model's size for a rotation [m]
        self._lever = np.where(model.rotation_u[self.free], model.size, 1.0)
        self.start_notes: dict = {}  # what the families' start reported (ElementFamily.start; the run's meta["start"])
        # set by simulate: the step history (flexmb.solvers.recorder.StepLog) advance() adds every attempt
        # to, and the local error estimate it records (flexmb.solvers.step_control.ErrorEstimate)
        self.log = None
        self.estimator = None

    # ------------------------------------------------------------------ helpers
    def _evaluate(self, st: State) -> Evaluation:
        t0 = _time.perf_counter()
        ev = self.asm.evaluate(st)
        self.timings["assembly"] += _time.perf_counter() - t0
        return ev

    def _reusing(self) -> bool:
        """Whether to keep the factor over steps (see ``reuse_factor``)."""
        if self.reuse_factor != "auto":
            return bool(self.reuse_factor)
        return self.chol is not None and self.chol.pattern is not None and \
            self.chol.pattern.nnz >= self.reuse_min_density * self.free.size

    def describe_solver(self, fixed_steps: bool | None = None, callback: bool | None = None) -> str:
        """What solves the time steps' linear systems, for ``flexmb info``: the factor
        (engine/linear_solver.py) and why it was chosen, how each step's Newton loop runs (in one
        compiled call, its iterates compiled, or in Python), on how many threads the beams' passes
        run, and whether a run's steps go through a whole-run call (:meth:`run_path`, for a run with
        ``fixed_steps`` and a ``callback``, or both unknown: None); nothing when every coordinate is driven."""
        if self.chol is None:
            return "none (every coordinate is driven: inverse dynamics, no unknowns)"
        n = self.free.size
        run = "; " + self.run_path(fixed_steps, callback)
        if self.chol.kind == "tree":
            how = ("each step's Newton loop in one compiled call (flexmb/solvers/tree_step.py)" + (
                   "; joint forces of the motion compiled with numba (flexmb/solvers/motion_step.py)"
                   if self.model.mforce_u.size else "")
                   if self.tree_step is not None
                   else f"Newton in Python ({TreeStep.refusal(self.model, self.asm) or 'reuse_factor=True'})")
            pairs = "; spring-dampers across single joints in its pivot blocks (engine/tree_pairs.py)" * bool(self.asm.tree_pairs)
            return f"{self.chol.describe(n)}, position tangent {'on' if self.position_tangent else 'off'}{pairs}; {how}{run}"
        how = "; " + self.newton_path()
        if self.element_step is not None and self.model.mforce_u.size:
            how += "; joint forces of the motion compiled with numba (flexmb/solvers/motion_step.py)"
        if self.element_step is not None and has_laws(self.model):
            how += "; spring-damper force laws compiled with numba (flexmb/solvers/law_step.py)"
        beams = [d.n for f, d, _ in self.asm.families if f is FAMILIES["beam"]]
        if beams:
            threads = parallel.threads_for(beams[0])
            how += (f"; the {beams[0]} beam elements' passes on {threads} thread(s) (numba, NUMBA_NUM_THREADS; several "
                    f"from {parallel.PARALLEL_MIN} elements on; threading layer {parallel.threading_layer()}; "
                    "flexmb/engine/parallel.py)")
        if self.chol.kind == "dense":
            return f"dense Cholesky (engine/dense_cholesky.py: {self.solver_reason}), {n} unknowns{how}{run}"
        return f"{self.chol.describe(n)}{how}{run}"

    def run_path(self, fixed_steps: bool | None = None, callback: bool | None = None) -> str:
        """Whether a run's steps between two output rows go through one compiled call (flexmb/solvers/tree_run.py
        for a rigid tree, flexmb/solvers/element_run.py on a matrix factor: "whole runs compiled between output
        rows") or one by one from Python, and why (``flexmb info``): for fixed steps (``fixed_steps`` True;
        error-controlled steps, False, always go one by one) and with a ``callback`` or not; None: not known,
        the conditions are named."""
        # the run modules import this one (their calls take a GeneralizedAlpha): imported where asked
        from flexmb.solvers.element_run import ElementRun
        from flexmb.solvers.tree_run import TreeRun

        if self.chol.kind == "tree":
            module, why = "tree_run", ("" if TreeRun.applies(self, None) else "each step's Newton loop is not one compiled call"
                                       if self.tree_step is None else "the work and samples of joint forces of the motion "
                                       "are taken in Python after each step")
        else:
            module, why = "element_run", ElementRun.refusal(self, None)
        if why:
            return f"steps one by one from Python (no whole-run call: {why})"
        whole = (f"whole runs compiled between output rows: all steps between two output rows in one call "
                 f"(flexmb/solvers/{module}.py)")
        if fixed_steps is False:
            return "steps one by one from Python (error-controlled steps: the whole-run call takes fixed steps only)"
        if callback:
            return "steps one by one from Python (the run's callback sees every step's state)"
        if fixed_steps and callback is False:
            return whole
        return f"with fixed steps and no callback, {whole}; error-controlled steps or a callback one by one"

    def newton_path(self) -> str:
        """How each step's Newton loop runs on a matrix factor (dense, band, CHOLMOD), and, where it
        runs in Python, the family or setting that keeps it there (``flexmb info``)."""
        if self.element_step is None:
            reason = ElementStep.refusal(self.model, self.asm, True)
            return f"Newton loop and iterates in Python ({reason})"
        if self.compiled_newton and self.chol.kind in ("dense", "band") and not self._reusing():
            return ("each step's whole Newton loop in one compiled call (flexmb/solvers/element_step.py, "
                    "element_newton_step)")
        why = ("the factor is kept over steps (reuse_factor)" if self._reusing() else
               "CHOLMOD is called from Python" if self.chol.kind == "cholmod" else "compiled_newton is off")
        return ("each Newton iterate and the iteration matrix's values in compiled calls, the loop around them in "
                f"Python ({why}; flexmb/solvers/element_step.py)")

    def solver_stats(self) -> dict[str, float]:
        """Statistics of the linear solver for ``result.stats``: ``tree_solver`` 1.0 when the O(n)
        tree factorization runs (engine/tree_solver.py), ``dense_solver`` 1.0 for the dense factor
        (engine/dense_cholesky.py), ``band_solver`` 1.0 for the band factor (engine/band_cholesky.py);
        all 0.0 for CHOLMOD."""
        kind = None if self.chol is None else self.chol.kind
        return {"tree_solver": float(kind == "tree"), "dense_solver": float(kind == "dense"),
                "band_solver": float(kind == "band")}

    def _factorize(self, ev: Evaluation | None, gp: float, bp: float, st: State | None = None) -> None:
        """Factorize the iteration matrix at ``ev`` (the evaluation of ``st``: the tree solver's
        position tangent needs its u and u̇; without ``st`` it is left out; ``ev`` None: at the
        current iterate of the compiled element step). Where the geometric stiffness makes it
        indefinite, it is factorized without (modified Newton, counted)."""
        t0 = _time.perf_counter()
        source = _Iterate(self, ev, gp, bp, st)
        self.chol.load(source)
        self.timings["assembly"] += _time.perf_counter() - t0
        t0 = _time.perf_counter()
        try:
            self.chol.factorize()
        except SolverError:
            # compressive geometric stiffness made S indefinite: modified Newton without it
            self.chol.load(source, material_only=True)
            try:
                self.chol.factorize()
            except SolverError as exc:
                raise self._not_positive(exc, "the iteration matrix") from exc
            self.modified_newton += 1
            if self.modified_newton == 1:
                log.warning("t = %.6g: iteration matrix not positive definite; geometric stiffness dropped "
                            "(modified Newton); counted in stats['modified_newton_steps']", self._t)
        self.timings["factorization"] += _time.perf_counter() - t0
        self._factor_key = (gp, bp)

    def _not_positive(self, exc: SolverError, what: str) -> SolverError:
        """The SolverError of a factorization that met a pivot that is not positive, naming the coordinate."""
        return SolverError(f"t = {self._t:.6g}: {what} is not positive definite at coordinate "
                           f"{self.chol.failed_pivot(exc)}: no mass or inertia moves with it (a massless node, or a body "
                           "without inertia about that axis); give the bodies it moves mass and inertia.", self._t)

    def _projection_factor(self, ev: Evaluation, bp: float):
        """The factor of M̄ + β' K̄_c at ``ev`` (Assembler.iteration_matrix(projection=True): the metric of the
        cuts' mass-orthogonal projections), in a second solver of the Newton factor's kind (made once)."""
        t0 = _time.perf_counter()
        if self._pchol is None:
            self._pchol = self.chol.twin()
        self._pchol.load(_Projection(self, ev, bp))
        self.timings["assembly"] += _time.perf_counter() - t0
        t0 = _time.perf_counter()
        try:
            self._pchol.factorize()
        except SolverError as exc:
            raise self._not_positive(exc, "the projection matrix of the rigid cuts") from exc
        self.timings["factorization"] += _time.perf_counter() - t0
        return self._pchol

    def _solve(self, r: np.ndarray) -> np.ndarray:
        t0 = _time.perf_counter()
        x = self.chol.solve(r)
        self.timings["solve"] += _time.perf_counter() - t0
        return x

    def _trial(self, st: State, hdq: np.ndarray, u1: np.ndarray, udot1: np.ndarray, t1: float) -> State:
        """The state st ⊕ hdq with velocities u1 and accelerations udot1 at t1 (State.retract without
        its copies of arrays replaced at once; the element state is the caller's)."""
        m = self.model
        if m.n_ball:
            balls = np.empty_like(st.balls)
            _retract_balls(st.balls, np.ascontiguousarray(hdq[self._ball_u]).reshape(-1, 3), balls)
            q = st.q + hdq[self._scalar]
        else:
            balls = st.balls.copy()
            q = st.q + hdq
        return State(t1, q, balls, u1, udot1.copy(), {k: v.copy() for k, v in st.elements.items()} if st.elements else {})

    @staticmethod
    def _scale(ev: Evaluation, udot: np.ndarray) -> float:
        tw = ev.twists(udot)
        mw = np.empty_like(tw)
        mass_times_add(ev.Mb, tw, np.zeros_like(tw), mw)
        return float(_absmax(ev.project(mw)) + _absmax(ev.project(ev.bias)) + _absmax(ev.tau)) + 1e-300

    # ------------------------------------------------------------------ API
    def initial_acceleration(self, st: State) -> tuple[State, Evaluation]:
        """Consistent accelerations at the initial state: M̄ udot = Q (free coordinates)."""
        st = st.copy()
        st.apply_drives(self.model, st.t)
        ev = self._evaluate(st)
        st.udot[self.free] = 0.0
        source = evaluation_source(self.model, st, ev)
        if source is not None:
            raise _nonfinite(st.t, source, in_step=False)
        if self.free.size:
            self._t = st.t
            if self.asm.with_state:  # families that correct the start (rigid cuts: closure, velocities, multipliers)
                st = self.asm.start(st, StartContext(self.free, self._evaluate, self._mass_solver, self.start_notes))
                ev = self._evaluate(st)
            r = ev.residual(st.udot)[self.free]
            self._factorize(ev, 0.0, 0.0)
            st.udot[self.free] = -self._solve(r)
            self._factor_key = None  # the mass matrix alone is no iteration matrix
        _check_finite(st, self.model, in_step=False)
        return st, ev

    def between(self, st0: State, st1: State, state: State) -> State:
        """A state interpolated inside the step from ``st0`` to ``st1`` (dense output, flexmb.solvers.
        step_control.interpolate) with the families' internal state between and the state corrected onto
        their constraints (Assembler.between: rigid cuts closed, docs/rigid_cut.md §6); unchanged without
        such families."""
        if not self.asm.with_state or not self.free.size:
            return state
        s = (state.t - st0.t) / (st1.t - st0.t)
        return self.asm.between(st0, st1, state, s, StartContext(self.free, self._evaluate, self._mass_solver))

    def _kinematics(self, st: State) -> Kinematics:
        """The kinematics of ``st`` alone (one compiled forward pass; engine/kinematics.py)."""
        t0 = _time.perf_counter()
        kin = forward_kinematics(self.model, st, self.asm.pattern)
        self.timings["assembly"] += _time.perf_counter() - t0
        return kin

    def _mass_solver(self, ev: Evaluation):
        """r -> M̄⁻¹ r on the free coordinates at ``ev`` (for ElementFamily.start)."""
        self._factorize(ev, 0.0, 0.0)
        self._factor_key = None
        return self._solve

    def step(self, st: State, a: np.ndarray, h: float, t1: float | None = None
             ) -> tuple[State, np.ndarray, Evaluation, StepInfo]:
        """One step of size h from (st, a) to the time ``t1`` (default st.t + h; given, a step
        ends exactly there, e.g. at t_end): returns the new state, its pseudo-acceleration, its
        evaluation and step info. Raises SolverError if Newton fails (no halving here)."""
        m = self.model
        am, af, g, b = self.am, self.af, self.gamma, self.beta
        if self.tree_step is not None:
            done = self._tree_step(st, a, h, st.t + h if t1 is None else t1)
            if done is not None:
                return done
            # not converged, not finite or not positive definite: the Python step below repeats it and
            # raises the SolverError that names where (same arithmetic)
        c_a = (1 - af) / (1 - am)
        gp = g * h * c_a
        bp = b * h * h * c_a
        udot1 = st.udot.copy()
        udot_start = udot1.copy()
        free = self.free
        t1 = st.t + h if t1 is None else t1
        r_hist: list[float] = []
        nfac = 0
        dxs: list[float] = []  # correction sizes since the last factorization
        dxws: list[float] = []  # their node motions [m/s²] (rotations times the model's size), with a noise floor
        fresh = False  # factor computed during this step
        restarted = False
        elements = st.elements  # element families' internal state, carried over the iterations
        if self.asm.with_state:  # e.g. a rigid cut's penalty for this step size (ElementFamily.begin_step)
            elements = self.asm.begin_step(st, StepContext(h, gp, bp, free))
        elements0 = elements
        n_u = st.u.size
        eps_pos = self._eps_pos
        # the converged iterate is taken without evaluating it where the prediction says so (CHOLMOD path,
        # no element state: GeneralizedAlpha.lazy_accept)
        lazy = (self.lazy_accept and not self.asm.with_state and (self.chol is None or self.chol.kind != "tree")
                and not (self.element_step is not None and self._work_needs_forces))
        predicted = False  # the last correction predicts the next one below tolerance (_predicts_convergence)
        es = self.element_step  # compiled iterates (element_step.py): State and Evaluation built when used
        noise = 0.0  # the iterate's round-off floor of the corrections (FamilyEvaluation.position_noise)
        if es is not None:
            es.begin(st, a, h, t1, (am, af, g, b, h), elements)
            if self.compiled_newton and self.chol.kind in ("dense", "band") and not self._reusing():
                done = self._element_newton(es, gp, bp, lazy, h, st, a)
                if done is not None:
                    return done
                # not converged, not finite or not positive definite: the loop below repeats the step and
                # raises the SolverError that names where, or drops the geometric stiffness (same arithmetic)
                es.begin(st, a, h, t1, (am, af, g, b, h), elements)
        for it in range(self.max_iter + 1):
            settled = True
            if es is not None:
                t0 = _time.perf_counter()
                rn, es_scale = es.iterate(udot1, not (lazy and predicted), it == 0)
                self.timings["assembly"] += _time.perf_counter() - t0
                a1, udot1 = es.a1, es.udot
                if lazy and predicted:  # as below
                    st1 = es.state()
                    return st1, a1, LazyEvaluation(self.asm, st1, es.kinematics()), StepInfo(it, nfac, math.nan, h)
                st1 = ev = None
                r_all, r = es.rfull, es.r
                settled, changed, noise, stuck = es.cut_flags  # the rigid cuts' update at this iterate (newton_update)
                if stuck >= 0:
                    raise stuck_error(es, t1)  # the rigid cut's or actuator's message (element_families.py)
                if changed:
                    self._factor_key = None
                elements = es.elements() if self.asm.with_state else elements
                if not math.isfinite(rn):
                    st1, ev = es.state(), es.evaluation()
            else:
                # the update formulas of the module docstring, one compiled pass (same arithmetic as numpy)
                a1, hdq, u1 = np.empty(n_u), np.empty(n_u), np.empty(n_u)
                _update(st.udot, udot1, a, st.u, am, af, g, b, h, a1, hdq, u1)
                st1 = self._trial(st, hdq, u1, udot1, t1)
                if self.asm.with_state:
                    st1.elements = elements
                st1.apply_drives(m, t1)
                udot1 = st1.udot
                if lazy and predicted:  # taken without its evaluation, computed when used (LazyEvaluation);
                    # the error estimate takes the last evaluated iterate's kinematics unless the work will
                    # evaluate this state anyway (as the compiled iterates do in the step: the same estimate)
                    near = None if self._work_needs_forces else ev.kin
                    return st1, a1, LazyEvaluation(self.asm, st1, near), StepInfo(it, nfac, math.nan, h)
                ev = self._evaluate(st1)
                noise = ev.position_noise
                if self.asm.with_state:  # e.g. augmented-Lagrangian multipliers (flexmb.elements, newton_update)
                    elements, settled, changed = self.asm.newton_update(ev, st1)
                    if changed:  # a family's blocks changed: refactorize
                        self._factor_key = None
                if not free.size:
                    st1, a1, ev = self._accept(st1, ev, elements, h, gp, bp, st, a, a1)
                    return st1, a1, ev, StepInfo(it, nfac, 0.0, h)
                r_all = ev.residual(udot1)
                r = r_all[free]
                rn = _absmax(r)
            if not math.isfinite(rn):  # max propagates NaN and inf
                source = evaluation_source(m, st1, ev, udot1) or f"residual of {_names(m, free[~np.isfinite(r)])}"
                raise _nonfinite(t1, source)
            r_hist.append(rn)
            if it == 0:
                scale = es_scale if es is not None else self._scale(ev, udot1)
                # corrections this small change the accelerations by < rtol/10 of their size (and the
                # velocities by h times that): with the default rtol, below round-off of stiff forces
                udot_max, u_max = _absmax_at(udot1, free), _absmax_at(st.u, free)
                dx_tol = self.atol_udot + 0.1 * self.rtol * (udot_max + u_max / h)
                # or: the correction moves velocities only at round-off level of this scale (_predicts_convergence)
                vscale = u_max + h * udot_max + 1e-3 * self.length_scale / h
            if (rn <= self.rtol * scale or predicted) and settled:
                if es is not None:
                    st1, ev = es.state(), es.evaluation()  # eq. (1) at its u̇ known
                else:
                    ev.residual_known = (udot1, udot1.copy(), r_all)
                st1, a1, ev = self._accept(st1, ev, elements, h, gp, bp, st, a, a1)
                return st1, a1, ev, StepInfo(it, nfac, rn, h)
            diverging = len(r_hist) > 3 and rn > 1e3 * min(r_hist)
            if not fresh and (diverging or len(dxs) >= self.reuse_iterations) and not restarted:
                # an old factor led the iteration astray or too slowly: restart with a fresh one
                restarted = True
                udot1 = udot_start.copy()
                elements = elements0
                if es is not None:
                    es.restart()
                self._factor_key = None
                r_hist.clear()
                dxs.clear()
                dxws.clear()
                predicted = False
                continue
            if it == self.max_iter or diverging:
                worst = free[np.argsort(-np.abs(r))[:3]]
                if ev is None and es is not None and self.asm.with_state:
                    ev = es.evaluation()
                notes = functools.partial(self.asm.newton_failure, ev) if ev is not None and self.asm.with_state else list
                raise NewtonFailure(
                    f"t = {t1:.6g}: Newton did not converge in {it} iterations (residual {rn:.3e}, "
                    f"history {', '.join(f'{x:.1e}' for x in r_hist[-4:])}); largest residuals in "
                    f"{_names(m, worst)}", t1, notes)
            theta = dxs[-1] / dxs[-2] if len(dxs) > 1 and dxs[-2] > 0 else np.inf  # contraction rate
            slow = not fresh and theta != np.inf and theta > self.theta_refresh
            if self._factor_key != (gp, bp) or (not fresh and not self._reusing()) or slow:
                self._t = t1
                self._factorize(ev, gp, bp, st1)
                nfac += 1
                fresh = True
                dxs.clear()  # the contraction rate restarts with the new factor
                dxws.clear()
            dx = self._solve(r)
            udot1, dx_max = corrected(udot1, free, dx)
            dxs.append(dx_max)
            predicted = _predicts_convergence(dxs, dx_tol, bp, gp, eps_pos, vscale)
            if noise > 0.0:  # a family's round-off sets a floor (FamilyEvaluation.position_noise)
                dxws.append(float(np.abs(dx * self._lever).max(initial=0.0)))
                predicted = predicted or _at_noise(dxws, bp, noise)
        raise AssertionError("unreachable")

    def _element_newton(self, es: ElementStep, gp: float, bp: float, lazy: bool, h: float, st: State, a: np.ndarray
                        ) -> tuple[State, np.ndarray, Evaluation, StepInfo] | None:
        """The begun step's Newton loop in one compiled call (ElementStep.newton on the dense or band factor),
        or None if it did not succeed (the factor is then not kept, its factorizations not counted, as
        for the compiled tree step: the Python loop repeats the step)."""
        t0 = _time.perf_counter()
        status, it, nfac, rn = es.newton(self.chol, gp, bp, gp * self.c_diag + bp * self.k_diag,
                                         (self.rtol, self.atol_udot, self._eps_pos, self.length_scale, self.max_iter,
                                          self._lever), lazy)
        self.timings["compiled_step"] += _time.perf_counter() - t0
        if status not in (OK, LAZY):  # the Python loop repeats the step and counts its factorizations
            self._factor_key = None
            return None
        if nfac:
            self.chol.n_factorize += nfac
            self._factor_key = (gp, bp)
        if es.cut_flags[1]:  # the accepted iterate raised the cuts' penalties: the factor is not S's (as the Python loop)
            self._factor_key = None
        st1 = es.state()
        ev = LazyEvaluation(self.asm, st1, es.kinematics()) if status == LAZY else es.evaluation()
        a1 = es.a1
        if self.asm.with_state:  # the rigid cuts' end of step (projections), as the Python loop's _accept
            st1, a1, ev = self._accept(st1, ev, es.elements(), h, gp, bp, st, a, a1)
        return st1, a1, ev, StepInfo(it, nfac, rn, h)

    def _tree_step(self, st: State, a: np.ndarray, h: float, t1: float
                   ) -> tuple[State, np.ndarray, Evaluation, StepInfo] | None:
        """The step in one compiled call (flexmb/solvers/tree_step.py), or None if it did not succeed."""
        t0 = _time.perf_counter()
        self._t = t1
        status, it, nfac, rn, st1, a1, ev = self.tree_step.step(st, a, h, t1, self.tree_params(h))
        self.timings["compiled_step"] += _time.perf_counter() - t0
        if status != OK:
            return None
        self._count_tree_factors(nfac, h)
        return st1, a1, ev, StepInfo(it, nfac, rn, h)

    def tree_params(self, h: float) -> tuple:
        """The settings of a compiled tree step of size h (flexmb/solvers/tree_step.py, ``params``)."""
        return (self.am, self.af, self.gamma, self.beta, float(h), float(self.rtol), float(self.atol_udot), self._eps_pos,
                self.length_scale, int(self.max_iter), bool(self.position_tangent))

    def _count_tree_factors(self, nfac: int, h: float) -> None:
        """Count the factorizations of a compiled tree step of size h (the factor is then that step's)."""
        if nfac:
            self.chol.n_factorize += nfac
            c_a = (1 - self.af) / (1 - self.am)
            self._factor_key = (self.gamma * h * c_a, self.beta * h * h * c_a)

    def note_tree_steps(self, h: np.ndarray, factorizations: np.ndarray) -> None:
        """Count the steps of sizes h with their factorizations taken by flexmb.solvers.tree_run, as
        advance() counts its sub-steps."""
        refactored = np.flatnonzero(factorizations)
        if refactored.size:
            self._count_tree_factors(int(factorizations.sum()), float(h[refactored[-1]]))
        self.min_step = min(self.min_step, float(h.min()))
        self.substeps += h.size

    def note_element_steps(self, h: np.ndarray, factorizations: np.ndarray) -> None:
        """Count the steps of sizes h with their factorizations taken by flexmb.solvers.element_run, as
        advance() and _element_newton count them (the factor is the last refactored step's)."""
        refactored = np.flatnonzero(factorizations)
        if refactored.size:
            self.chol.n_factorize += int(factorizations.sum())
            hk = float(h[refactored[-1]])
            c_a = (1 - self.af) / (1 - self.am)
            self._factor_key = (self.gamma * hk * c_a, self.beta * hk * hk * c_a)
        self.min_step = min(self.min_step, float(h.min()))
        self.substeps += h.size

    def _accept(self, st1: State, ev: Evaluation, elements: dict, h: float, gp: float, bp: float, st: State,
                a: np.ndarray, a1: np.ndarray) -> tuple[State, np.ndarray, Evaluation]:
        """The converged state with the element families' internal state, after their end-of-step
        corrections (ElementFamily.end_step; nothing to do for stateless families), its
        pseudo-acceleration (from the corrected udot) and its evaluation."""
        if not self.asm.with_state:
            return st1, a1, ev
        st1.elements = elements
        free = self.free
        # the drive forces of the step are those of its converged iterate: the projections below correct velocities
        # and accelerations by the cuts' impulses, which the drives do not supply (docs/rigid_cut.md (AL10))
        drive = ev.residual(st1.udot)[self.model.driven] if self.model.driven.size else None

        def solve(r: np.ndarray) -> np.ndarray:
            if self._factor_key != (gp, bp):
                self._factorize(ev, gp, bp, st1)
            return self._solve(r)

        projection = []  # the projection matrix's factor, made when first asked for (once per step)

        def solve_projection(r: np.ndarray) -> np.ndarray:
            if not projection:
                projection.append(self._projection_factor(ev, bp))
            t0 = _time.perf_counter()
            x = projection[0].solve(r)
            self.timings["solve"] += _time.perf_counter() - t0
            return x

        self.asm.end_step(ev, st1, StepContext(h, gp, bp, free, solve, solve_projection, ev.project, ev.twists,
                                               self._evaluate, self._kinematics))
        a1 = (self.af * st.udot + (1 - self.af) * st1.udot - self.am * a) / (1 - self.am)
        ev1 = self._evaluate(st1)
        ev1.drive_forces = drive
        return st1, a1, ev1

    def advance(self, st: State, a: np.ndarray, h: float, t_end: float | None = None
                ) -> tuple[State, np.ndarray, Evaluation, StepInfo]:
        """Advance by h to the time ``t_end`` (default st.t + h). A failed attempt is retried with
        half the step, down to h / 2**max_halvings; after a success the step doubles again where
        the sub-steps stay on the grid of the larger one (binary subdivision of [t, t_end]: each
        sub-step ends on that grid, the last exactly at t_end, and each level's halvings are
        counted apart, so growth never uses up the budget). A SolverError is raised only when a
        step of the smallest size fails; its message names that step and where it started.
        ``self.substeps`` counts the sub-steps taken, ``self.min_step`` the smallest; with
        ``self.log`` set every attempt is added to it (with ``self.estimator``'s error estimate
        of each sub-step taken; it changes nothing of the step)."""
        t0 = st.t
        given = t_end is not None
        t_end = t0 + h if t_end is None else t_end
        level = k = 0  # sub-step size h / 2**level; k of them done
        total_it = total_fac = 0
        while True:
            hl = math.ldexp(h, -level)
            t_try = t_end if k + 1 == 1 << level else t0 + (k + 1) * hl
            h_try = min(hl, t_try - st.t)
            try:
                # an unhalved step ends at st.t + h (as always: results bit for bit); sub-steps on their grid
                st1, a1, ev, info = self.step(st, a, h_try, t_try if level or given else None)
                _check_finite(st1, self.model)
            except SolverError as exc:
                if self.log is not None:
                    self.log.add(t_try, h_try, -1, math.nan, 2)
                if level >= self.max_halvings:
                    raise SolverError(
                        f"{exc} — the step from t = {st.t:.6g} failed down to h = {h_try:.3e} "
                        f"(dt = {h:.3e} halved {level} times, the smallest step tried); reduce dt or "
                        "raise max_halvings, or check the model at that time.", exc.time) from exc
                level += 1
                k *= 2
                continue
            if self.log is not None:
                err = math.nan
                if self.estimator is not None:
                    err = self.estimator(ev, a, a1, h_try)
                    self.estimator.accept(ev)
                self.log.add(st1.t, h_try, info.iterations, err, 0)
            total_it += info.iterations
            total_fac += info.factorizations
            self.substeps += 1
            self.min_step = min(self.min_step, h_try)
            sample_hold(self.model, st1)  # the sampled joint forces due at its end (docs/motion_forces.md (M6))
            st, a = st1, a1
            k += 1
            if k == 1 << level:
                st.t = t_end
                return st, a, ev, StepInfo(total_it, total_fac, info.residual, h)
            if level and k % 2 == 0:  # back on the grid of the doubled step: try it
                level -= 1
                k //= 2


class _Iterate:
    """The iteration matrix of a step's iterate as a solver loads it (engine/linear_solver.py,
    MatrixSource): S's values from the assembly at ``ev`` (or, ``ev`` None, from the compiled element
    step's current iterate), or the tree factorization's terms."""

    def __init__(self, integ: GeneralizedAlpha, ev: Evaluation | None, gp: float, bp: float, st: State | None) -> None:
        self.integ, self.ev, self.gp, self.bp, self.st = integ, ev, gp, bp, st
        self.diag = gp * integ.c_diag + bp * integ.k_diag

    def fill(self, values: np.ndarray, material_only: bool) -> None:
        i = self.integ
        if self.ev is None:
            i.element_step.matrix(self.gp, self.bp, self.diag, material_only, values)
        else:
            i.asm.iteration_matrix(self.ev, i.free, self.gp, self.bp, self.diag, material_only=material_only, out=values)

    def tree_terms(self) -> tuple:
        i, ev, st = self.integ, self.ev, self.st
        diag = self.diag if ev.friction is None else self.diag + self.gp * ev.friction.damping_diag(i.free)
        if ev.motion is not None:
            diag = diag + motion_diag(ev.motion, i.free, self.gp, self.bp)
        position = None
        if i.position_tangent and st is not None and self.bp > 0.0:
            position = (self.bp, st.u, st.udot, ev.node_wrenches(st.udot), i.model.gravity)
        return ev.kin, ev.Mb, self.gp, diag, position, tree_joint_blocks(i.asm, ev, i.chol, self.gp, self.bp)


class _Projection:
    """M̄ + β' K̄_c at ``ev``, the metric of the rigid cuts' projections (Assembler.iteration_matrix
    with projection=True), as a solver loads it (MatrixSource)."""

    def __init__(self, integ: GeneralizedAlpha, ev: Evaluation, bp: float) -> None:
        self.integ, self.ev, self.bp = integ, ev, bp

    def fill(self, values: np.ndarray, material_only: bool) -> None:
        i = self.integ
        i.asm.iteration_matrix(self.ev, i.free, 0.0, self.bp, np.zeros(i.free.size), material_only=material_only, out=values,
                               projection=True)

    def tree_terms(self) -> tuple:
        return self.ev.kin, self.ev.Mb, 0.0, np.zeros(self.integ.free.size), None


def _nonfinite(t: float, source: str, in_step: bool = True) -> SolverError:
    """The SolverError for a NaN/inf first found in ``source`` (flexmb.solvers.nonfinite)."""
    advice = "check the inputs there (masses, centres of mass, stiffness, loads, drives)"
    return SolverError(f"t = {t:.6g}: non-finite value (NaN or inf), first in the {source}; "
                       + (f"reduce the time step or {advice}." if in_step else f"{advice}."), t)


def _predicts_convergence(dxs: list[float], dx_tol: float, bp: float, gp: float, eps_pos: float, vscale: float) -> bool:
    """Whether the corrections so far (their sizes ``dxs`` since the last factorization) predict the
    next one below tolerance, so the current iterate is converged without evaluating its residual:
    the next correction estimated from the contraction rate θ (Hairer & Wanner IV.8; with an old
    factor Newton converges linearly and the same estimate holds) is at most ``dx_tol``, or it moves
    positions (β' times it) and velocities (γ' times it) only at round-off level (stiff elements make
    the residual itself noisy at about eps × stiffness × size)."""
    theta = dxs[-1] / dxs[-2] if len(dxs) > 1 and dxs[-2] > 0 else np.inf
    nxt = theta / (1 - theta) * dxs[-1] if theta < 0.5 else (dxs[-1] if dxs else np.inf)
    return nxt <= dx_tol or (bp * nxt <= eps_pos and gp * nxt <= 1e-11 * vscale)


def _at_noise(dxws: list[float], bp: float, noise: float) -> bool:
    """Whether Newton has reached the round-off floor of a family (FamilyEvaluation.position_noise,
    eq. (N1) of docs/rigid_cut.md): three corrections since the last factorization, the last no
    smaller than a tenth of the one two before (they no longer contract), and it moves the nodes
    (β' times its node acceleration ``dxws[-1]``) by at most ``noise`` [m]."""
    return len(dxws) >= 3 and dxws[-1] >= 0.1 * dxws[-3] and bp * dxws[-1] <= noise


def _names(model: Model, idx: np.ndarray | int) -> list[str]:
    return [model.coordinate_names[i] for i in np.atleast_1d(idx)]


@njit(cache=True)
def _all_finite(q, u, udot, balls) -> bool:
    for arr in (q, u, udot):
        for v in arr:
            if not np.isfinite(v):
                return False
    for v in balls.flat:
        if not np.isfinite(v):
            return False
    return True


def _check_finite(st: State, model: Model, in_step: bool = True) -> None:
    if _all_finite(st.q, st.u, st.udot, st.balls):
        return  # the named search (flexmb.solvers.nonfinite) only when something is not finite
    source = state_source(model, st)
    if source is not None:
        raise _nonfinite(st.t, source, in_step)
