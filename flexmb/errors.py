"""Exceptions raised by flexmb, each naming the offending item and what to do."""

from __future__ import annotations

__all__ = ["FlexmbError", "ModelError", "LoopError", "SolverError", "BackendError", "ResultFileError", "SettingsError"]


class FlexmbError(Exception):
    """Base class of all flexmb errors."""


class ModelError(FlexmbError, ValueError):
    """Invalid model input (names, masses, inertias, axes, NaN ...)."""


class LoopError(ModelError):
    """A joint closes a kinematic loop that no elastic link cuts."""


class SolverError(FlexmbError, RuntimeError):
    """Newton failure, non-finite state or non-positive-definite iteration matrix."""

    def __init__(self, message: str, time: float | None = None) -> None:
        super().__init__(message)
        self.time = time


class BackendError(FlexmbError, ImportError):
    """The sparse Cholesky backend (CHOLMOD through scikit-sparse) is unavailable."""


class ResultFileError(FlexmbError, ValueError):
    """A result file or run directory is missing, not written by flexmb, or damaged."""


class SettingsError(FlexmbError, ValueError):
    """An invalid solver setting (``simulate``'s t_end, dt, rho_inf, output_every, rtol, ...)."""
