"""The ``flexmb sweep`` command: a case run over a grid of parameter values (--grid), a list of
runs (--runs FILE.json) or random samples (--samples N --range ...), through flexmb.app.study.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from flexmb.app.casefile import load_case, parse_param
from flexmb.app.cli_common import EXIT_INTERRUPTED, EXIT_OK, EXIT_RUN_FAILED, overrides, say
from flexmb.app.study import sweep
from flexmb.errors import CaseError, CliError, StudyError

__all__ = ["cmd_sweep"]


def _split_values(text: str) -> list[str]:
    """``v1,v2,...`` split at the commas outside brackets and quotes."""
    items, depth, quote, cur = [], 0, "", ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(cur)
            cur = ""
            continue
        cur += ch
    items.append(cur)
    return [i.strip() for i in items]


def _grid(specs: list[str]) -> dict:
    grid: dict = {}
    for spec in specs:
        name, sep, values = spec.partition("=")
        name = name.strip()
        items = _split_values(values) if sep else []
        if not sep or not name or not values.strip() or any(not v for v in items):
            raise CliError(f"--grid '{spec}' is not of the form name=v1,v2,...",
                           "e.g. --grid damping=0,0.01,0.05 --grid E=1e9,1e10")
        if name in grid:
            raise CliError(f"--grid '{name}' is given twice", "give all values of a parameter in one --grid name=v1,v2,...")
        try:
            grid[name] = [parse_param(f"{name}={v}")[1] for v in items]
        except CaseError as exc:
            raise CliError(f"--grid {exc}".replace("--param ", ""), exc.hint) from exc
    return grid


def _ranges(specs: list[str]) -> dict:
    out: dict = {}
    for spec in specs:
        name, sep, rng = spec.partition("=")
        parts = rng.split(":")
        try:
            if not sep or not name.strip() or len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] != "log"):
                raise ValueError
            lo, hi = float(parts[0]), float(parts[1])
        except ValueError:
            raise CliError(f"--range '{spec}' is not of the form name=lo:hi or name=lo:hi:log",
                           "e.g. --range damping=0:0.1 --range EA=1e5:1e8:log") from None
        out[name.strip()] = (lo, hi, "log") if len(parts) == 3 else (lo, hi)  # integers if the default is one
    return out


def cmd_sweep(args) -> int:
    """flexmb sweep: run a case over a grid, a list of runs or random samples; summary table."""
    try:
        case = load_case(args.case)
        base = overrides(args)  # --param, --t-end, --dt, --tol
    except CaseError as exc:
        raise CliError(str(exc), exc.hint) from exc
    how = [w for w, v in (("--grid", args.grid), ("--runs", args.runs), ("--samples", args.samples)) if v]
    if len(how) != 1:
        raise CliError(f"give one of --grid, --runs or --samples (got {', '.join(how) or 'none'})",
                       "e.g. --grid damping=0,0.01,0.05, or --samples 20 --range damping=0:0.1 --seed 1")
    if args.range and not args.samples:
        raise CliError("--range is for --samples", "give --samples N with the ranges")
    grid = _grid(args.grid) if args.grid else None
    runs = None
    if args.runs:
        try:
            runs = json.loads(Path(args.runs).read_text())
        except OSError as exc:
            raise CliError(f"cannot read --runs file '{args.runs}': {exc.strerror}",
                           "give a JSON file: a list of objects") from None
        except ValueError as exc:
            raise CliError(f"--runs file '{args.runs}' is not JSON: {exc}", "a list of objects, e.g. [{\"E\": 1e9}]") from None
        if not isinstance(runs, list) or not all(isinstance(r, dict) for r in runs):
            raise CliError(f"--runs file '{args.runs}' must hold a list of objects", "e.g. [{\"E\": 1e9}, {\"E\": 1e10}]")
    ranges = _ranges(args.range or []) if args.samples else None
    if args.samples and not ranges:
        raise CliError("--samples needs the ranges to draw from", "e.g. --range damping=0:0.1 --range EA=1e5:1e8:log")
    out = Path(args.out) if args.out else Path("runs") / f"{case.name}_sweep"
    where = f"Dask scheduler {args.scheduler}" if args.scheduler else (
        "the command's own process" if args.workers == 0 else f"{args.workers or 'all'} local worker processes")
    say(case.title)
    say(f"sweep of {case.path} -> {out}, runs on {where}")
    try:
        s = sweep(case, grid=grid, runs=runs, samples=args.samples, ranges=ranges, seed=args.seed, params=base,
                  outputs=args.output or [], out_dir=out, scheduler=args.scheduler, workers=args.workers,
                  retry_failed=args.retry_failed, postprocess=not args.no_postprocess, progress=not args.quiet)
    except StudyError as exc:
        raise CliError(str(exc), exc.hint) from exc
    except KeyboardInterrupt:
        print(f"flexmb: sweep interrupted; the finished runs and their table are in {out}; run the same command again to "
              "resume", file=sys.stderr)
        return EXIT_INTERRUPTED
    for r in s.rows:
        if r.get("status") != "finished":  # stopped (by the case's monitor), failed or error, with the reason
            say(f"  {r['run']}: {r['status']}: {r.get('reason', '')}")
    say(f"sweep: {s.line()}")
    say(f"table:  {s.table}  (flexmb.app.study.read_table('{s.table}'))")
    return EXIT_OK if s.failed == 0 else EXIT_RUN_FAILED
