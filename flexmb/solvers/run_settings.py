"""Checks of ``simulate``'s own settings (each refused with a SettingsError naming the argument,
before anything runs or is written) and the step plan that ends a run exactly at t_end.

The limits and why (flexmb.settings): at most STEPS_MAX steps or output rows, a
:class:`StepsWarning` with their number and cost from STEPS_WARN on; ``tol`` from TOL_MIN and
``rtol`` from RTOL_MIN, below which round-off decides.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from flexmb.errors import SettingsError
from flexmb.settings import DEFAULT_TOL, RTOL_MIN, STEPS_MAX, STEPS_WARN, TOL_MIN, steps_cost
from flexmb.state import State

__all__ = ["check_settings", "check_auto", "check_count", "step_count", "AUTO", "StepsWarning"]


class StepsWarning(UserWarning):
    """A run asks for more than flexmb.settings.STEPS_WARN steps or output rows (the warning says how many and their cost)."""

AUTO = "auto"
"""``simulate(dt=AUTO)``: error-controlled steps (flexmb.solvers.step_control)."""


_MAX_HALVINGS = 40  # dt / 2**40 ~ 1e-12 dt: finer steps stop advancing the time in double precision


def _setting_error(name: str, value, expected: str) -> SettingsError:
    return SettingsError(f"simulate: {name} = {value!r} {expected}.")


def _real(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_)) and math.isfinite(v)


def check_settings(t_end, dt, rho_inf, output_every, rtol, max_halvings, state, callback, progress) -> tuple[int, int]:
    """Refuse invalid ``simulate`` settings with a SettingsError naming the argument; returns
    ``output_every`` and ``max_halvings`` as ints."""
    if not (_real(t_end) and t_end > 0):
        raise _setting_error("t_end", t_end, "must be a positive finite number (seconds)")
    if not (_real(dt) and dt > 0) and dt != AUTO:
        raise _setting_error("dt", dt, "must be a positive finite number (seconds), or 'auto' (error-controlled steps)")
    if not (_real(rho_inf) and 0.0 <= rho_inf <= 1.0):
        raise _setting_error("rho_inf", rho_inf, "must be a number in [0, 1] (1: no numerical dissipation)")
    if not (_real(rtol) and 0.0 < rtol < 1.0):
        raise _setting_error("rtol", rtol, "must be a number in (0, 1) (Newton tolerance, relative)")
    if rtol < RTOL_MIN:
        raise _setting_error("rtol", rtol, f"is below {RTOL_MIN:.2g}, a hundred ulps of the residual: round-off decides "
                             f"the Newton test there (flexmb.settings.RTOL_MIN); give rtol >= {RTOL_MIN:.2g} (default 1e-10)")
    for v, name, lo, hi in ((output_every, "output_every", 1, None), (max_halvings, "max_halvings", 0, _MAX_HALVINGS)):
        if not (_real(v) and float(v).is_integer() and v >= lo and (hi is None or v <= hi)):
            rng = f"from {lo} to {hi}" if hi is not None else f">= {lo}"
            raise _setting_error(name, v, f"must be a whole number {rng}")
    if state is not None and not isinstance(state, State):
        raise _setting_error("state", state, "must be a flexmb.State (e.g. model.initial_state()) or None")
    if state is not None and not (_real(state.t) and state.t < t_end and (t_end - state.t) >= 1e-12 * abs(t_end)):
        raise _setting_error("state", f"<State at t = {state.t!r}>", f"must start before t_end = {t_end!r} "
                             "(the run goes from state.t to t_end)")
    for v, name in ((callback, "callback"), (progress, "progress")):
        if v is not None and not callable(v):
            raise _setting_error(name, v, "must be a function or None")
    if dt != AUTO:
        t0 = 0.0 if state is None else float(state.t)
        check_count("dt", dt, (t_end - t0) / dt, "{n} steps", t_end, "give a larger dt, or dt='auto' (error-controlled steps)")
    return int(output_every), int(max_halvings)


def check_count(name: str, value, n: float, what: str, t_end: float, remedy: str) -> None:
    """Refuse the ``n`` steps or rows (``what``) that setting ``name`` = ``value`` gives up to ``t_end``
    above STEPS_MAX (SettingsError), warn above STEPS_WARN (:class:`StepsWarning`), saying how many and their cost."""
    gives = f"gives {what.format(n=f'{n:.3g}')} to t_end = {t_end!r} s"
    if n > STEPS_MAX:
        raise _setting_error(name, value, f"{gives}, more than {STEPS_MAX:.0e} ({steps_cost(n)}); {remedy}")
    if n > STEPS_WARN:
        warnings.warn(f"simulate: {name} = {value!r} {gives}, more than {STEPS_WARN:.0e}: {steps_cost(n)}; {remedy} "
                      "unless the run needs them", StepsWarning, stacklevel=4)


def step_count(t0: float, t_end: float, dt: float) -> tuple[int, bool]:
    """Steps from ``t0`` to ``t_end`` with ``dt`` and whether t_end is on the grid t0 + i dt (to
    1e-9 of a step, so round-off in the division gives no sliver of a last step); otherwise the
    last step is shorter."""
    ratio = (t_end - t0) / dt
    n = round(ratio)
    if n >= 1 and abs(ratio - n) <= 1e-9 * ratio:
        return n, True
    return math.ceil(ratio), False


def check_auto(dt, t0: float, t_end: float, tol, output_dt, dt_max, output_every: int) -> None:
    """Refuse the settings of error-controlled steps that do not fit (SettingsError naming the
    argument): ``tol`` in (0, 1), ``output_dt`` and ``dt_max`` positive and at most the run,
    none of them with a fixed ``dt``, and ``output_dt`` not together with ``output_every``."""
    auto = dt == AUTO
    for v, name in ((tol, "tol"), (output_dt, "output_dt"), (dt_max, "dt_max")):
        if v is not None and not auto:
            raise _setting_error(name, v, f"applies to error-controlled steps only: give dt='auto' (dt = {dt!r} is a "
                                 "fixed step; its outputs are set by output_every)")
    if tol is not None and not (_real(tol) and 0.0 < tol < 1.0):
        raise _setting_error("tol", tol, "must be a number in (0, 1) (error per unit step relative to the motion)")
    if tol is not None and tol < TOL_MIN:
        raise _setting_error("tol", tol, f"is below {TOL_MIN:.2g}, where the round-off of the steps exceeds the error "
                             f"asked for: a smaller tol only adds steps (flexmb.settings.TOL_MIN); give tol >= "
                             f"{TOL_MIN:.2g} (default {DEFAULT_TOL:g})")
    span = t_end - t0
    for v, name in ((output_dt, "output_dt"), (dt_max, "dt_max")):
        if v is not None and not (_real(v) and 1e-12 * span <= v):
            raise _setting_error(name, v, f"must be a positive number of seconds, at least 1e-12 of the run ({span!r} s)")
    if output_dt is not None:
        check_count("output_dt", output_dt, span / output_dt, "{n} output rows", t_end, "give a larger output_dt")
    if dt_max is not None:
        check_count("dt_max", dt_max, span / dt_max, "at least {n} steps", t_end, "give a larger dt_max")
    if output_dt is not None and output_every != 1:
        raise _setting_error("output_every", output_every, "cannot be given with output_dt (rows at multiples of "
                             "output_dt); give one of them")
