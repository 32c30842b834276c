"""Static equilibrium: Newton iterations on the generalized forces with load stepping.

Solves  r(q) = B^T (g_ext-free bias) - tau = 0  for the free coordinates at u = 0 (DESIGN §4),
with gravity and nodal loads scaled by λ = 1/n, 2/n, …, 1 (each step starts from the previous
equilibrium). With elements (beams, bushings) the tangent is their assembled stiffness B^T K B plus the joint
springs (sparse); for rigid trees it is formed by central differences of the residual along the
Lie-group retraction (one residual pair per free coordinate).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from flexmb.engine.assembly import Assembler
from flexmb.errors import SolverError
from flexmb.state import State

__all__ = ["static_equilibrium"]


def static_equilibrium(
    model,
    load_steps: int = 10,
    tol: float = 1e-10,
    max_iter: int = 50,
    state: State | None = None,
    t: float = 0.0,
) -> State:
    """Equilibrium state of ``model`` under its loads at time ``t`` (drives held at q(t)).

    Raises SolverError naming the load step and the coordinates that do not converge.
    """
    asm = Assembler(model, exact_tangent=True)
    st = (model.initial_state() if state is None else state.copy())
    st.t = t
    st.u[:] = 0.0
    st.udot[:] = 0.0
    st.apply_drives(model, t)
    st.u[model.driven] = 0.0
    st.udot[model.driven] = 0.0
    free = model.free_u
    if not free.size:
        return st
    n_u = model.n_u
    # with elements: their assembled tangent B^T K B (+ joint springs); otherwise (rigid trees)
    # central differences of the residual along the retraction
    use_elements = bool(len(model.beam_names) or len(model.bushing_names))
    k_diag = asm.stiffness_damping_diag(free)[0]
    for step in range(1, load_steps + 1):
        lam = step / load_steps
        last_dx = np.inf
        for it in range(max_iter + 1):
            ev = asm.evaluate(st, load_factor=lam)
            r = ev.residual(st.udot)[free]
            scale = float(np.abs(ev.project(ev.bias)).max(initial=0.0) + np.abs(ev.tau).max(initial=0.0)) + 1e-300
            if not np.all(np.isfinite(r)):
                raise SolverError(f"static solve, load factor {lam:.3g}: non-finite residual", t)
            if np.abs(r).max() <= tol * max(scale, 1.0) or last_dx <= 1e-13 * (1.0 + np.abs(st.q).max(initial=0.0)):
                break
            if it == max_iter:
                worst = [model.coordinate_names[free[i]] for i in np.argsort(-np.abs(r))[:3]]
                raise SolverError(
                    f"static solve did not converge at load factor {lam:.3g} after {max_iter} iterations "
                    f"(residual {np.abs(r).max():.3e}); largest residuals in {worst}. Use more load_steps.", t)
            try:
                if use_elements:
                    K = asm.iteration_matrix(ev, free, 0.0, 1.0, k_diag, with_mass=False)
                    dx = spla.spsolve(sp.csc_matrix(K), -r)
                else:
                    K = _fd_tangent(model, asm, st, lam, free)
                    dx = np.linalg.solve(K, -r)
                if not np.all(np.isfinite(dx)):
                    raise np.linalg.LinAlgError
            except (np.linalg.LinAlgError, RuntimeError):
                raise SolverError(f"static solve: singular tangent at load factor {lam:.3g} (a mechanism with "
                                  "no stiffness against its loads has no static equilibrium).", t) from None
            last_dx = float(np.abs(dx).max())
            dq = np.zeros(n_u)
            dq[free] = dx
            st = st.retract(model, dq)
    return st


def _fd_tangent(model, asm: Assembler, st: State, lam: float, free: np.ndarray) -> np.ndarray:
    K = np.empty((free.size, free.size))
    eps = 1e-6
    for j, k in enumerate(free):
        dq = np.zeros(model.n_u)
        dq[k] = eps
        rp = asm.evaluate(st.retract(model, dq), load_factor=lam).residual(st.udot)[free]
        rm = asm.evaluate(st.retract(model, -dq), load_factor=lam).residual(st.udot)[free]
        K[:, j] = (rp - rm) / (2 * eps)
    return K
