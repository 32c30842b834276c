"""Time functions for drives and loads, with reliable derivatives.

A driven coordinate needs q(t), q'(t), q''(t). When the user gives only q(t), the
derivatives are computed by the complex step (first derivative, exact to round-off) and
Richardson-extrapolated central differences of complex steps (second derivative); for a
function that does not accept complex arguments, Richardson-extrapolated central
differences are used for both.
"""

from __future__ import annotations

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


def _accepts_complex(f: Callable[[float], Any], t: float) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            val = np.asarray(f(t + 1j * _CS))
    except Exception:
        return False
    return np.iscomplexobj(val) and np.all(np.isfinite(val))


def _cs_first(f: Callable, t: float) -> float:
    return float(np.imag(f(t + 1j * _CS)) / _CS)


def derivative(f: Callable[[float], float], t: float) -> float:
    """First derivative of ``f`` at ``t`` (complex step, else Richardson central differences)."""
    if _accepts_complex(f, t):
        return _cs_first(f, t)
    h = 1e-3 * max(1.0, abs(t))
    d = [(float(f(t + s)) - float(f(t - s))) / (2 * s) for s in (h, h / 2)]
    return (4 * d[1] - d[0]) / 3


def second_derivative(f: Callable[[float], float], t: float) -> float:
    """Second derivative of ``f`` at ``t`` (central differences of the first, Richardson)."""
    h = 1e-3 * max(1.0, abs(t))
    if _accepts_complex(f, t):
        d = [(_cs_first(f, t + s) - _cs_first(f, t - s)) / (2 * s) for s in (h, h / 2)]
    else:
        f0 = float(f(t))
        d = [(float(f(t + s)) - 2 * f0 + float(f(t - s))) / (s * s) for s in (h, h / 2)]
    return (4 * d[1] - d[0]) / 3


class ScalarDrive:
    """Position, velocity and acceleration of a driven coordinate as functions of time."""

    def __init__(
        self,
        position: Callable[[float], float],
        velocity: Callable[[float], float] | None = None,
        acceleration: Callable[[float], float] | None = None,
    ) -> None:
        self.position = position
        self.velocity = velocity
        self.acceleration = acceleration

    def __call__(self, t: float) -> tuple[float, float, float]:
        """Return ``(q, q', q'')`` at time ``t``."""
        q = float(np.real(self.position(t)))
        v = float(self.velocity(t)) if self.velocity is not None else derivative(self.position, t)
        if self.acceleration is not None:
            a = float(self.acceleration(t))
        elif self.velocity is not None:
            a = derivative(self.velocity, t)
        else:
            a = second_derivative(self.position, t)
        return q, v, a
