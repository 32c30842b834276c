"""The compiled back-ends of the generalized-α step and the choice among them, with its reason.

A back-end may take a whole begun step (flexmb/solvers/newton_loop.py, BegunStep) in one compiled call
with the same result bit for bit as the Python Newton loop, the reference (:func:`newton_step`)::

    try_step(integ, begun) -> StepResult | None     the step, or None where it did not succeed (not
                                                    converged, not finite, a pivot not positive): the
                                                    Python loop then repeats the step from its start and
                                                    raises the error that names where

* :class:`CompiledTreeStep`: a plain rigid tree on the tree factor (flexmb/solvers/tree_step.py);
* :class:`CompiledElementNewton`: a model of beams and bodies on the dense or band factor without
  factor reuse (flexmb/solvers/element_step.py, ElementStep.newton).

:func:`choose_backend` picks one per integrator, once, and says how each step's Newton loop runs and why
(what ``flexmb info`` prints: :func:`describe_solver`, :func:`run_path`). Nothing else asks which class a
back-end or a linear solver is: the step reads ``kind`` and calls ``try_step``.
"""

from __future__ import annotations

import time as _time
from typing import Protocol

from flexmb.elements import FAMILIES
from flexmb.engine import parallel
from flexmb.engine.assembly import LazyEvaluation
from flexmb.solvers.element_kernels import LAZY
from flexmb.solvers.element_run import ElementRun
from flexmb.solvers.element_step import ElementStep
from flexmb.solvers.integrator_protocol import Integrator
from flexmb.solvers.law_step import has_laws
from flexmb.solvers.newton_loop import BegunStep, StepInfo, StepResult, accept
from flexmb.solvers.tree_run import TreeRun
from flexmb.solvers.tree_step import OK, TreeStep

__all__ = ["StepBackend", "CompiledTreeStep", "CompiledElementNewton", "choose_backend", "matrix_choice", "describe_solver",
           "run_path"]

_TREE_COMPILED = "each step's Newton loop in one compiled call (flexmb/solvers/tree_step.py)"
_MOTION_COMPILED = "joint forces of the motion compiled with numba (flexmb/solvers/motion_step.py)"


class StepBackend(Protocol):
    """A compiled step the integrator may offer a begun step to (module docstring)."""

    name: str  # what it is, e.g. "tree_step"

    def try_step(self, integ: Integrator, b: BegunStep) -> StepResult | None:
        """The begun step ``b`` of ``integ`` taken whole, or None where it did not succeed (nothing left
        behind: no factor kept, no factorization counted)."""


class CompiledTreeStep:
    """The whole step of a plain rigid tree in one compiled call (TreeStep.step: (G2)–(G10) on the tree
    factor with its position tangent); its time is ``timings["compiled_step"]``."""

    name = "tree_step"

    def __init__(self, tree: TreeStep) -> None:
        self.tree = tree

    def try_step(self, integ: Integrator, b: BegunStep) -> StepResult | None:
        """The step, or None if it did not succeed (its factorizations are then not counted)."""
        t0 = _time.perf_counter()
        integ._t = b.t1
        status, it, nfac, rn, st1, a1, ev = self.tree.step(b.st, b.a, b.h, b.t1, integ.tree_params(b.h))
        integ.timings["compiled_step"] += _time.perf_counter() - t0
        if status != OK:
            return None
        integ._count_tree_factors(nfac, b.h)
        return st1, a1, ev, StepInfo(it, nfac, rn, b.h)


class CompiledElementNewton:
    """The begun step's Newton loop in one compiled call on the dense or band factor (ElementStep.newton),
    then the rigid cuts' end of step in Python (newton_loop.accept) where the model has them."""

    name = "element_newton_step"

    def __init__(self, es: ElementStep) -> None:
        self.es = es

    def try_step(self, integ: Integrator, b: BegunStep) -> StepResult | None:
        """The step, or None if it did not succeed (the factor is then not kept, its factorizations not
        counted, as for the compiled tree step: the Python loop repeats the step)."""
        es = self.es
        es.begin(b.st, b.a, b.h, b.t1, (integ.am, integ.af, integ.gamma, integ.beta, b.h), b.elements)
        t0 = _time.perf_counter()
        status, it, nfac, rn = es.newton(integ.chol, b.gp, b.bp, b.gp * integ.c_diag + b.bp * integ.k_diag,
                                         (integ.rtol, integ.atol_udot, integ._eps_pos, integ.length_scale,
                                          integ.max_iter, integ._lever), b.lazy)
        integ.timings["compiled_step"] += _time.perf_counter() - t0
        if status not in (OK, LAZY):  # the Python loop repeats the step and counts its factorizations
            integ._factor_key = None
            return None
        if nfac:
            integ.chol.n_factorize += nfac
            integ._factor_key = (b.gp, b.bp)
        if es.cut_flags[1]:  # the accepted iterate raised the cuts' penalties: the factor is not S's (as the Python loop)
            integ._factor_key = None
        st1 = es.state()
        ev = LazyEvaluation(integ.asm, st1, es.kinematics()) if status == LAZY else es.evaluation()
        a1 = es.a1
        if integ.asm.with_state:  # the rigid cuts' end of step (projections), as the Python loop's accept
            st1, a1, ev = accept(integ, b, st1, ev, es.elements(), a1)
        return st1, a1, ev, StepInfo(it, nfac, rn, b.h)


