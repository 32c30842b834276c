"""Progress on stderr. :class:`ProgressBar`, for a simulation: simulated time, steps per
second, Newton iterations per step and the estimated time left; on a terminal it redraws one
line at most ten times a second, otherwise (a log file, CI) it prints a line at every tenth of
the run. :class:`SweepProgress`, for a sweep: runs done, failures, time left."""

from __future__ import annotations

import sys
import time as _time
from typing import TextIO

__all__ = ["ProgressBar", "SweepProgress"]


def _clock(seconds: float) -> str:
    if seconds != seconds or seconds == float("inf"):
        return "--:--"
    s = int(round(seconds))
    h, m = divmod(s, 3600)
    m, s = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


class ProgressBar:
    """Call ``update(t, newton_iterations)`` after every step (the ``progress`` argument of
    :func:`flexmb.solvers.simulate.simulate`), ``close()`` at the end."""

    def __init__(self, t_end: float, t0: float = 0.0, stream: TextIO | None = None, width: int = 24,
                 interval: float = 0.1) -> None:
        self.t0, self.t_end = t0, t_end
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.width = width
        self.interval = interval
        self.steps = 0
        self.iterations = 0
        self.t = t0
        self._start = _time.monotonic()
        self._last_draw = -1.0
        self._last_tenth = -1
        self._printed_steps = -1
        self._first: tuple[float, float] | None = None  # (clock, fraction) at the first step

    def fraction(self) -> float:
        """Fraction of the simulated time span done, in [0, 1]."""
        span = self.t_end - self.t0
        return min(1.0, max(0.0, (self.t - self.t0) / span)) if span > 0 else 1.0

    def line(self) -> str:
        """The current status line."""
        el = _time.monotonic() - self._start
        f = self.fraction()
        rate = self.steps / el if el > 0 else 0.0
        it = self.iterations / self.steps if self.steps else 0.0
        # time left from the progress since the first step (which carries start-up and compilation)
        if self._first is not None and f > self._first[1]:
            t1, f1 = self._first
            eta = (_time.monotonic() - t1) * (1 - f) / (f - f1)
        else:
            eta = float("inf")
        filled = int(round(f * self.width))
        bar = "#" * filled + "-" * (self.width - filled)
        return (f"t = {self.t:.4g}/{self.t_end:.4g} s [{bar}] {100 * f:5.1f}%  {rate:7.1f} steps/s  "
                f"Newton {it:4.2f} it/step  elapsed {_clock(el)}  left {_clock(eta)}")

    def update(self, t: float, newton_iterations: int = 0) -> None:
        """Account for one accepted step ending at time ``t``."""
        self.t = t
        self.steps += 1
        if self._first is None:
            self._first = (_time.monotonic(), self.fraction())
        self.iterations += int(newton_iterations)
        now = _time.monotonic()
        if self.tty:
            if now - self._last_draw >= self.interval:
                self._last_draw = now
                self.stream.write("\r" + self.line())
                self.stream.flush()
        else:
            tenth = int(10 * self.fraction())
            if tenth > self._last_tenth:
                self._last_tenth = tenth
                self._printed_steps = self.steps
                self.stream.write(self.line() + "\n")
                self.stream.flush()

    def close(self) -> None:
        """Draw the final state and end the line."""
        if self.tty:
            self.stream.write("\r" + self.line() + "\n")
        elif self._printed_steps != self.steps:
            self.stream.write(self.line() + "\n")
        self.stream.flush()


class SweepProgress:
    """Progress of a whole sweep on stderr: runs done / total (``done`` and ``skipped`` found
    on disk, ``failed`` among them), failures, elapsed, time left (elapsed time per run
    simulated so far, times the runs left: the workers' parallelism is in it). Every run that
    did not finish gets a line with its status and reason (a run stopped by the case's monitor
    too, though it is no failure)."""

    def __init__(self, total: int, done: int, skipped: int, failed: int = 0, stream: TextIO | None = None) -> None:
        self.total, self.done, self.failed = total, done, failed
        self.ran = 0
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._start = _time.monotonic()
        self._skipped = skipped

    def line(self) -> str:
        """The current status line."""
        el = _time.monotonic() - self._start
        left = self.total - self.done
        eta = el / self.ran * left if self.ran else float("inf")
        if left == 0:
            eta = 0.0
        return (f"sweep: {self.done}/{self.total} runs done ({self._skipped} skipped, {self.failed} failed)  "
                f"elapsed {_clock(el)}  left {_clock(eta)}")

    def show(self) -> None:
        """Draw the current status line."""
        self._write(self.line(), redraw=True)

    def update(self, row: dict, simulated: bool) -> None:
        """Account for one finished task."""
        self.done += 1
        self.ran += int(simulated)
        if row.get("status") != "finished":
            if row.get("status") != "stopped":
                self.failed += 1
            self._write(f"{row.get('run')}: {row.get('status')}: {row.get('reason')}")
        self._write(self.line(), redraw=True)

    def _write(self, text: str, redraw: bool = False) -> None:
        try:
            if self.tty:
                self.stream.write(("\r" if redraw else "\r\x1b[K") + text + ("" if redraw else "\n"))
            else:
                self.stream.write(text + "\n")
            self.stream.flush()
        except (OSError, ValueError):
            pass

    def close(self) -> None:
        """End the progress line."""
        if self.tty:
            self._write("")
