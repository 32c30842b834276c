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

One step (:meth:`GeneralizedAlpha.step`) is written once as the algorithm, in
flexmb/solvers/newton_loop.py (predictor, iterates, correction, acceptance: docs/equations_of_motion.md
(G5)–(G11)); a compiled back-end chosen once per integrator (flexmb/solvers/step_backends.py:
the tree step, the element Newton step) may take the whole step with the same result bit for bit,
the Python loop being its reference.

A step whose Newton iteration fails is retried with half the step, down to dt / 2**max_halvings
(:meth:`GeneralizedAlpha.advance`); only a failure of that smallest step raises a SolverError,
naming the time, the step, the residual and the coordinates that diverge. A NaN or inf is named
by where it first appears (flexmb.solvers.nonfinite).
"""

from __future__ import annotations

import logging
import math
import time as _time

import numpy as np

from flexmb.elements.family import StartContext
from flexmb.engine.assembly import Assembler, Evaluation, motion_diag
from flexmb.engine.kinematics import Kinematics, forward_kinematics, mass_times_add
from flexmb.engine.linear_solver import choose
from flexmb.errors import SettingsError, SolverError
from flexmb.model import Model
from flexmb.motion_forces import sample_hold
from flexmb.settings import RHO_INF
from flexmb.solvers import step_backends
from flexmb.solvers.element_step import ElementStep
from flexmb.solvers.newton_loop import StepInfo, StepResult, begin_step, newton_step
from flexmb.solvers.nonfinite import check_finite, evaluation_source, nonfinite_error
from flexmb.solvers.step_backends import StepBackend
from flexmb.solvers.tree_step import TreeStep, _absmax
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

    #: the evaluation after the last sub-step's samples (M16) where the accelerations jumped, else None: the
    #: output row at that state takes it (the new held values with the new accelerations)
    sample_evaluation: Evaluation | None = None

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
        self._backend_key: tuple | None = None  # what the back-end was chosen from (:attr:`backend`)
        self._backend: StepBackend | None = None
        self._step_path = ""

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

    @property
    def backend(self) -> StepBackend | None:
        """The compiled back-end of the steps (flexmb/solvers/step_backends.py, choose_backend; None: the
        Python Newton loop alone), chosen once, and again only where ``tree_step``, ``element_step``,
        ``compiled_newton`` or ``reuse_factor`` were replaced since (as tests do to compare with Python)."""
        key = (self.tree_step, self.element_step, self.compiled_newton, self.reuse_factor)
        if self._backend_key is None or any(x is not y for x, y in zip(key, self._backend_key)):
            self._backend, self._step_path = step_backends.choose_backend(self)
            self._backend_key = key
        return self._backend

    def step_path(self) -> str:
        """How each step's Newton loop runs, and why where it runs in Python (the back-end's choice)."""
        _ = self.backend
        return self._step_path

    def describe_solver(self, fixed_steps: bool | None = None, callback: bool | None = None) -> str:
        """What solves the time steps' linear systems, for ``flexmb info``: the factor
        (engine/linear_solver.py) and why it was chosen, how each step's Newton loop runs (in one
        compiled call, its iterates compiled, or in Python), on how many threads the beams' passes
        run, and whether a run's steps go through a whole-run call (:meth:`run_path`, for a run with
        ``fixed_steps`` and a ``callback``, or both unknown: None); nothing when every coordinate is driven
        (flexmb/solvers/step_backends.py, describe_solver)."""
        return step_backends.describe_solver(self, fixed_steps, callback)

    def run_path(self, fixed_steps: bool | None = None, callback: bool | None = None) -> str:
        """Whether a run's steps between two output rows go through one compiled call (flexmb/solvers/tree_run.py
        for a rigid tree, flexmb/solvers/element_run.py on a matrix factor: "whole runs compiled between output
        rows") or one by one from Python, and why (``flexmb info``): for fixed steps (``fixed_steps`` True;
        error-controlled steps, False, always go one by one) and with a ``callback`` or not; None: not known,
        the conditions are named (flexmb/solvers/step_backends.py, run_path)."""
        return step_backends.run_path(self, fixed_steps, callback)

    def newton_path(self) -> str:
        """How each step's Newton loop runs on a matrix factor (dense, band, CHOLMOD), and, where it
        runs in Python, the family or setting that keeps it there (``flexmb info``;
        flexmb/solvers/step_backends.py, matrix_choice)."""
        return step_backends.matrix_choice(self)[1]

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
            raise nonfinite_error(st.t, source, in_step=False)
        if self.free.size:
            self._t = st.t
            if self.asm.with_state:  # families that correct the start (rigid cuts: closure, velocities, multipliers)
                st = self.asm.start(st, StartContext(self.free, self._evaluate, self._mass_solver, self.start_notes))
                ev = self._evaluate(st)
            r = ev.residual(st.udot)[self.free]
            self._factorize(ev, 0.0, 0.0)
            st.udot[self.free] = -self._solve(r)
            self._factor_key = None  # the mass matrix alone is no iteration matrix
        check_finite(st, self.model, in_step=False)
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

    def step(self, st: State, a: np.ndarray, h: float, t1: float | None = None) -> StepResult:
        """One step of size h from (st, a) to the time ``t1`` (default st.t + h; given, a step
        ends exactly there, e.g. at t_end): returns the new state, its pseudo-acceleration, its
        evaluation and step info. Raises SolverError if Newton fails (no halving here). The step is
        begun (newton_loop.begin_step: (G5)), offered to the compiled back-end if there is one
        (:attr:`backend`), and otherwise, or where that did not succeed (not converged, not finite or
        not positive definite), taken by the Python Newton loop (newton_loop.newton_step: (G6)–(G11)),
        which repeats it with the same arithmetic and raises the SolverError that names where."""
        b = begin_step(self, st, a, h, st.t + h if t1 is None else t1)
        backend = self.backend
        if backend is not None:
            done = backend.try_step(self, b)
            if done is not None:
                return done
        return newton_step(self, b)

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
        advance() and the compiled element Newton step count them (the factor is the last refactored step's);
        one step (a run with a row every step) without arrays made."""
        if h.size == 1:
            hk, nfac = float(h[0]), int(factorizations[0])
            if nfac:
                self.chol.n_factorize += nfac
                c_a = (1 - self.af) / (1 - self.am)
                self._factor_key = (self.gamma * hk * c_a, self.beta * hk * hk * c_a)
            self.min_step = min(self.min_step, hk)
            self.substeps += 1
            return
        refactored = np.flatnonzero(factorizations)
        if refactored.size:
            self.chol.n_factorize += int(factorizations.sum())
            hk = float(h[refactored[-1]])
            c_a = (1 - self.af) / (1 - self.am)
            self._factor_key = (self.gamma * hk * c_a, self.beta * hk * hk * c_a)
        self.min_step = min(self.min_step, float(h.min()))
        self.substeps += h.size

    def advance(self, st: State, a: np.ndarray, h: float, t_end: float | None = None
                ) -> tuple[State, np.ndarray, Evaluation, StepInfo]:
        """Advance by h to the time ``t_end`` (default st.t + h): the halving of docs/equations_of_motion.md
        (G12) around :meth:`step`, with the error estimate (E1)–(E5) of each sub-step taken
        (flexmb/solvers/step_control.py). A failed attempt is retried with
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
                check_finite(st1, self.model)
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
            a1 = self._taken(st1, ev, a, a1, h_try, info.iterations)
            total_it += info.iterations
            total_fac += info.factorizations
            st, a = st1, a1
            k += 1
            if k == 1 << level:
                st.t = t_end
                return st, a, ev, StepInfo(total_it, total_fac, info.residual, h)
            if level and k % 2 == 0:  # back on the grid of the doubled step: try it
                level -= 1
                k //= 2

    def _taken(self, st1: State, ev: Evaluation, a: np.ndarray, a1: np.ndarray, h: float, iterations: int) -> np.ndarray:
        """Note a sub-step taken by :meth:`advance`: its local error estimate (E1)–(E5) in the step log where
        one is kept (flexmb/solvers/step_control.py; it changes nothing of the step), the counts of sub-steps
        and the smallest step, and the sampled joint forces and node loads due at its end (docs/motion_forces.md
        (M6), (M15)); returns the pseudo-acceleration to go on from, a1 with the samples' jump (M16)."""
        if self.log is not None:
            err = math.nan
            if self.estimator is not None:
                err = self.estimator(ev, a, a1, h)
                self.estimator.accept(ev)
            self.log.add(st1.t, h, iterations, err, 0)
        self.substeps += 1
        self.min_step = min(self.min_step, h)
        self.sample_evaluation = None
        jump = self.sample_jump(st1) if sample_hold(self.model, st1) else None
        return a1 if jump is None else a1 + jump

    def sample_jump(self, st: State) -> np.ndarray | None:
        """The jump of the accelerations where a sampled force or node load took a new value at ``st``
        (docs/motion_forces.md (M16)): Δudot = −M̄⁻¹ r(udot) on the free coordinates, r the residual of the
        equations of motion with the new held values at the accelerations of the old ones; added to
        ``st.udot`` (a new array) and returned, for the caller to add to the pseudo-acceleration a; the
        evaluation at ``st`` with the new held values is kept in :attr:`sample_evaluation` for the output
        row (its reactions). None where nothing moves (no free coordinates, or the residual is zero)."""
        if not self.free.size:
            return None
        ev = self._evaluate(st)
        r = ev.residual(st.udot)[self.free]
        if not np.any(r):
            return None
        self._factorize(ev, 0.0, 0.0)
        jump = np.zeros_like(st.udot)
        jump[self.free] = -self._solve(r)
        self._factor_key = None  # the mass matrix alone is no iteration matrix
        st.udot = st.udot + jump
        self.sample_evaluation = ev
        return jump


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
        return ev.kin, ev.Mb, self.gp, diag, position, i.asm.tree_joint_blocks(ev, i.chol, self.gp, self.bp)


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
