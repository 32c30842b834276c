"""Joint forces that depend on the motion: ``f(t, q, u)`` on one joint coordinate (docs/motion_forces.md).

A joint force given to ``ModelBuilder.add_joint_force`` as a function of time, the coordinate and
its rate, ``f(t, q, u)``, enters τ of eq. (1) of engine/assembly.py like a joint spring; its tangents
``k = -∂f/∂q`` and ``c = -∂f/∂u`` (docs/motion_forces.md (M2)) enter the iteration matrix's diagonal
as a spring's stiffness and damping do (M3). They come from the user's ``tangent(t, q, u)`` or by the
complex step (M4), or by central differences for a function that does not take complex input (M5).
With a ``period`` the force is a sampled controller (M6): its value is computed at the sample times
from the state there and held until the next sample (:func:`sample_hold`); it has no tangent.
"""

from __future__ import annotations

import cmath
import inspect
import math
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from flexmb.errors import ModelError

if TYPE_CHECKING:  # flexmb.model imports this module
    from flexmb.model import Model
    from flexmb.state import State

__all__ = ["MotionForce", "HOLD_KEY", "force_arity", "motion_tangents", "initial_hold", "sample_hold",
           "motion_values", "force_names", "recorded_forces", "initial_load_hold"]

#: the key of the sampled forces' held outputs in State.elements (docs/motion_forces.md (M6))
HOLD_KEY = "motion_hold"

_CS = 1e-30  # the complex step (M4)


