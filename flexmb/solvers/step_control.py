"""Error-controlled time steps of generalized-α (``simulate(..., dt="auto", tol=...)``): the local
error estimate, the step-size controller and the dense output between steps.

**Local error estimate.** Generalized-α's pseudo-acceleration approximates the acceleration at a
shifted time (Arnold & Brüls 2007, §3): a_n = q̈(t_n + Δα h) + O(h²), Δα = αm - αf, and second
order needs γ = 1/2 - Δα. With a_n = q̈_n + Δα h q⃛_n + O(h²) and a_{n+1} = q̈_n + (1 + Δα) h q⃛_n
+ O(h²) in the position update q_{n+1} = q_n + h u_n + h² (1/2 - β) a_n + h² β a_{n+1}
(flexmb.solvers.generalized_alpha), against Taylor's q(t_n + h) = q_n + h q̇_n + h²/2 q̈_n + h³/6 q⃛_n:

    q_{n+1} - q(t_n + h) = (β + Δα/2 - 1/6) h³ q⃛_n + O(h⁴) = (β - γ/2 + 1/12) h³ q⃛_n + O(h⁴)      (E1)

and since a_{n+1} - a_n = h q⃛_n + O(h²), the computable estimate of the local position error is

    e_{n+1} = C h² (a_{n+1} - a_n),    C = β - γ/2 + 1/12                                      (E2)

(Newmark, αm = αf = 0: (β - 1/6) h² (a_{n+1} - a_n), Zienkiewicz & Xie 1991; the velocity update
is exact to O(h³) by the choice of γ, so positions carry the leading error). ρ∞ = 0.9: C = 0.0840,
ρ∞ = 0.8: C = 0.0864, ρ∞ = 1: C = 1/12.

**Error norm** (:class:`ErrorEstimate`): e (coordinates; zero on driven ones) is mapped to the
nodes, (δx_i, δθ_i) = (B e)_i, so every coordinate is measured by how far it moves the model:
ε = max_i |δx_i| + ℓ |δθ_i| (ℓ: the model's length scale, GeneralizedAlpha.length_scale). The
error per unit step relative to the motion,

    err = ε / (h V),   V = max(ℓ / (t_end - t0), the largest max_i |v_i| + ℓ |ω_i| so far)          (E3)

is accepted if err <= tol. ε = O(h³) makes err = O(h²): h ~ tol^(1/2), and the local errors add
up over the run to a global error of about tol · V · (t_end - t0), proportional to tol (an error
per step would give tol^(2/3)). V's floor ℓ / (t_end - t0) (the model moving its size once over
the run) keeps a start from rest from demanding relative accuracy of a motion not begun yet.

A step taken without evaluating its last Newton iterate (GeneralizedAlpha.lazy_accept) is
measured with the node poses, axes and twists of the iterate evaluated before it
(flexmb.engine.assembly.LazyEvaluation.near), so no forward pass is spent on the estimate (about
8 % of a step of the 1000-element link). They differ from the step's by the last Newton correction
δu̇ (positions by β' δu̇, velocities by γ' δu̇), at most half the one before it (the contraction
test): on the 1000-element link δu̇ ~ 1e-5 m/s² against accelerations of order 10, positions
3e-12 m and velocities 5e-9 m/s (more in the first steps from rest: on a 6-element link after 5
steps velocities within 1e-6 of the largest), far below what an estimate needs.        (E5)

**Step change** (:func:`shifted_acceleration`): a_n belongs to t_n + Δα h_n; a step of another
size h needs it at t_n + Δα h, so it is moved along the slope of the last step,

    a_n ← a_n + Δα (h - h_n) (a_n - a_{n-1}) / h_n,                                               (E4)

which keeps second order across step changes (a constant-step run never applies it).

**Controller** (:class:`StepController`, I-controller of exponent 1/2 since err ∝ h²):
h_new = h · min(grow, max(shrink, safety · (tol / err)^(1/2))), at most ``dt_max``; after a
rejection the step is not grown again at once; factors between 1 and 1.2 keep h (a new step
size costs a factorization). A Newton failure or a non-finite value rejects the step and halves
it; the run fails only when a step of h_f / 2**max_halvings fails (h_f: the first failed step
since the last accepted one), with the smallest step really tried in the message. A step whose
error stays above tol at ``dt_min`` (e.g. a drive with a jump in velocity) is accepted and
counted (``stats["steps_error_above_tol"]``).

**Dense output** (:func:`interpolate`): rows at the user's times between steps come from the
cubic Hermite interpolant of the step's increment (q_n ⊕ Δ(s), Δ(0) = 0, Δ(1) = the step's
increment, Δ'(0) = h u_n, Δ'(1) = h u_{n+1}), velocities by cubic Hermite from (u, u̇) at both ends,
accelerations linearly, drives exactly at that time; the row's forces, reactions and energies
are evaluated at that state (interpolation error O(h⁴) in velocities, O(h³) for rotations: the
order of the method's local error). Forces of stiff elements at such rows carry that position
error times their stiffness: on the change-point four-bar (benchmarks/results/2026-11-23-auto_step.md)
the coupler's axial force at rows between steps was off by 969 N (peak 205 N) at tol 1e-3 and 70 N
at 1e-4, while positions stayed within tol; for element forces, take rows at the steps
(``output_dt=None``) or a tighter tol.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from flexmb.engine.assembly import LazyEvaluation
from flexmb.engine.kinematics import Kinematics, KinematicsBuffers, _node_twists
from flexmb.model import Model
from flexmb.settings import DEFAULT_TOL
from flexmb.state import State

__all__ = ["error_constant", "ErrorEstimate", "StepController", "shifted_acceleration", "interpolate", "DEFAULT_TOL"]



def error_constant(beta: float, gamma: float) -> float:
    """C of (E2): the local position error is C h² (a_{n+1} - a_n)."""
    return beta - 0.5 * gamma + 1.0 / 12.0


@njit(cache=True)
def _twist_size(V: np.ndarray, ell: float) -> float:
    """max_i |V_i[:3]| + ℓ |V_i[3:]| over the rows of V (N,6); 0 for no rows."""
    out = 0.0
    for i in range(V.shape[0]):
        s = math.sqrt(V[i, 0] ** 2 + V[i, 1] ** 2 + V[i, 2] ** 2) + ell * math.sqrt(V[i, 3] ** 2 + V[i, 4] ** 2 + V[i, 5] ** 2)
        if s > out:
            out = s
    return out


@njit(cache=True)
def _error_size(parent, child, coord_start, coord_count, S, x, a0, a1, driven, coef, ell) -> float:
    """ε of (E3) for e = coef (a1 - a0), zero on the driven coordinates: the node motions B e in one pass."""
    e = np.empty(a0.size)
    for i in range(a0.size):
        e[i] = coef * (a1[i] - a0[i])
    for k in driven:
        e[k] = 0.0
    out = np.empty((x.shape[0], 6))
    _node_twists(parent, child, coord_start, coord_count, S, e, x, out)
    return _twist_size(out, ell)


class ErrorEstimate:
    """The error (E3) of a step, from its two pseudo-accelerations (E2), for one model and run.

    Used by both step modes: with ``dt="auto"`` it decides, with a fixed dt it is recorded in
    the step history. Call :meth:`accept` after a step is taken (its motion enters the scale V)."""

    def __init__(self, model: Model, beta: float, gamma: float, length_scale: float, span: float) -> None:
        self.c = error_constant(beta, gamma)
        self.ell = float(length_scale)
        self.v_floor = self.ell / span
        self.v = self.v_floor  # largest motion of an accepted step so far
        self.driven = np.asarray(model.driven, dtype=np.int64)
        self._last: tuple[object, float] | None = None  # (evaluation, its motion) of the last estimate
        self._buffers: KinematicsBuffers | None = None  # the kinematics of steps taken without evaluation

    def _kin(self, ev) -> Kinematics:
        """The kinematics of ``ev``; of a step taken without evaluating it (LazyEvaluation) those of the
        iterate its step evaluated last (``near``: (E5)), else one forward pass into this estimate's
        arrays, so that nothing is allocated per step."""
        if isinstance(ev, LazyEvaluation):
            if ev.near is not None:
                return ev.near
            kin, self._buffers = ev.kin_into(self._buffers)
            return kin
        return ev.kin

    def motion(self, ev, kin: Kinematics | None = None) -> float:
        """max_i |v_i| + ℓ |ω_i| over the nodes of the evaluation ``ev`` (``kin``: its kinematics)."""
        if self._last is not None and self._last[0] is ev:
            return self._last[1]
        v = _twist_size((self._kin(ev) if kin is None else kin).V, self.ell)
        self._last = (ev, v)
        return v

    def __call__(self, ev, a0: np.ndarray, a1: np.ndarray, h: float) -> float:
        """err (E3) of a step of size h from pseudo-acceleration a0 to a1, ending at the evaluation ``ev``."""
        kin = self._kin(ev)
        p = kin.pattern
        eps = _error_size(p.joint_parent_ext, p.joint_child, p.coord_start, p.coord_count, kin.S, kin.x, a0, a1,
                          self.driven, self.c * h * h, self.ell)
        return eps / (h * max(self.v, self.motion(ev, kin)))

    def accept(self, ev) -> None:
        """Take an accepted step's motion into the scale V."""
        self.v = max(self.v, self.motion(ev))

    def set_scale(self, v: float) -> None:
        """The scale V after steps estimated elsewhere (flexmb.solvers.tree_run: the same formula)."""
        self.v = v
        self._last = None


