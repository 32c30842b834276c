"""Drive derivatives (flexmb.timefunctions): complex step where the user's function takes it,
Richardson central differences where it does not, against closed forms."""

from __future__ import annotations

import math

import numpy as np
import pytest

from flexmb.timefunctions import ScalarDrive, _complex_step, derivative, second_derivative

T = 1.3


def _closed(t: float) -> tuple[float, float, float]:
    """q = sin(2t) + t³/3 and its derivatives."""
    return math.sin(2 * t) + t**3 / 3, 2 * math.cos(2 * t) + t**2, -4 * math.sin(2 * t) + 2 * t


POSITIONS = {
    "numpy scalar": lambda t: np.sin(2 * t) + t**3 / 3,  # complex-safe, returns a numpy complex scalar
    "python complex": lambda t: complex(np.sin(2 * t)) + t**3 / 3 if isinstance(t, complex) else math.sin(2 * t) + t**3 / 3,
    "0-d array": lambda t: np.asarray(np.sin(2 * t) + t**3 / 3),
    "math (not complex-safe)": lambda t: math.sin(2 * t) + t**3 / 3,
}


@pytest.mark.parametrize("kind", list(POSITIONS))
def test_drive_values_match_closed_form(kind):
    q, v, a = ScalarDrive(POSITIONS[kind])(T)
    q0, v0, a0 = _closed(T)
    assert q == pytest.approx(q0, abs=1e-15)
    if kind.startswith("math"):  # differences: Richardson's h⁴ error (h = 1e-3) and round-off ~ eps/h²
        assert v == pytest.approx(v0, abs=1e-9)
        assert a == pytest.approx(a0, abs=1e-6)
    else:  # complex step: the first derivative exact to round-off
        assert v == pytest.approx(v0, rel=1e-15, abs=1e-15)
        assert a == pytest.approx(a0, abs=1e-8)


def test_complex_step_is_refused_when_the_function_is_not_complex_safe():
    """A function that raises, warns (casts the complex argument to real), returns a real or a
    non-finite value does not take the complex step: the differences are used instead."""

    def warns(t):
        out = np.zeros(1)
        out[0] = t  # ComplexWarning: discards the imaginary part
        return out[0] ** 2

    assert _complex_step(math.sin, T) is None  # raises TypeError
    assert _complex_step(warns, T) is None
    assert _complex_step(lambda t: 1.0, T) is None  # a real value
    assert _complex_step(lambda t: complex(np.inf, 1.0) * t, T) is None
    assert _complex_step(lambda t: np.array([t, np.nan * t]), T) is None
    assert _complex_step(np.sin, T) is not None
    assert derivative(warns, T) == pytest.approx(2 * T, abs=1e-9)
    assert second_derivative(warns, T) == pytest.approx(2.0, abs=1e-6)


def test_given_derivatives_are_used_and_the_last_time_is_kept():
    calls = []

    def q(t):
        calls.append(t)
        return np.cos(t)

    d = ScalarDrive(q, velocity=lambda t: -math.sin(t), acceleration=lambda t: -math.cos(t))
    assert d(T) == (math.cos(T), -math.sin(T), -math.cos(T))
    n = len(calls)
    assert d(T) == (math.cos(T), -math.sin(T), -math.cos(T)) and len(calls) == n  # the same time again: cached
    d2 = ScalarDrive(lambda t: np.cos(t), velocity=lambda t: -np.sin(t))  # acceleration from the velocity's complex step
    assert d2(T)[2] == pytest.approx(-math.cos(T), rel=1e-14)