def choose_backend(integ: Integrator) -> tuple[StepBackend | None, str]:
    """The compiled back-end of ``integ``'s steps (None: the Python Newton loop alone) and how each step's
    Newton loop runs, with the reason where it runs in Python (``flexmb info``)."""
    if integ.chol is None:
        return None, "no unknowns"
    if integ.chol.kind == "tree":
        if integ.tree_step is not None:
            return CompiledTreeStep(integ.tree_step), _TREE_COMPILED + (
                "; " + _MOTION_COMPILED if integ.model.mforce_u.size else "")
        return None, f"Newton in Python ({TreeStep.refusal(integ.model, integ.asm) or 'reuse_factor=True'})"
    return matrix_choice(integ)


def matrix_choice(integ: Integrator) -> tuple[StepBackend | None, str]:
    """:func:`choose_backend` on a matrix factor (dense, band, CHOLMOD): the compiled Newton loop where the
    element step applies on the dense or band factor without factor reuse, else the Python loop (around
    the compiled iterates where the element step applies), and the family or setting that keeps it there."""
    if integ.element_step is None:
        return None, f"Newton loop and iterates in Python ({ElementStep.refusal(integ.model, integ.asm, True)})"
    if integ.compiled_newton and integ.chol.kind in ("dense", "band") and not integ._reusing():
        return CompiledElementNewton(integ.element_step), (
            "each step's whole Newton loop in one compiled call (flexmb/solvers/element_step.py, element_newton_step)")
    why = ("the factor is kept over steps (reuse_factor)" if integ._reusing() else
           "CHOLMOD is called from Python" if integ.chol.kind == "cholmod" else "compiled_newton is off")
    return None, ("each Newton iterate and the iteration matrix's values in compiled calls, the loop around them in "
                  f"Python ({why}; flexmb/solvers/element_step.py)")


def describe_solver(integ: Integrator, fixed_steps: bool | None = None, callback: bool | None = None) -> str:
    """GeneralizedAlpha.describe_solver: the factor and why it was chosen, how each step's Newton loop runs
    (:func:`choose_backend`), the beams' threads and the run path (:func:`run_path`)."""
    chol = integ.chol
    if chol is None:
        return "none (every coordinate is driven: inverse dynamics, no unknowns)"
    n = integ.free.size
    run = "; " + run_path(integ, fixed_steps, callback)
    if chol.kind == "tree":
        how = integ.step_path()
        pairs = "; spring-dampers across single joints in its pivot blocks (engine/tree_pairs.py)" * bool(integ.asm.tree_pairs)
        return f"{chol.describe(n)}, position tangent {'on' if integ.position_tangent else 'off'}{pairs}; {how}{run}"
    how = "; " + integ.step_path()
    if integ.element_step is not None and integ.model.mforce_u.size:
        how += "; " + _MOTION_COMPILED
    if integ.element_step is not None and has_laws(integ.model):
        how += "; spring-damper force laws compiled with numba (flexmb/solvers/law_step.py)"
    beams = [d.n for f, d, _ in integ.asm.families if f is FAMILIES["beam"]]
    if beams:
        threads = parallel.threads_for(beams[0])
        how += (f"; the {beams[0]} beam elements' passes on {threads} thread(s) (numba, NUMBA_NUM_THREADS; several "
                f"from {parallel.PARALLEL_MIN} elements on; threading layer {parallel.threading_layer()}; "
                "flexmb/engine/parallel.py)")
    if chol.kind == "dense":
        return f"dense Cholesky (engine/dense_cholesky.py: {integ.solver_reason}), {n} unknowns{how}{run}"
    return f"{chol.describe(n)}{how}{run}"


def run_path(integ: Integrator, fixed_steps: bool | None = None, callback: bool | None = None) -> str:
    """GeneralizedAlpha.run_path: whether a run's steps between two output rows go through one compiled call
    (flexmb/solvers/tree_run.py for a rigid tree, flexmb/solvers/element_run.py on a matrix factor) or one
    by one from Python, and why."""
    if integ.chol.kind == "tree":
        module, why = "tree_run", ("" if TreeRun.applies(integ, None) else "each step's Newton loop is not one compiled call"
                                   if integ.tree_step is None else "the work and samples of joint forces of the motion "
                                   "are taken in Python after each step")
    else:
        module, why = "element_run", ElementRun.refusal(integ, None)
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
