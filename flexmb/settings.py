"""Run settings: the one place their defaults, their limits and their checks live.

A run is ``simulate(model, t_end, dt, rho_inf=..., output_every=..., tol=...)``; a case file gives
the same names in its DEFAULTS (t_end and dt required; dt a step in seconds or ``"auto"`` for
error-controlled steps with ``tol``, flexmb.solvers.step_control). :class:`RunSettings` holds them for the
run pipeline (flexmb.app.run), the command line and sweeps; ``simulate`` and
``GeneralizedAlpha`` take their default ρ∞ from :data:`RHO_INF`.

Limits (refused with a :class:`~flexmb.errors.SettingsError` naming the setting, here and by
``simulate``):

* more than :data:`STEPS_MAX` = 1e9 steps (t_end / dt; with ``dt="auto"``, t_end / dt_max at
  least; output rows t_end / output_dt alike): at the fastest flexmb step, about 10 µs (a small
  rigid tree, compiled), 3 hours at least, at the 1 ms of a flexible model 12 days; ``simulate``
  warns from :data:`STEPS_WARN` = 1e7 on (3 minutes to 3 hours), with the count and that cost;
* ``tol`` below :data:`TOL_MIN` = (ε² / 12)^(1/3) ≈ 1.6e-11 (ε: the double precision epsilon). tol is
  the error per unit step relative to the motion (flexmb.solvers.step_control, E3): the global error
  is about tol × ℓ over a run that moves the model its length ℓ, in N ≈ sqrt(C / tol) steps at best
  (local error C h² q⃛ with C ≤ 1/12, E2, on a motion as slow as the run), each rounding the positions by
  ε ℓ. Below TOL_MIN that round-off, N ε ℓ, exceeds the error asked for, so a smaller tol only adds
  steps (tol = 1e-300 crept to t = 0.007 of 0.5 s in a minute);
* ``rtol`` (simulate's Newton tolerance, relative to the force scale) below :data:`RTOL_MIN` =
  100 ε ≈ 2.2e-14: the residual sums inertia, gravity, spring and element forces node by node and
  along the tree, each rounded to ε of its size, so below a hundred ulps its size is round-off and
  the test passes or fails by chance.

``simulate`` checks its own arguments here too (:func:`check_settings`, :func:`check_auto`; each
refused with a SettingsError naming the argument, before anything runs or is written), warns of
many steps with a :class:`StepsWarning` (:func:`check_count`) and plans the steps that end a run
exactly at t_end (:func:`step_count`).
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from flexmb.errors import SettingsError
from flexmb.state import State

__all__ = ["RHO_INF", "OUTPUT_EVERY", "DEFAULT_TOL", "RTOL_MIN", "TOL_MIN", "STEPS_WARN", "STEPS_MAX", "RunSettings",
           "SETTING_NAMES", "steps_cost", "check_settings", "check_auto", "check_count", "step_count", "AUTO", "StepsWarning"]

RHO_INF = 0.9
"""Default spectral radius at infinite frequency of generalized-α (1: no numerical dissipation)."""
OUTPUT_EVERY = 1
"""Default output interval: record every step."""
DEFAULT_TOL = 1e-4
"""Default ``tol`` of ``dt="auto"``: error per unit step relative to the motion (flexmb.solvers.step_control, E3)."""
_EPS = 2.0**-52  # the double precision epsilon
TOL_MIN = (_EPS**2 / 12.0) ** (1.0 / 3.0)
"""The smallest ``tol`` (about 1.6e-11): below it the steps' round-off exceeds the error asked for (module docstring)."""
RTOL_MIN = 100.0 * _EPS
"""The smallest Newton ``rtol`` of ``simulate`` (about 2.2e-14): a hundred ulps of the residual (module docstring)."""
STEPS_WARN = 10**7
"""``simulate`` warns of a run of more steps (or output rows) than this, with their number and cost."""
STEPS_MAX = 10**9
"""A run of more steps (or output rows) than this is refused."""
_STEP_COST = (1e-5, 1e-3)  # seconds per step: a small rigid tree (compiled), a flexible model of some hundred elements


def steps_cost(n: float) -> str:
    """What ``n`` steps cost: "<fastest> at 10 µs a step (a small rigid tree), <typical> at 1 ms (a flexible model)"."""
    fast, slow = (_duration(n * c) for c in _STEP_COST)
    return f"{fast} at 10 µs a step (a small rigid tree), {slow} at 1 ms (a flexible model)"


