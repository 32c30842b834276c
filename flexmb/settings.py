"""Run settings: the one place their defaults live.

A run is ``simulate(model, t_end, dt, rho_inf=..., output_every=..., tol=...)``; a case file gives
the same names in its DEFAULTS (t_end and dt required; dt a step in seconds or ``"auto"`` for
error-controlled steps with ``tol``, flexmb.solvers.step_control). :class:`RunSettings` holds them for the
run pipeline (flexmb.app.run), the command line and sweeps; ``simulate`` and
``GeneralizedAlpha`` take their default ρ∞ from :data:`RHO_INF`.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["RHO_INF", "OUTPUT_EVERY", "DEFAULT_TOL", "RunSettings", "SETTING_NAMES"]

RHO_INF = 0.9
"""Default spectral radius at infinite frequency of generalized-α (1: no numerical dissipation)."""
OUTPUT_EVERY = 1
"""Default output interval: record every step."""
DEFAULT_TOL = 1e-4
"""Default ``tol`` of ``dt="auto"``: error per unit step relative to the motion (flexmb.solvers.step_control, E3)."""


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
    return isinstance(v, numbers.Real) and not isinstance(v, bool)
