"""What the step's loop, its compiled back-ends and the whole-run calls read and write of the integrator.

The generalized-α integrator (flexmb/solvers/generalized_alpha.py, GeneralizedAlpha) sits above the modules
that take its steps: the Newton loop written once (flexmb/solvers/newton_loop.py, docs/equations_of_motion.md
(G5)–(G11)), the compiled back-ends and the choice among them (flexmb/solvers/step_backends.py) and the
whole-run calls between output rows (flexmb/solvers/tree_run.py, flexmb/solvers/element_run.py). They name
the fields and helpers of the integrator they use in :class:`Integrator`, a ``typing.Protocol``, instead of
importing the class (docs/architecture.md P4: layers without cycles, type-only imports included). The
integrator is the one class that has them all; nothing here runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # type hints only
    import numpy as np

    from flexmb.engine.assembly import Assembler, Evaluation
    from flexmb.engine.kinematics import Kinematics
    from flexmb.engine.linear_solver import LinearSolver
    from flexmb.model import Model
    from flexmb.solvers.element_step import ElementStep
    from flexmb.solvers.tree_step import TreeStep
    from flexmb.state import State

__all__ = ["Integrator"]


class Integrator(Protocol):
    """The generalized-α integrator as its step, back-ends and whole runs see it (module docstring; the
    meaning of each field is GeneralizedAlpha's)."""

    # what it steps, and how: the compiled model, its assembler, the free coordinates, the factor and the
    # compiled steps chosen once (None where they do not apply)
    model: Model
    asm: Assembler
    free: np.ndarray
    chol: LinearSolver | None
    solver_reason: str
    tree_step: TreeStep | None
    element_step: ElementStep | None
    # the method's parameters αm, αf, γ, β (docs/equations_of_motion.md (G1)) and the Newton loop's settings
    am: float
    af: float
    gamma: float
    beta: float
    rtol: float
    atol_udot: float
    length_scale: float
    max_iter: int
    theta_refresh: float
    reuse_iterations: int
    position_tangent: bool
    compiled_newton: bool
    lazy_accept: bool
    k_diag: np.ndarray
    c_diag: np.ndarray
    _eps_pos: float
    _lever: np.ndarray
    _work_needs_forces: bool
    # what the steps change: the time a factor's error names, the factor's (γ', β') (None: no iteration
    # matrix), the cuts' projection factor and the time spent per stage
    _t: float
    _factor_key: tuple[float, float] | None
    _pchol: LinearSolver | None
    timings: dict[str, float]

    def _reusing(self) -> bool:
        """Whether the factor is kept over steps (``reuse_factor``)."""

    def _evaluate(self, st: State) -> Evaluation:
        """The evaluation of ``st`` (eq. (1)), its time counted."""

    def _kinematics(self, st: State) -> Kinematics:
        """The kinematics of ``st`` alone."""

    def _trial(self, st: State, hdq: np.ndarray, u1: np.ndarray, udot1: np.ndarray, t1: float) -> State:
        """The state st ⊕ hdq with velocities u1 and accelerations udot1 at t1 ((G2)–(G4))."""

    def _scale(self, ev: Evaluation, udot: np.ndarray) -> float:
        """The force scale of the residual test (G7)."""

    def _factorize(self, ev: Evaluation | None, gp: float, bp: float, st: State | None = None) -> None:
        """Factorize the iteration matrix S = M̄ + γ' C̄ + β' K̄ (G5) at ``ev``."""

    def _solve(self, r: np.ndarray) -> np.ndarray:
        """S⁻¹ r with the current factor (G8)."""

    def _projection_factor(self, ev: Evaluation, bp: float) -> LinearSolver:
        """The factor of the rigid cuts' projection matrix M̄ + β' K̄_c at ``ev``."""

    def tree_params(self, h: float) -> tuple:
        """The settings of a compiled tree step of size h."""

    def _count_tree_factors(self, nfac: int, h: float) -> None:
        """Count the factorizations of a compiled tree step of size h."""

    def note_tree_steps(self, h: np.ndarray, factorizations: np.ndarray) -> None:
        """Count the steps a whole-run call on the tree factor took."""

    def note_element_steps(self, h: np.ndarray, factorizations: np.ndarray) -> None:
        """Count the steps a whole-run call on a matrix factor took."""

    def step_path(self) -> str:
        """How each step's Newton loop runs, and why where it runs in Python."""
