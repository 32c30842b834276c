"""Exceptions raised by flexmb, each naming the offending item and what to do.

Every exception flexmb raises derives from :class:`FlexmbError` and carries a ``hint``: one
line saying what to do (the class's default hint unless the raise gives a sharper one). The
command line prints ``flexmb: error: <message>`` and ``  hint: <hint>``.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["FlexmbError", "ModelError", "LoopError", "SolverError", "NewtonFailure", "BackendError", "ResultFileError",
           "RunDirError", "CaseError", "CaseCodeError", "StudyError", "AnimationError", "CliError", "SettingsError",
           "StartWarning", "URDFError", "URDFWarning"]


class FlexmbError(Exception):
    """Base class of all flexmb errors: ``str(exc)`` names the offender, ``exc.hint`` says what to do."""

    hint: str = ""

    def __init__(self, message: str = "", hint: str | None = None) -> None:
        super().__init__(message)
        if hint is not None:
            self.hint = hint


class ModelError(FlexmbError, ValueError):
    """Invalid model input (names, masses, inertias, axes, NaN ...)."""

    hint = "correct the named argument of the ModelBuilder call (flexmb info CASE describes the model)"


class LoopError(ModelError):
    """A joint closes a kinematic loop that no elastic link cuts."""

    hint = "cut the loop with an elastic element (a beam or a bushing) instead of a joint"


class SolverError(FlexmbError, RuntimeError):
    """Newton failure, non-finite state or non-positive-definite iteration matrix. ``time``: the
    simulated time where it happened (None if not known)."""

    hint = "a smaller time step often helps; check the model and its initial state (flexmb info CASE)"

    def __init__(self, message: str = "", time: float | None = None, hint: str | None = None) -> None:
        super().__init__(message, hint)
        self.time = time


class NewtonFailure(SolverError):
    """A step whose Newton iteration did not converge. The families' notes on it (cuts left open,
    a singular configuration: a singular value decomposition of the cuts' closure Jacobian) join the
    message when it is first read, so an attempt that is then halved costs no decomposition."""

    def __init__(self, message: str, time: float, notes: Callable[[], list[str]]) -> None:
        super().__init__(message, time)
        self._notes: Callable[[], list[str]] | None = notes
        self._text = message

    def __str__(self) -> str:
        if self._notes is not None:
            notes, self._notes = self._notes, None
            try:
                self._text += "".join("; " + n for n in notes())
            except Exception as exc:  # the message is read while an error is reported: it must not raise
                self._text += f"; (the cuts' diagnosis failed: {type(exc).__name__}: {exc})"
        return self._text

    def __reduce__(self) -> tuple:  # pickled (a sweep worker's failure) as the SolverError it reads as
        return SolverError, (str(self), self.time)


class BackendError(FlexmbError, ImportError):
    """The sparse Cholesky backend (CHOLMOD through scikit-sparse) or another required library is unavailable."""

    hint = "install the missing library named in the message (docs/getting_started.md, 'Install')"


class ResultFileError(FlexmbError, ValueError):
    """A result file or run directory is missing, not written by flexmb, or damaged; the message
    names the file and what is wrong with it."""

    hint = "give a run directory written by 'flexmb run' or a .npz saved by Result.save"


class RunDirError(FlexmbError, FileExistsError):
    """An output folder that flexmb will not write into or replace: it exists, it is a symbolic
    link, or it holds files flexmb did not write (listed in the message)."""

    hint = "choose another output folder (--out DIR), or move the files named in the message away"


class CaseError(FlexmbError, ValueError):
    """Bad case file or bad case parameter (flexmb.app.casefile)."""

    hint = "see the case-file protocol in docs/guide/cli.md"


class CaseCodeError(CaseError):
    """The case's own code raised while flexmb called it: ``step`` names the function
    (``build``, ``monitor``), ``cause`` is the exception it raised (also ``__cause__``)."""

    hint = "run with --debug for the traceback"

    def __init__(self, message: str, step: str, cause: BaseException, hint: str | None = None) -> None:
        super().__init__(message, hint)
        self.step, self.cause = step, cause


class StudyError(FlexmbError, ValueError):
    """A sweep that cannot start: bad specification, unknown parameter name, a sweep directory
    holding another sweep, a missing optional dependency (flexmb.app.study)."""

    hint = "see 'flexmb sweep --help'"


class AnimationError(FlexmbError, ValueError):
    """A bad request for an animation (flexmb.results.animation): a file name without a known
    format, an unknown view, a frame rate or frame step out of range, or MP4 without ffmpeg."""

    hint = "see 'flexmb animate --help'"


class CliError(FlexmbError):
    """An error of the ``flexmb`` command, reported as one line plus the hint, ending the
    command with exit code ``code`` (2: usage or bad input; see flexmb.app.cli)."""

    hint = "see 'flexmb --help'"

    def __init__(self, message: str = "", hint: str | None = None, code: int = 2) -> None:
        super().__init__(message, hint)
        self.code = code


class URDFError(ModelError):
    """A URDF file flexmb cannot import (flexmb.importers.urdf): unreadable, not well-formed XML, or
    a tag or attribute that is missing or wrong; the message names the file, the tag and its line."""

    hint = "correct the URDF at the named line (the URDF specification: http://wiki.ros.org/urdf/XML)"


class SettingsError(FlexmbError, ValueError):
    """An invalid solver setting (``simulate``'s t_end, dt, rho_inf, output_every, rtol, ...); the
    message names the argument and what it must be."""

    hint = "see help(flexmb.simulate) for the settings and their ranges"


class StartWarning(UserWarning):
    """The initial state is not the one given: an element starts strained (it starts loaded, not
    at rest), or a loop cut was open and the start closed it by moving coordinates."""


class URDFWarning(UserWarning):
    """What a URDF import left out or changed (flexmb.importers.urdf): the tags and attributes
    flexmb does not import, joint limits it keeps but does not enforce, mimic joints imported as
    independent joints. One warning per import, listing all of them."""