def shifted_acceleration(a: np.ndarray, a_prev: np.ndarray | None, h: float, h_prev: float, dalpha: float) -> np.ndarray:
    """(E4): the pseudo-acceleration a (of a step h_prev, a_prev the one before it) for a step h;
    ``a`` itself where h = h_prev or there is no previous step (the consistent start)."""
    if a_prev is None or h == h_prev or h_prev <= 0.0:
        return a
    return a + (dalpha * (h - h_prev) / h_prev) * (a - a_prev)


class StepController:
    """Step sizes for ``dt="auto"`` (module docstring): ``tol``, the run [t0, t_end], the
    largest step ``dt_max`` (default (t_end - t0) / 20), the smallest step at which an error
    above tol is accepted ``dt_min`` (default 1e-8 (t_end - t0)), first step ``h0`` (default
    1e-4 (t_end - t0), at most dt_max)."""

    safety = 0.9
    grow = 2.0
    shrink = 0.2
    keep = 1.2  # a proposed growth up to this factor keeps the step (and the factorization)

    def __init__(self, tol: float, t0: float, t_end: float, dt_max: float | None = None, dt_min: float | None = None,
                 h0: float | None = None) -> None:
        span = t_end - t0
        self.tol = tol
        self.t_end = t_end
        self.h_max = span / 20 if dt_max is None else float(dt_max)
        self.h_min = min(1e-8 * span, self.h_max) if dt_min is None else float(dt_min)
        self.h = min(self.h_max, 1e-4 * span if h0 is None else h0)

    def plan(self, t: float, h: float, shrinking: bool = False) -> tuple[float, bool]:
        """The next step from ``t`` for a wanted size ``h``, and whether it is the last one (ends
        at t_end): a step within 20 % of the rest takes it all, a step more than half of it
        takes half (no sliver of a last step). ``shrinking`` (after a rejected or failed step):
        never more than ``h`` — taking the whole rest would retry the step just rejected, for ever."""
        rest = self.t_end - t
        whole = h >= rest if shrinking else h >= rest / self.keep
        if whole or rest <= 64 * np.finfo(float).eps * max(abs(self.t_end), 1.0):
            return rest, True
        if 2 * h > rest:
            return 0.5 * rest, False
        return h, False

    def factor(self, err: float) -> float:
        """safety · (tol / err)^(1/2) within [shrink, grow]."""
        if err <= 0.0 or not math.isfinite(err):
            return self.grow if err <= 0.0 else self.shrink
        return min(self.grow, max(self.shrink, self.safety * math.sqrt(self.tol / err)))

    def rejected(self, h: float, err: float) -> float:
        """The step after a rejection for the error ``err`` (> tol)."""
        return max(self.h_min, h * min(self.factor(err), self.safety))

    def accepted(self, h: float, err: float, no_growth: bool) -> float:
        """The step after an accepted one of size ``h`` and error ``err``; ``no_growth`` after a rejection."""
        f = self.factor(err)
        if no_growth:
            f = min(f, 1.0)
        if 1.0 <= f <= self.keep:
            f = 1.0
        return min(self.h_max, max(self.h_min, h * f))


def interpolate(model: Model, st0: State, st1: State, a0: np.ndarray, a1: np.ndarray, beta: float, t: float) -> State:
    """The state at time ``t`` inside the step from ``st0`` (pseudo-acceleration ``a0``, as used by
    the step) to ``st1`` (``a1``): the dense output of the module docstring."""
    h = st1.t - st0.t
    s = (t - st0.t) / h
    s2, s3 = s * s, s * s * s
    D = h * (st0.u + h * ((0.5 - beta) * a0 + beta * a1))  # the step's increment (its retraction)
    inc = (3 * s2 - 2 * s3) * D + (s - 2 * s2 + s3) * h * st0.u + (s3 - s2) * h * st1.u
    st = st0.retract(model, inc)
    st.t = t
    st.u = ((2 * s3 - 3 * s2 + 1) * st0.u + (s3 - 2 * s2 + s) * h * st0.udot + (3 * s2 - 2 * s3) * st1.u
            + (s3 - s2) * h * st1.udot)
    st.udot = (1 - s) * st0.udot + s * st1.udot
    st.elements = {k: v.copy() for k, v in st1.elements.items()}
    st.apply_drives(model, t)
    return st