def _duration(seconds: float) -> str:
    for unit, size in (("days", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= size:
            return f"{seconds / size:.3g} {unit}"
    return f"{seconds:.3g} s"


@dataclass(frozen=True)
class RunSettings:
    """How a model is run in time.

    t_end: end time [s] (> 0); dt: time step [s] (> 0) or ``"auto"`` (error-controlled steps);
    rho_inf: spectral radius of generalized-α at infinite frequency, in [0, 1]; output_every:
    record every n-th step (>= 1); tol: the error tolerance of ``dt="auto"`` (None: the default
    of flexmb.solvers.step_control); output_dt: with ``dt="auto"``, rows at its multiples (None:
    at every ``output_every``-th step). Construction checks the values (ValueError naming the setting)."""

    t_end: float
    dt: float | str
    rho_inf: float = RHO_INF
    output_every: int = OUTPUT_EVERY
    tol: float | None = None
    output_dt: float | None = None

    def __post_init__(self) -> None:
        for key in ("t_end", "dt"):
            v = getattr(self, key)
            if key == "dt" and v == "auto":
                continue
            if not (_real(v) and math.isfinite(v) and v > 0):
                raise ValueError(f"{key} = {v!r} must be a positive number (e.g. {key}=0.001)"
                                 + (" or 'auto' (error-controlled steps)" if key == "dt" else ""))
        if self.tol is not None:
            if self.dt != "auto":
                raise ValueError(f"tol = {self.tol!r} applies to error-controlled steps only: set dt='auto' "
                                 f"(dt = {self.dt!r} is a fixed step)")
            if not (_real(self.tol) and 0.0 < self.tol < 1.0):
                raise ValueError(f"tol = {self.tol!r} must be a number in (0, 1) (e.g. tol=1e-4)")
            if self.tol < TOL_MIN:
                raise SettingsError(f"tol = {self.tol!r} is below {TOL_MIN:.2g}, where the round-off of the steps exceeds "
                                    "the error asked for: a smaller tol only adds steps (flexmb.settings.TOL_MIN)",
                                    f"give tol >= {TOL_MIN:.2g} (default {DEFAULT_TOL:g})")
        if self.output_dt is not None:
            if self.dt != "auto":
                raise ValueError(f"output_dt = {self.output_dt!r} applies to error-controlled steps only: set dt='auto' "
                                 "(with a fixed dt, rows come every output_every steps)")
            if not (_real(self.output_dt) and math.isfinite(self.output_dt) and self.output_dt > 0):
                raise ValueError(f"output_dt = {self.output_dt!r} must be a positive number of seconds (e.g. output_dt=0.01)")
        if not (_real(self.rho_inf) and 0.0 <= self.rho_inf <= 1.0):
            raise ValueError(f"rho_inf = {self.rho_inf!r} must lie in [0, 1] "
                             "(1: no numerical dissipation; 0.8 damps high frequencies)")
        oe = self.output_every
        if not (isinstance(oe, numbers.Integral) and not isinstance(oe, bool) and oe >= 1):
            raise ValueError(f"output_every = {oe!r} must be a positive integer (e.g. output_every=10)")
        for key, what in (("dt", "steps"), ("output_dt", "output rows")):
            v = getattr(self, key)
            if v != "auto" and v is not None and self.t_end / v > STEPS_MAX:
                raise SettingsError(f"{key} = {v!r} gives {self.t_end / v:.3g} {what} to t_end = {self.t_end!r} s, more "
                                    f"than {STEPS_MAX:.0e} ({steps_cost(self.t_end / v)})",
                                    f"give a larger {key}" + (", or dt='auto' (error-controlled steps)" if key == "dt" else ""))

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> RunSettings:
        """The settings named in ``params`` (a case's resolved parameters); rho_inf and
        output_every default to :data:`RHO_INF` and :data:`OUTPUT_EVERY`, tol and output_dt to None."""
        return cls(params["t_end"], params["dt"], params.get("rho_inf", RHO_INF), params.get("output_every", OUTPUT_EVERY),
                   params.get("tol"), params.get("output_dt"))

    def as_dict(self) -> dict[str, Any]:
        """The settings by name (simulate's keyword arguments)."""
        return asdict(self)

    def describe(self) -> str:
        """One line: the end time and the step choice (fixed dt, or error-controlled with its tol)."""
        if self.dt == "auto":
            tol = DEFAULT_TOL if self.tol is None else self.tol
            rows = f", rows every {self.output_dt:g} s" if self.output_dt is not None else ""
            steps = f"error-controlled steps (dt = auto, tol = {tol:g}{rows})"
        else:
            steps = f"fixed steps dt = {self.dt:g} s"
        return f"t_end = {self.t_end:g} s, {steps}, rho_inf = {self.rho_inf:g}"


SETTING_NAMES = ("t_end", "dt", "rho_inf", "output_every", "tol", "output_dt")
"""The run settings' names: in a case's DEFAULTS they are not model parameters."""


def _real(v: Any) -> bool:
    """A real number (any numbers.Real, booleans refused), finite or not: RunSettings' values."""
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


# ------------------------------------------------------------------ simulate's own checks
class StepsWarning(UserWarning):
    """A run asks for more than flexmb.settings.STEPS_WARN steps or output rows (the warning says how many and their cost)."""


AUTO = "auto"
"""``simulate(dt=AUTO)``: error-controlled steps (flexmb.solvers.step_control)."""


_MAX_HALVINGS = 40  # dt / 2**40 ~ 1e-12 dt: finer steps stop advancing the time in double precision


def _setting_error(name: str, value, expected: str) -> SettingsError:
    return SettingsError(f"simulate: {name} = {value!r} {expected}.")


def _finite_real(v) -> bool:
    """A finite real number (numpy's included; booleans refused): simulate's arguments."""
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_)) and math.isfinite(v)


