"""What the modules of the ``flexmb`` command share: its exit codes (flexmb.app.cli says what each
means), its printing (a line on stdout that a closed pipe silences; an error and its hint on
stderr) and the parameter overrides of its command line (--param, --t-end, --dt, --tol, --output-dt).
"""

from __future__ import annotations

import os
import sys

from flexmb.app.casefile import parse_param

__all__ = ["EXIT_OK", "EXIT_RUN_FAILED", "EXIT_USAGE", "EXIT_INTERNAL", "EXIT_INTERRUPTED", "say", "error", "overrides"]

EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


def say(msg: str = "") -> None:
    """Print to stdout; a closed pipe (``flexmb run ... | head``) silences further output
    instead of failing the command."""
    try:
        print(msg, flush=True)
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def error(msg: str, hint: str = "") -> None:
    """Print ``flexmb: error: <msg>`` and, when given, the hint line ``  hint: <hint>`` to stderr."""
    print(f"flexmb: error: {msg}", file=sys.stderr)
    if hint:
        print(f"  hint: {hint}", file=sys.stderr)


def overrides(args) -> dict:
    """The parameter overrides of the command line (--param, --t-end, --dt, --tol, --output-dt: those
    the command has)."""
    found = dict(parse_param(p) for p in args.param or [])
    for key in ("t_end", "dt", "tol", "output_dt"):
        if getattr(args, key, None) is not None:
            found[key] = getattr(args, key)
    return found