def force_arity(force: Callable[..., Any], who: str) -> int:
    """1 for a function of time ``force(t)``, 3 for a function of the motion ``force(t, q, u)``:
    the number of its positional parameters without defaults (docs/motion_forces.md, "Which call").
    A ModelError for any other signature."""
    try:
        sig = inspect.signature(force)
    except (TypeError, ValueError):  # a builtin without a readable signature: a numpy ufunc says its nin
        nin = getattr(force, "nin", None)
        if nin in (1, 3):
            return int(nin)
        raise ModelError(f"{who}: the signature of force {force!r} cannot be read; give a Python function "
                         "force(t) or force(t, q, u).") from None
    required = [p for p in sig.parameters.values()
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
    if any(p.kind == p.VAR_POSITIONAL for p in sig.parameters.values()) or len(required) not in (1, 3):
        raise ModelError(f"{who}: force{sig} takes {len(required)} required positional argument(s); give a function "
                         "of time force(t) or of time, coordinate and rate force(t, q, u) (docs/motion_forces.md).")
    return len(required)


def _complex_value(f: Callable[..., Any], args: tuple) -> complex | None:
    """f(*args) with one complex argument, or None when f does not carry the complex step through."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            val = f(*args)
    except Exception:
        return None
    if isinstance(val, np.ndarray) and val.shape == ():
        val = val[()]
    if not isinstance(val, (complex, np.complexfloating)) or not cmath.isfinite(val):
        return None
    return complex(val)


def motion_tangents(f: Callable[[float, float, float], float], t: float, q: float, u: float,
                    complex_step: bool = True) -> tuple[float, float]:
    """(∂f/∂q, ∂f/∂u) at (t, q, u): complex step (docs/motion_forces.md (M4)) where f carries it
    (and ``complex_step``), else central differences (M5)."""
    out = []
    for i, x in ((1, q), (2, u)):
        z = [t, q, u]
        z[i] = complex(x, _CS)
        val = _complex_value(f, tuple(z)) if complex_step else None
        if val is not None:
            out.append(val.imag / _CS)
            continue
        h = 6e-6 * max(1.0, abs(x))  # ~ cbrt(eps): truncation and round-off balanced (M5)
        zp, zm = [t, q, u], [t, q, u]
        zp[i], zm[i] = x + h, x - h
        out.append((float(f(*zp)) - float(f(*zm))) / (2.0 * h))
    return out[0], out[1]


class MotionForce:
    """A joint force ``f(t, q, u)`` on one coordinate (docs/motion_forces.md (M1)) with its
    tangents: ``tangent(t, q, u) -> (∂f/∂q, ∂f/∂u)`` when given, else :func:`motion_tangents`.
    ``period``: a sampled controller (M6), its value held between samples (:func:`sample_hold`)."""

    def __init__(self, name: str, force: Callable[[float, float, float], float],
                 tangent: Callable[[float, float, float], tuple[float, float]] | None = None,
                 period: float | None = None) -> None:
        self.name = name
        self.force = force
        self.tangent_function = tangent
        self.period = period
        #: the tangent by the complex step (False: central differences; see :meth:`check`)
        self.complex_step = True
        #: its C function compiled by numba (flexmb/solvers/motion_step.py), or why numba does not compile it; None: not tried
        self.compiled: Any = None

    @property
    def sampled(self) -> bool:
        """Whether the force is a sampled controller (a ``period`` given)."""
        return self.period is not None

    def value(self, t: float, q: float, u: float) -> float:
        """f(t, q, u) as a float."""
        return float(np.real(self.force(t, q, u)))

    def tangent(self, t: float, q: float, u: float) -> tuple[float, float]:
        """(∂f/∂q, ∂f/∂u) at (t, q, u) (docs/motion_forces.md (M2)-(M5))."""
        if self.tangent_function is not None:
            dq, du = self.tangent_function(t, q, u)
            return float(dq), float(du)
        return motion_tangents(self.force, t, q, u, self.complex_step)

    def check(self, who: str, t: float, q: float, u: float) -> None:
        """A ModelError when f or its tangents at (t, q, u) fail or are not finite. Without a given
        tangent it compares the complex step with central differences off (q, u); where they disagree
        (a function that is not complex-analytic: abs, max, comparisons) the force takes central
        differences from then on (docs/motion_forces.md (M5))."""
        try:
            f0 = self.value(t, q, u)
            d = self.tangent(t, q, u)
        except Exception as exc:  # the user's functions: their failure is reported, not raised through
            raise ModelError(f"{who}: force(t, q, u) or its tangent at t = {t}, q = {q}, u = {u} failed "
                             f"({type(exc).__name__}: {exc}); give functions returning numbers.") from None
        if not (math.isfinite(f0) and math.isfinite(d[0]) and math.isfinite(d[1])):
            raise ModelError(f"{who}: force(t, q, u) = {f0} and its tangents {d} at t = {t}, q = {q}, u = {u} "
                             "must be finite.")
        if self.tangent_function is not None:
            return
        for i, x in ((1, q + 0.5), (2, u + 0.5)):  # off the initial state, where abs(u) and the like have a slope
            z = [t, q, u]
            z[i] = x
            cs = motion_tangents(self.force, *z)[i - 1]
            h = 1e-4 * max(1.0, abs(x))
            zp, zm = list(z), list(z)
            zp[i], zm[i] = x + h, x - h
            fd = (self.value(*zp) - self.value(*zm)) / (2 * h)
            if abs(cs - fd) > 1e-5 * (abs(fd) + abs(cs)) + 1e-9 * (1.0 + abs(f0)):
                self.complex_step = False
                return


def initial_hold(mforce: tuple[MotionForce, ...], mforce_q: np.ndarray, mforce_u: np.ndarray, t: float,
                 q: np.ndarray, u: np.ndarray) -> np.ndarray | None:
    """The held outputs of the sampled forces at the first sample (docs/motion_forces.md (M6)):
    (4, n_mforce), row 0 the values, row 1 the time of each force's next sample (inf: not sampled),
    row 2 the values that acted over the step ending at the state (before its sample: the work
    over that step, (M7)), row 3 the time the held value was sampled (NaN: not sampled; (M14));
    None without sampled forces. It is kept in ``State.elements[HOLD_KEY]``."""
    if not any(mf.sampled for mf in mforce):
        return None
    hold = np.zeros((4, len(mforce)))
    hold[1], hold[3] = np.inf, np.nan
    hold = _sample(hold, mforce, mforce_q, mforce_u, t, q, u, force_all=True)
    hold[2] = hold[0]
    return hold


def _sample(hold: np.ndarray, mforce: tuple[MotionForce, ...], mforce_q: np.ndarray, mforce_u: np.ndarray, t: float,
            q: np.ndarray, u: np.ndarray, force_all: bool = False) -> np.ndarray:
    """A new hold with every sampled force whose sample time has come (t >= next sample time, to
    1e-9 of its period) sampled at (t, q, u) (M6); ``force_all``: every sampled force."""
    out = hold.copy()
    out[2] = hold[0]
    for i, mf in enumerate(mforce):
        if not mf.sampled:
            continue
        P = mf.period
        if force_all or t >= hold[1, i] - 1e-9 * P:
            out[0, i] = mf.value(t, float(q[mforce_q[i]]), float(u[mforce_u[i]]))
            out[1, i] = P * (math.floor((t + 1e-9 * P) / P) + 1.0)
            out[3, i] = t
    return out


def initial_load_hold(model: Model, st: State) -> None:
    """The sampled node loads' first sample at the initial state ``st`` (docs/motion_forces.md (M15);
    flexmb.motion_loads.sample_loads)."""
    from flexmb.motion_loads import sample_loads  # the node loads' module reads the kinematics: below the model

    sample_loads(model, st, initial=True)


def sample_hold(model: Model, st: State) -> bool:
    """After an accepted step ending at ``st``: the sampled forces due there take their sample from
    ``st`` (docs/motion_forces.md (M6)), and the sampled node loads theirs (M15); ``st.elements`` gets a
    new hold (the old state's is not changed). Returns whether a held value changed there: the
    accelerations of ``st`` then jump with it (M16, ``GeneralizedAlpha.sample_jump``)."""
    from flexmb.motion_loads import sample_loads  # the sampled node loads too (M15)

    changed = sample_loads(model, st)
    hold = st.elements.get(HOLD_KEY) if st.elements else None
    if hold is None:
        return changed
    qi = np.asarray(model.u_to_q)[np.asarray(model.mforce_u)]
    new = _sample(hold, model.mforce, qi, model.mforce_u, st.t, st.q, st.u)
    st.elements = {**st.elements, HOLD_KEY: new}
    return changed or not np.array_equal(new[0], new[2])


def motion_values(model: Model, st: State) -> tuple[np.ndarray, np.ndarray]:
    """The joint forces of the motion at ``st`` (n_mforce): the values acting from ``st`` on, and
    those that acted over the step ending at ``st`` (they differ for a sampled force sampled at
    ``st``: its work over the step takes the old value, docs/motion_forces.md (M7))."""
    hold = st.elements.get(HOLD_KEY) if st.elements else None
    now = np.empty(len(model.mforce))
    for i, (j, mf) in enumerate(zip(model.mforce_u, model.mforce)):
        now[i] = hold[0, i] if mf.sampled else mf.value(st.t, float(st.q[model.u_to_q[j]]), float(st.u[j]))
    before = now.copy()
    if hold is not None:
        before[[mf.sampled for mf in model.mforce]] = hold[2, [mf.sampled for mf in model.mforce]]
    return now, before


def force_names(model: Model) -> tuple[str, ...]:
    """The names of the joint forces of the motion in a Result (``Result.joint_force_names``,
    docs/motion_forces.md (M14)): the joint's name for a one-coordinate joint, else the coordinate's
    (``"cyl.t0"``)."""
    names = [model.coordinate_names[j] for j in model.mforce_u]
    return tuple(n[:-2] if n.endswith(".q") else n for n in names)


def recorded_forces(model: Model, st: State) -> np.ndarray:
    """The row of ``Result.joint_forces`` at ``st`` (n_mforce, 2) (docs/motion_forces.md (M14)): each
    force's value acting from ``st`` on (a sampled force's held value) and the time of the state it was
    computed from: for a sampled force the time of the sample it holds, for a continuous one ``st.t``."""
    out = np.full((len(model.mforce), 2), float(st.t))
    out[:, 0] = motion_values(model, st)[0]
    hold = st.elements.get(HOLD_KEY) if st.elements else None
    if hold is not None:
        sampled = np.array([mf.sampled for mf in model.mforce])
        out[sampled, 1] = hold[3, sampled]
    return out