def check_settings(t_end, dt, rho_inf, output_every, rtol, max_halvings, state, callback, progress) -> tuple[int, int]:
    """Refuse invalid ``simulate`` settings with a SettingsError naming the argument; returns
    ``output_every`` and ``max_halvings`` as ints."""
    if not (_finite_real(t_end) and t_end > 0):
        raise _setting_error("t_end", t_end, "must be a positive finite number (seconds)")
    if not (_finite_real(dt) and dt > 0) and dt != AUTO:
        raise _setting_error("dt", dt, "must be a positive finite number (seconds), or 'auto' (error-controlled steps)")
    if not (_finite_real(rho_inf) and 0.0 <= rho_inf <= 1.0):
        raise _setting_error("rho_inf", rho_inf, "must be a number in [0, 1] (1: no numerical dissipation)")
    if not (_finite_real(rtol) and 0.0 < rtol < 1.0):
        raise _setting_error("rtol", rtol, "must be a number in (0, 1) (Newton tolerance, relative)")
    if rtol < RTOL_MIN:
        raise _setting_error("rtol", rtol, f"is below {RTOL_MIN:.2g}, a hundred ulps of the residual: round-off decides "
                             f"the Newton test there (flexmb.settings.RTOL_MIN); give rtol >= {RTOL_MIN:.2g} (default 1e-10)")
    for v, name, lo, hi in ((output_every, "output_every", 1, None), (max_halvings, "max_halvings", 0, _MAX_HALVINGS)):
        if not (_finite_real(v) and float(v).is_integer() and v >= lo and (hi is None or v <= hi)):
            rng = f"from {lo} to {hi}" if hi is not None else f">= {lo}"
            raise _setting_error(name, v, f"must be a whole number {rng}")
    if state is not None and not isinstance(state, State):
        raise _setting_error("state", state, "must be a flexmb.State (e.g. model.initial_state()) or None")
    if state is not None and not (_finite_real(state.t) and state.t < t_end and (t_end - state.t) >= 1e-12 * abs(t_end)):
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
    if tol is not None and not (_finite_real(tol) and 0.0 < tol < 1.0):
        raise _setting_error("tol", tol, "must be a number in (0, 1) (error per unit step relative to the motion)")
    if tol is not None and tol < TOL_MIN:
        raise _setting_error("tol", tol, f"is below {TOL_MIN:.2g}, where the round-off of the steps exceeds the error "
                             f"asked for: a smaller tol only adds steps (flexmb.settings.TOL_MIN); give tol >= "
                             f"{TOL_MIN:.2g} (default {DEFAULT_TOL:g})")
    span = t_end - t0
    for v, name in ((output_dt, "output_dt"), (dt_max, "dt_max")):
        if v is not None and not (_finite_real(v) and 1e-12 * span <= v):
            raise _setting_error(name, v, f"must be a positive number of seconds, at least 1e-12 of the run ({span!r} s)")
    if output_dt is not None:
        check_count("output_dt", output_dt, span / output_dt, "{n} output rows", t_end, "give a larger output_dt")
    if dt_max is not None:
        check_count("dt_max", dt_max, span / dt_max, "at least {n} steps", t_end, "give a larger dt_max")
    if output_dt is not None and output_every != 1:
        raise _setting_error("output_every", output_every, "cannot be given with output_dt (rows at multiples of "
                             "output_dt); give one of them")
