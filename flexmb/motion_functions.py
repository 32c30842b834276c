"""A joint force of the motion ``f(t, q, u)`` on one coordinate as a function with its tangents
(docs/motion_forces.md (M1)-(M5)): :class:`MotionForce`, the fields ``Model.mforce`` hold.

This module reads no model (flexmb.model imports it, as it imports flexmb.timefunctions); what the
forces do at a state of a model (their samples, values, recorded rows) is flexmb/motion_forces.py.
"""

from __future__ import annotations

import cmath
import inspect
import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from flexmb.errors import ModelError

__all__ = ["MotionForce", "force_arity", "motion_tangents"]

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
    ``period``: a sampled controller (M6), its value held between samples (flexmb.motion_forces.sample_hold)."""

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
