"""Argument checks of the builder: every value is checked where it is given.

Each helper takes the value, ``who`` (the call and item, e.g. ``"add_body('arm')"``) and
``what`` (the argument), and returns the value in the form the builder stores, or raises a
ModelError saying ``<who>: <what> = <value> ...`` and what is expected. Numbers are ints or
floats (numpy's included); booleans, strings (also numeric ones), complex numbers and None
are refused, and so are integers too large for a float (10**400).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from numbers import Integral, Real
from typing import Any

import numpy as np

from flexmb.errors import ModelError
from flexmb.timefunctions import ScalarDrive

__all__ = ["name", "node_name", "number", "integer", "flag", "vector", "array", "matrix3", "rotation", "unit", "direction",
           "time_function", "drive", "finite_law"]


def _show(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def name(value: Any, who: str, what: str = "name") -> str:
    """A non-empty string naming an item."""
    if not isinstance(value, str) or not value:
        raise ModelError(f"{who}: {what} {_show(value)} must be a non-empty string.")
    return value


def node_name(value: Any, who: str, what: str = "node") -> str:
    """A string naming a node (or ``"ground"``); existence is checked by the caller."""
    if not isinstance(value, str) or not value:
        raise ModelError(f"{who}: {what} {_show(value)} must be a node name (a non-empty string).")
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, (Real, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def _to_float(value: Any, who: str, what: str) -> float:
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf":
        value = value.item()  # a 0-d numeric array is a number
    if not _is_number(value):
        kind = "a boolean" if isinstance(value, (bool, np.bool_)) else f"of type {type(value).__name__}"
        raise ModelError(f"{who}: {what} = {_show(value)} is {kind}; give a number.")
    try:
        return float(value)
    except OverflowError:
        raise ModelError(f"{who}: {what} = {_show(value)} is too large for a floating-point number.") from None


def number(value: Any, who: str, what: str, *, positive: bool = False, nonnegative: bool = False) -> float:
    """A finite real number (``positive``: > 0, ``nonnegative``: >= 0) as a float."""
    x = _to_float(value, who, what)
    if not math.isfinite(x):
        raise ModelError(f"{who}: {what} = {x!r} is NaN or inf; give a finite number.")
    if positive and not x > 0:
        raise ModelError(f"{who}: {what} = {x!r} must be a positive finite number.")
    if nonnegative and not x >= 0:
        raise ModelError(f"{who}: {what} = {x!r} must be a finite number >= 0.")
    return x


def integer(value: Any, who: str, what: str, low: int | None = None, high: int | None = None) -> int:
    """An integer (not a boolean, not a float such as 0.5) in ``[low, high)``."""
    if not isinstance(value, (Integral, np.integer)) or isinstance(value, (bool, np.bool_)):
        raise ModelError(f"{who}: {what} = {_show(value)} must be an integer.")
    i = int(value)
    if (low is not None and i < low) or (high is not None and i >= high):
        rng = f">= {low}" if high is None else f"in {low} .. {high - 1}"
        raise ModelError(f"{who}: {what} = {i} must be {rng}.")
    return i


def flag(value: Any, who: str, what: str) -> bool:
    """A boolean (True/False)."""
    if not isinstance(value, (bool, np.bool_)):
        raise ModelError(f"{who}: {what} = {_show(value)} must be True or False.")
    return bool(value)


def _array(value: Any, who: str, what: str, expect: str) -> np.ndarray:
    """A float array from numbers only: refuses strings, booleans, complex, None, ragged lists."""
    if isinstance(value, (str, bytes, dict, set)) or value is None:
        raise ModelError(f"{who}: {what} = {_show(value)} is not {expect}.")
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError, OverflowError):
        raise ModelError(f"{who}: {what} = {_show(value)} is not {expect}.") from None
    if arr.dtype.kind in "iuf":
        return arr.astype(float)
    if arr.dtype.kind == "O" and arr.size:
        flat = [_to_float(v, who, f"{what} entry") for v in arr.ravel()]
        return np.array(flat, dtype=float).reshape(arr.shape)
    kind = {"b": "booleans", "U": "strings", "S": "strings", "c": "complex numbers"}.get(arr.dtype.kind, "not numbers")
    raise ModelError(f"{who}: {what} = {_show(value)} holds {kind}; give {expect}.")


def vector(value: Any, n: int, who: str, what: str) -> np.ndarray:
    """``n`` finite numbers as a float array of shape (n,)."""
    arr = _array(value, who, what, f"a list of {n} numbers")
    if arr.shape != (n,):
        raise ModelError(f"{who}: {what}: expected {n} numbers, got shape {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        raise ModelError(f"{who}: {what} = {arr.tolist()} contains NaN or inf; give finite numbers.")
    return arr


def array(value: Any, shapes: tuple[tuple[int, ...], ...], who: str, what: str, expect: str) -> np.ndarray:
    """Finite numbers in one of ``shapes`` (checked in that order)."""
    arr = _array(value, who, what, expect)
    if arr.shape not in shapes:
        raise ModelError(f"{who}: {what}: give {expect}, got shape {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        raise ModelError(f"{who}: {what} contains NaN or inf; give finite numbers.")
    return arr


def matrix3(value: Any, who: str, what: str) -> np.ndarray:
    """A finite 3x3 matrix."""
    return array(value, ((3, 3),), who, what, "a 3x3 matrix")


def rotation(value: Any, who: str, what: str) -> np.ndarray:
    """A proper rotation matrix (orthonormal columns, det 1)."""
    R = matrix3(value, who, what)
    if np.abs(R.T @ R - np.eye(3)).max() > 1e-9 or np.linalg.det(R) < 0:
        raise ModelError(f"{who}: {what} is not a proper rotation matrix (R^T R = I, det R = 1).")
    return R


def unit(value: Any, who: str, what: str) -> np.ndarray:
    """A direction: 3 finite numbers, not of zero length (< 1e-12), returned normalised.
    Entries so large that the length overflows (1e200) are first divided by the largest."""
    a = vector(value, 3, who, what)
    n = float(np.linalg.norm(a))
    if math.isinf(n):
        a = a / np.abs(a).max()
        n = float(np.linalg.norm(a))
    if not n >= 1e-12:
        raise ModelError(f"{who}: {what} {a.tolist()} has zero length; give a nonzero direction.")
    return a / n


def direction(value: Any, who: str, what: str) -> np.ndarray:
    """3 finite numbers giving a direction (not normalised); entries whose squares would
    overflow or vanish are scaled by the largest entry, which keeps the direction."""
    a = vector(value, 3, who, what)
    big = float(np.abs(a).max())
    if big > 1e100 or 0 < big < 1e-100:
        a = a / big
    return a


def time_function(value: Any, shape: tuple[int, ...], who: str, what: str) -> Callable[[float], Any]:
    """A constant of ``shape`` (returned as a function of time) or a function of time whose
    value at t = 0 has that shape and is finite. The function itself is returned unchanged."""
    n_text = "a number" if shape == () else f"{shape[0]} numbers"
    if callable(value):
        try:
            v0 = value(0.0)
        except Exception as exc:  # a user function: any failure is the user's to fix
            raise ModelError(f"{who}: {what}(0.0) failed ({type(exc).__name__}: {exc}); "
                             f"give a function of time returning {n_text}.") from None
        arr = _array(v0, who, f"{what}(0.0)", n_text)
        if arr.shape != shape:
            raise ModelError(f"{who}: {what}(0.0) returned shape {arr.shape}; give a function of time returning {n_text}.")
        if not np.all(np.isfinite(arr)):
            raise ModelError(f"{who}: {what}(0.0) = {arr.tolist()} is not finite.")
        return value
    if shape == ():
        c = number(value, who, what)
        return lambda t, _c=c: _c
    arr = _array(value, who, what, f"{n_text} or a function of time returning them")
    if arr.shape != shape:
        raise ModelError(f"{who}: {what}: expected {n_text} (or a function of time), got shape {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        raise ModelError(f"{who}: {what} = {arr.tolist()} is not finite; give finite numbers.")
    return lambda t, _a=arr: _a


def drive(functions: tuple[tuple[Any, str], ...], who: str, values: str) -> tuple[ScalarDrive, tuple[float, float, float]]:
    """A ScalarDrive of ``functions``, (position, velocity, acceleration) each with its argument's name (the
    first required, the others None for the complex step's derivatives), and its values at t = 0: each
    given one a function of time returning a number (:func:`time_function`), the three values finite
    (``values`` names them in the messages, e.g. "q, q', q''")."""
    for i, (f, what) in enumerate(functions):
        if (f is not None or i == 0) and not callable(f):
            raise ModelError(f"{who}: {what} = {f!r} must be a function of time returning a number.")
        if f is not None:
            time_function(f, (), who, what)
    d = ScalarDrive(*(f for f, _ in functions))
    try:
        vals = d(0.0)
    except Exception as exc:  # the user's functions: their failure is reported, not raised through
        raise ModelError(f"{who}: {values} at t = 0 could not be computed ({type(exc).__name__}: {exc}); "
                         "give functions of time returning one number each.") from None
    if not all(np.isfinite(v) for v in vals):
        raise ModelError(f"{who}: {values} at t = 0 are {vals}: not finite.")
    return d, vals


def finite_law(value: Any, who: str, call: str, unit: str, what: str) -> None:
    """A ModelError unless ``value``, a force or torque law's value at ``call`` (its text, e.g.
    "law(0.0, 0.0, 0.0)"), is one finite number in ``unit``; ``what`` the quantity it gives."""
    try:
        ok = np.isfinite(float(value))
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ModelError(f"{who}: {call} = {value!r} is not a finite number [{unit}]; the law gives the {what} as one float.")
