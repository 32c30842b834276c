"""Node loads that depend on the motion: ``f(t, x, R, v, w)`` on one node (docs/motion_forces.md §7).

A load given to ``ModelBuilder.add_load`` as a function of the time and of the node's pose and twist,
``f(t, x, R, v, w)`` (global position x, rotation matrix R, velocity v of the node origin, angular
velocity w in global axes), returns the force (3) or the force and the moment about the node origin
(6), global axes (docs/motion_forces.md (M8)). Its tangent, the 6 x 12 matrix of its derivatives by
(x, θ, v, w), θ a small rotation in global axes (M9), comes from the user's ``tangent`` or by the
complex step (M10), or by central differences for a function that does not take complex input (M11).
The ``"motion_load"`` element family (elements/motion_load.py) puts the load into the node wrenches
and its tangent, symmetrized, into the iteration matrix (M12). With a ``period`` the load is sampled
(M15): :func:`sample_loads` takes its value from the node's state at the samples, held in between.
"""

from __future__ import annotations

import inspect
import math
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from flexmb.errors import ModelError

if TYPE_CHECKING:  # type hints only: the model's compiler and flexmb/motion_forces.py call this module
    from flexmb.model import Model
    from flexmb.state import State

__all__ = ["NodeMotionLoad", "load_arity", "skew", "NODE_ARGS", "LOAD_HOLD_KEY", "sample_loads"]

#: the key of the sampled node loads' hold in State.elements (docs/motion_forces.md (M15)): (n_el, 14) per load
#: the wrench held [0:6], the wrench that acted over the step ending at the state [6:12], the next sample time
#: [12] (inf: not sampled) and the time of the sample held [13]
LOAD_HOLD_KEY = "motion_load_hold"

#: the arguments of a load of the motion, in order (docs/motion_forces.md (M8))
NODE_ARGS = ("t", "x", "R", "v", "w")

_CS = 1e-30  # the complex step (M10)


def load_arity(force: Any) -> int | None:
    """The number of required positional parameters of ``force`` (5: a load of the motion
    f(t, x, R, v, w); 1: a function of time), or None when it is not a function or its signature
    cannot be read (a numpy ufunc, ``*args``: taken as a function of time, as before)."""
    if not callable(force):
        return None
    try:
        sig = inspect.signature(force)
    except (TypeError, ValueError):
        return None
    params = sig.parameters.values()
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return None
    return sum(1 for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty)


def skew(a: np.ndarray) -> np.ndarray:
    """The cross-product matrix [a]× of a 3-vector (a × b = [a]× b)."""
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]], dtype=a.dtype)


_E = np.eye(3)


def _perturbed(args: list, k: int, d: complex | float) -> list:
    """The arguments (x, R, v, w) with coordinate k of (x, θ, v, w) moved by d: x + d e_k, (I + d [e_j]×) R,
    v + d e_j, w + d e_j (M9)."""
    out = [np.array(a, dtype=complex if isinstance(d, complex) else float) for a in args]
    block, j = divmod(k, 3)
    if block == 1:
        out[1] = out[1] + d * (skew(_E[j]) @ args[1])
    else:  # x, v, w: the arguments 0, 2, 3 as the blocks 0, 2, 3
        out[block][j] += d
    return out


