"""Time functions for drives and loads, with reliable derivatives.

A driven coordinate needs q(t), q'(t), q''(t). When the user gives only q(t), the
derivatives are computed by the complex step (first derivative, exact to round-off) and
Richardson-extrapolated central differences of complex steps (second derivative); for a
function that does not accept complex arguments, Richardson-extrapolated central
differences are used for both.
"""

from __future__ import annotations

import cmath
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from flexmb.errors import ModelError

__all__ = ["as_time_function", "ScalarDrive", "derivative", "second_derivative"]

_CS = 1e-30


def as_time_function(value: Any, name: str) -> Callable[[float], np.ndarray]:
    """Wrap a constant vector or a callable ``f(t)`` into a callable returning a float array."""
    if callable(value):
        return value
    arr = np.asarray(value, dtype=float)
    if not np.all(np.isfinite(arr)):
        raise ModelError(f"{name}: value {arr.tolist()} is not finite; give finite numbers.")
    return lambda t, _a=arr: _a


def _complex_step(f: Callable[[float], Any], t: float) -> Any:
    """f(t + i h) for the complex step h, or None when ``f`` does not take complex arguments
    there (raises, warns, returns a real or a non-finite value)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            val = f(t + 1j * _CS)
    except Exception:
        return None
    if isinstance(val, (complex, np.complexfloating)):  # a scalar (the common case): no array made
        return val if cmath.isfinite(val) else None
    val = np.asarray(val)
    return val if np.iscomplexobj(val) and np.all(np.isfinite(val)) else None


def _accepts_complex(f: Callable[[float], Any], t: float) -> bool:
    return _complex_step(f, t) is not None


def _cs_first(f: Callable, t: float) -> float:
    val = f(t + 1j * _CS)
    if isinstance(val, (complex, np.complexfloating)):
        return float(val.imag / _CS)
    return float(np.imag(val) / _CS)


def derivative(f: Callable[[float], float], t: float, val: Any = False) -> float:
    """First derivative of ``f`` at ``t`` (complex step, else Richardson central differences);
    ``val``: f's complex step at t when already known (:func:`_complex_step`, None: not complex-safe)."""
    if val is False:
        val = _complex_step(f, t)
    if val is not None:  # the complex step's value itself: f is evaluated once
        return float(val.imag / _CS)
    h = 1e-3 * max(1.0, abs(t))
    d = [(float(f(t + s)) - float(f(t - s))) / (2 * s) for s in (h, h / 2)]
    return (4 * d[1] - d[0]) / 3


def second_derivative(f: Callable[[float], float], t: float, complex_safe: bool | None = None) -> float:
    """Second derivative of ``f`` at ``t`` (central differences of the first, Richardson);
    ``complex_safe``: whether f takes the complex step at t, when already known."""
    h = 1e-3 * max(1.0, abs(t))
    if _accepts_complex(f, t) if complex_safe is None else complex_safe:
        d = [(_cs_first(f, t + s) - _cs_first(f, t - s)) / (2 * s) for s in (h, h / 2)]
    else:
        f0 = float(f(t))
        d = [(float(f(t + s)) - 2 * f0 + float(f(t - s))) / (s * s) for s in (h, h / 2)]
    return (4 * d[1] - d[0]) / 3


class ScalarDrive:
    """Position, velocity and acceleration of a driven coordinate as functions of time.

    The last time asked and its values are kept: the Newton iterations of a step ask for the
    same time again and again, and differentiating the user's function costs several calls."""

    def __init__(
        self,
        position: Callable[[float], float],
        velocity: Callable[[float], float] | None = None,
        acceleration: Callable[[float], float] | None = None,
    ) -> None:
        self.position = position
        self.velocity = velocity
        self.acceleration = acceleration
        self._last: tuple[float, tuple[float, float, float]] | None = None

    def __call__(self, t: float) -> tuple[float, float, float]:
        """Return ``(q, q', q'')`` at time ``t``."""
        last = self._last
        if last is not None and last[0] == t:
            return last[1]
        out = self._values(t)
        self._last = (t, out)
        return out

    def _values(self, t: float) -> tuple[float, float, float]:
        q = float(np.real(self.position(t)))
        if self.velocity is not None:
            v = float(self.velocity(t))
        else:  # the complex step at t serves the first derivative and the test for the second
            val = _complex_step(self.position, t)
            v = derivative(self.position, t, val)
        if self.acceleration is not None:
            a = float(self.acceleration(t))
        elif self.velocity is not None:
            a = derivative(self.velocity, t)
        else:
            a = second_derivative(self.position, t, val is not None)
        return q, v, a