class NodeMotionLoad:
    """A load of the motion ``f(t, x, R, v, w)`` on one node (docs/motion_forces.md (M8)) and its
    tangent (M9): ``tangent(t, x, R, v, w) -> (n_out, 12)`` when given, else the complex step (M10) or
    central differences (M11). ``n_out`` = 3 (a force) or 6 (force and moment), read from f at the
    check (:meth:`check`)."""

    def __init__(self, name: str, force: Callable[..., Any], tangent: Callable[..., Any] | None = None,
                 period: float | None = None) -> None:
        self.name = name
        self.force = force
        self.tangent_function = tangent
        #: [s] a sampled load's period (its value held between samples, (M15)); None: continuous
        self.period = period
        #: 3 (f returns a force) or 6 (a force and a moment); set by :meth:`check`
        self.n_out = 6
        #: the tangent by the complex step (False: central differences; see :meth:`check`)
        self.complex_step = True

    @property
    def sampled(self) -> bool:
        """Whether the load is sampled (a ``period`` given)."""
        return self.period is not None

    def _call(self, t: float, args: list) -> np.ndarray:
        """f at (t, *args) as a flat array of n_out values (real or complex)."""
        return np.asarray(self.force(t, *args)).reshape(-1)

    def value(self, t: float, x: np.ndarray, R: np.ndarray, v: np.ndarray, w: np.ndarray) -> np.ndarray:
        """The wrench (6,) [force, moment] in global axes at the node's state (M8): zeros for the moment
        of a load that returns a force only."""
        out = np.zeros(6)
        out[:self.n_out] = np.real(self._call(t, [x, R, v, w]))
        return out

    def tangent(self, t: float, x: np.ndarray, R: np.ndarray, v: np.ndarray, w: np.ndarray) -> np.ndarray:
        """∂(force, moment)/∂(x, θ, v, w) (6, 12) at the node's state (M9)-(M11)."""
        out = np.zeros((6, 12))
        if self.tangent_function is not None:
            out[:self.n_out] = np.asarray(self.tangent_function(t, x, R, v, w), dtype=float).reshape(self.n_out, 12)
            return out
        args = [np.asarray(a, dtype=float) for a in (x, R, v, w)]
        for k in range(12):
            col = self._complex_column(t, args, k) if self.complex_step else None
            if col is None:
                h = 6e-6 * (1.0 if k // 3 == 1 else max(1.0, float(np.abs(args[k // 3]).max())))  # (M11)
                col = (np.real(self._call(t, _perturbed(args, k, h))) - np.real(self._call(t, _perturbed(args, k, -h)))) / (2 * h)
            out[:self.n_out, k] = col
        return out

    def _complex_column(self, t: float, args: list, k: int) -> np.ndarray | None:
        """Column k of the tangent by the complex step (M10), or None where f does not carry it."""
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                val = self._call(t, _perturbed(args, k, complex(0.0, _CS)))
        except Exception:
            return None
        if not np.iscomplexobj(val) or not np.all(np.isfinite(val)):
            return None
        return val.imag / _CS

    def check(self, who: str, x: np.ndarray, R: np.ndarray) -> None:
        """At t = 0 with the node at rest at (x, R): a ModelError when f does not return 3 or 6 finite
        numbers or its tangent is not (n_out, 12) and finite. Without a given tangent the complex step is
        compared with central differences off that state (the velocities 0.5, the position 0.1 off);
        where they disagree (abs, max, comparisons) the load takes central differences from then on (M11)."""
        z = np.zeros(3)
        try:
            f0 = np.real(self._call(0.0, [x, R, z, z]))
        except Exception as exc:  # the user's function: its failure is reported, not raised through
            raise ModelError(f"{who}: force(t, x, R, v, w) at t = 0, x = {x.tolist()}, at rest failed "
                             f"({type(exc).__name__}: {exc}); give a function returning a force (3 numbers) or a force "
                             "and a moment (6 numbers) in global axes (docs/motion_forces.md (M8)).") from None
        if f0.size not in (3, 6) or not np.all(np.isfinite(f0)):
            raise ModelError(f"{who}: force(t, x, R, v, w) at t = 0 at rest returned {f0.tolist()}; give 3 finite numbers "
                             "(a force) or 6 (a force and a moment about the node origin), global axes.")
        self.n_out = int(f0.size)
        try:
            d = self.tangent(0.0, x, R, z, z)
        except Exception as exc:
            raise ModelError(f"{who}: the tangent at t = 0 at rest failed ({type(exc).__name__}: {exc}); give "
                             f"tangent(t, x, R, v, w) returning a ({self.n_out}, 12) array "
                             "∂(force, moment)/∂(x, θ, v, w) (docs/motion_forces.md (M9)).") from None
        if not np.all(np.isfinite(d)):
            raise ModelError(f"{who}: the tangent at t = 0 at rest is not finite: {d[:self.n_out].tolist()}.")
        if self.tangent_function is not None:
            return
        off = [x + 0.1, R, z + 0.5, z + 0.5]
        cs = self.tangent(0.0, *off)[:self.n_out]
        self.complex_step = False
        fd = self.tangent(0.0, *off)[:self.n_out]
        scale = float(np.abs(fd).max() + np.abs(cs).max())
        self.complex_step = bool(np.all(np.abs(cs - fd) <= 1e-5 * scale + 1e-9 * (1.0 + float(np.abs(f0).max()))))
        if not math.isfinite(scale):
            raise ModelError(f"{who}: the tangent off the initial state is not finite.")


def sample_loads(model: Model, st: State, initial: bool = False) -> bool:
    """The sampled node loads due at ``st`` (t >= their next sample time, to 1e-9 of the period; ``initial``:
    all, the first sample) take their value from the node's state there (docs/motion_forces.md (M15));
    ``st.elements`` gets a new hold (the old state's is not changed). Nothing without sampled node loads.
    Returns whether a held wrench changed (not at the first sample): the accelerations jump with it (M16)."""
    data = model.elements.get("motion_load")
    if data is None or not any(ld.sampled for ld in data.load):
        return False
    old = st.elements.get(LOAD_HOLD_KEY) if st.elements else None
    if old is None and not initial:
        return False
    hold = np.zeros((data.n, 14)) if old is None else old.copy()
    if old is None:
        hold[:, 12], hold[:, 13] = np.inf, np.nan
    hold[:, 6:12] = hold[:, :6]
    due = [e for e, ld in enumerate(data.load) if ld.sampled and (initial or st.t >= hold[e, 12] - 1e-9 * ld.period)]
    if due:
        from flexmb.engine.kinematics import TreePattern, forward_kinematics  # the engine stands above this module

        kin = forward_kinematics(model, st, TreePattern(model))
        for e in due:
            i, ld = data.node[e], data.load[e]
            hold[e, :6] = ld.value(st.t, kin.x[i] + model.origin, kin.R[i], kin.V[i, :3], kin.V[i, 3:])
            hold[e, 12] = ld.period * (math.floor((st.t + 1e-9 * ld.period) / ld.period) + 1.0)
            hold[e, 13] = st.t
    if initial:
        hold[:, 6:12] = hold[:, :6]
    st.elements = {**st.elements, LOAD_HOLD_KEY: hold}
    return not initial and not np.array_equal(hold[:, :6], hold[:, 6:12])
