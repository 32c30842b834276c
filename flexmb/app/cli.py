"""The ``flexmb`` command: run case files, describe models, export results to ParaView, plot.

    flexmb run CASE [--param name=value ...] [--t-end T] [--dt H] [--out DIR] [--overwrite]
    flexmb info CASE [--param name=value ...]
    flexmb export RESULT [--format pvd|xdmf] [--out DIR] [--every N] [--overwrite]
    flexmb plot RESULT QUANTITY ... [--out DIR]
    flexmb animate RESULT [--out FILE] [--every N] [--fps F] [--view auto|xy|xz|yz|3d] [--overwrite]
    flexmb sweep CASE --grid name=v1,v2,... | --runs FILE.json | --samples N --range name=lo:hi [--seed S]
                 [--param name=value ...] [--output SPEC ...] [--workers N | --scheduler tcp://host:port] [--out DIR]

Exit codes (scripts can rely on them):

    0    success (the run finished, or the case's monitor stopped it: status "stopped: ..."; for sweep:
         every run finished or was stopped by the case's monitor)
    1    the run stopped early (Newton failure), its result is incomplete, or the case's
         postprocess failed; the results computed so far are on disk (for sweep: at least one
         run failed; the others completed and the table records every run)
    2    usage error or bad input: bad option, missing case file, unknown parameter, bad
         value, model error, output directory exists (or holds files flexmb did not write, or is
         a symbolic link), unreadable or damaged result, a file that cannot be written (disk full,
         quota used up, read-only file system, permission denied: the message names it)
    3    internal error in flexmb (a bug: rerun with --debug and report the traceback)
    130  interrupted by Ctrl-C (the run directory is closed with status "interrupted")

Errors are one line on stderr (``flexmb: error: ...``) plus a hint line; ``--debug`` adds the
traceback. This module parses, prints and maps outcomes to exit codes; the work is done by
flexmb.app.run (the run pipeline), flexmb.app.study (sweeps) and flexmb.results.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
import warnings
from pathlib import Path

from flexmb.app.casefile import load_case, parse_param, resolve_params
from flexmb.app.companions import Companions, companion_params
from flexmb.app.describe import describe
from flexmb.app.progress import ProgressBar
from flexmb.app.run import MAX_FRAMES, RunStart, build_model, frames_every, run_case
from flexmb.app.study import sweep
from flexmb.errors import AnimationError, CaseError, CliError, FlexmbError, ResultFileError, RunDirError, SolverError, StudyError
from flexmb.results import animation, manifest
from flexmb.results.files import disk_problem
from flexmb.results.load import load
from flexmb.results.rundir import is_run_dir
from flexmb.version import __version__

__all__ = ["main", "build_parser", "CliError", "EXIT_OK", "EXIT_RUN_FAILED", "EXIT_USAGE", "EXIT_INTERNAL",
           "EXIT_INTERRUPTED"]

EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors and exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise CliError(message, f"see '{self.prog} --help'")


# ---------------------------------------------------------------------------------- helpers
def _say(msg: str = "") -> None:
    """Print to stdout; a closed pipe (``flexmb run ... | head``) silences further output
    instead of failing the command."""
    try:
        print(msg, flush=True)
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def _error(msg: str, hint: str = "") -> None:
    print(f"flexmb: error: {msg}", file=sys.stderr)
    if hint:
        print(f"  hint: {hint}", file=sys.stderr)


def _show_warning(original):
    """warnings.showwarning for the command line: flexmb's own warnings (a strained start, an energy
    balance that rose, ...) as one ``flexmb: warning: <message>`` line, without Python's source
    location; other libraries' warnings as Python shows them."""

    def show(message, category, filename, lineno, file=None, line=None):
        if category.__module__.split(".")[0] == "flexmb":
            print(f"flexmb: warning: {message}", file=sys.stderr if file is None else file)
        else:
            original(message, category, filename, lineno, file, line)

    return show


def _overrides(args) -> dict:
    """The parameter overrides of the command line (--param, --t-end, --dt)."""
    overrides = dict(parse_param(p) for p in args.param or [])
    for key in ("t_end", "dt", "tol", "output_dt"):
        if getattr(args, key, None) is not None:
            overrides[key] = getattr(args, key)
    return overrides


def _dt_arg(text: str) -> float | str:
    """--dt: a step in seconds or 'auto' (error-controlled steps)."""
    if text.strip().lower() == "auto":
        return "auto"
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is neither a number of seconds nor 'auto'") from None


def _load_result(path: str):
    try:
        return load(path)
    except ResultFileError as exc:
        raise CliError(str(exc), exc.hint) from exc


def _summary_lines(summary: dict) -> list[str]:
    return [f"  {k}: {v:.6g}" if isinstance(v, float) else f"  {k}: {v}" for k, v in summary.items()]


def _record_in_run_dir(src: Path, paths: list[Path]) -> None:
    """Record files an export or a plot will write inside the run folder ``src`` in its manifest
    (a later --overwrite of the run then removes them too); RunDirError if one would be written
    through a symbolic link there (manifest.refuse_links)."""
    if src.is_dir() and is_run_dir(src):
        manifest.refuse_links(src, paths)
        manifest.record(src, [p.absolute() for p in paths])  # the paths are relative to the working directory, not to src


# ---------------------------------------------------------------------------------- commands
def cmd_run(args) -> int:
    """flexmb run: simulate a case, stream the result, write ParaView files, plots and summary."""
    bar: ProgressBar | None = None
    start: RunStart | None = None

    def on_start(s: RunStart):
        nonlocal bar, start
        start = s
        st = s.settings
        _say(f"{s.case.title}")
        _say(f"case {s.case.path} -> {s.out}   {st.describe()}, {s.model.n_u} coordinates")
        bar = ProgressBar(st.t_end, stream=sys.stderr) if not args.quiet else None
        return bar.update if bar else None

    try:
        outcome = run_case(args.case, _overrides(args), args.out, overwrite=args.overwrite, every=args.every,
                           on_start=on_start)
    except KeyboardInterrupt:
        if bar:
            bar.close()
        if start is None:
            raise
        res = load(start.out)
        t = f"t = {res.t[-1]:.6g} s" if res.t.size else "the start"
        print(f"flexmb: interrupted at {t}; {res.t.size} output rows saved in {start.out}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (CaseError, RunDirError) as exc:
        if bar:
            bar.close()
        raise CliError(str(exc), exc.hint) from exc
    if bar:
        bar.close()
    res, out = outcome.result, outcome.out
    if outcome.postprocess_exception is not None:
        if args.debug:
            traceback.print_exception(outcome.postprocess_exception)
        _error(f"case '{outcome.case.name}': {outcome.postprocess_error}",
               "the run itself finished and is saved; run with --debug for the traceback")
    _say("summary:")
    for line in _summary_lines(outcome.summary):
        _say(line)
    _say(f"results:  {out}  (flexmb.load('{out}'))")
    _say(f"paraview: {outcome.paraview}")
    _say("plots:    " + ", ".join(str(p) for p in outcome.plots))
    if outcome.ok:
        return EXIT_OK
    if not outcome.completed:
        if outcome.kind == "failed" and res.t.size == 0:
            _error(f"run failed at the start: {res.status.partition(': ')[2]}",
                   f"the run directory {out} records it; check the model (flexmb info) and its initial state")
        else:
            _error(f"run did not finish: {res.status}",
                   f"the {res.t.size} output rows computed before are saved in {out}; a smaller --dt often helps")
    return EXIT_RUN_FAILED


def cmd_info(args) -> int:
    """flexmb info: describe the case's model."""
    try:
        case = load_case(args.case)
        params = resolve_params(case, _overrides(args))
        model = build_model(case, params)
    except CaseError as exc:
        raise CliError(str(exc), exc.hint) from exc
    _say(f"{case.title}  ({case.path})")
    dt = params["dt"]  # the cut table's omega*dt: for dt = "auto" the step is not known beforehand
    _say(describe(model, dt=float(dt) if isinstance(dt, (int, float)) else None))
    settings = case.settings(params)  # a case's DEFAULTS may leave rho_inf out: the run's default then
    _say(f"run: {settings.describe()}")
    if case.takes_companions:  # the further runs `flexmb run` starts beside this one
        try:
            _say(Companions(case, companion_params(case, params), base=params).describe())
        except CaseError as exc:
            raise CliError(str(exc), exc.hint) from exc
    from flexmb.engine.linalg import blas_info  # imports CHOLMOD: only here
    from flexmb.solvers.generalized_alpha import GeneralizedAlpha  # builds the solver: only here

    solver = GeneralizedAlpha(model, rho_inf=settings.rho_inf).describe_solver()
    _say(f"linear solver: {solver}")
    _say(f"BLAS under CHOLMOD: {blas_info()}")
    return EXIT_OK


def cmd_export(args) -> int:
    """flexmb export: write a result for ParaView (only inside the output folder; existing
    files only with --overwrite)."""
    # imported here: meshio and h5py take a while to load and only this command and `run` need them
    from flexmb.results.paraview import check_name, check_targets, export, planned_files, safe_name

    try:  # a name the user gives is refused if it is not a file name; one read from the result is made one
        if args.name is not None:
            check_name(args.name, "--name")
    except ValueError as exc:
        raise CliError(str(exc), f"e.g. --name {safe_name(args.name)}") from None
    res = _load_result(args.result)
    src = Path(args.result)
    stored = res.meta.get("case_name") or (src.stem if src.is_file() else src.name)
    name = args.name or safe_name(stored)  # a name read from the file is data, never a path
    out = Path(args.out) if args.out else (src / "paraview" if src.is_dir() else src.parent / f"{src.stem}_paraview")
    every = frames_every(len(res.t), args.every)
    files = planned_files(len(res.t), args.format, name, every)
    try:
        check_targets(out, files, args.overwrite)  # before recording them: a user's file is never claimed
        _record_in_run_dir(src, [out / f for f in files])  # before writing: see flexmb.app.run
        path = export(res, out, args.format, name, every, overwrite=True)
    except (RunDirError, ResultFileError) as exc:
        raise CliError(str(exc), exc.hint) from exc
    _say(f"{args.format}: {path}  ({len(res.t)} output rows, status {res.status})")
    return EXIT_OK


PLOT_WORDS = {"energy": "energy balance (all terms)", "coordinates": "the first generalized coordinates",
              "drives": "drive forces/torques", "forces": "beam section forces, largest over all elements",
              "cuts": "loop-cut forces and moments (bushings, rigid cuts)",
              "steps": "the step-size history (accepted, rejected and failed steps, error estimate)"}


def cmd_plot(args) -> int:
    """flexmb plot: PNG time histories of named quantities."""
    # imported here: matplotlib takes a second to load and only this command and `run` need it
    from flexmb.results.plots import (
        default_coordinates,
        plot_coordinates,
        plot_cut_forces,
        plot_drive_forces,
        plot_element_forces,
        plot_energy,
        plot_node_positions,
        plot_steps,
    )

    res = _load_result(args.result)
    src = Path(args.result)
    out = Path(args.out) if args.out else (src / "plots" if src.is_dir() else src.parent)
    coords, nodes, elements, cuts, words = [], [], [], [], []
    for q in args.quantity:
        if q in PLOT_WORDS:
            words.append(q)
        elif q in res.coordinate_names:
            coords.append(q)
        elif q in res.node_names:
            nodes.append(q)
        elif q in res.element_names:
            elements.append(q)
        elif q in res.cut_names:
            cuts.append(q)
        else:
            sample = list(res.coordinate_names[:6]) + list(res.element_names[:3])
            raise CliError(f"unknown quantity '{q}'",
                           f"use {', '.join(PLOT_WORDS)}, a coordinate, node, beam element or cut name, e.g. {', '.join(sample)}")
    if "drives" in words and not res.driven_names:
        raise CliError("this result has no driven coordinates to plot", "plot energy, coordinates or forces instead")
    if "forces" in words and not res.element_names:
        raise CliError("this result has no beam elements whose forces could be plotted", "plot energy or coordinates instead")
    if "cuts" in words and not res.cut_names:
        raise CliError("this result has no loop cuts (bushings, rigid cuts) whose forces could be plotted",
                       "plot energy or coordinates instead")
    if "steps" in words and not len(res.steps.get("t", ())):
        raise CliError("this result has no step history (written by a flexmb before it was recorded)",
                       "run the case again to record it")
    if "coordinates" in words:
        coords = default_coordinates(res) + [c for c in coords if c not in default_coordinates(res)]
    plots = [(name, draw) for name, wanted, draw in (
        ("energy.png", "energy" in words, lambda f: plot_energy(res, f)),
        ("drive_forces.png", "drives" in words, lambda f: plot_drive_forces(res, f)),
        ("element_forces.png", "forces" in words, lambda f: plot_element_forces(res, f)),
        ("steps.png", "steps" in words, lambda f: plot_steps(res, f)),
        ("coordinates.png", bool(coords), lambda f: plot_coordinates(res, coords, f)),
        ("nodes.png", bool(nodes), lambda f: plot_node_positions(res, nodes, f)),
        ("element_forces_selected.png", bool(elements), lambda f: plot_element_forces(res, f, names=elements)),
        ("cut_forces.png", "cuts" in words, lambda f: plot_cut_forces(res, f)),
        ("cut_forces_selected.png", bool(cuts), lambda f: plot_cut_forces(res, f, names=cuts)),
    ) if wanted]
    _record_in_run_dir(src, [out / name for name, _ in plots])  # before writing: see flexmb.app.run
    out.mkdir(parents=True, exist_ok=True)
    made = [draw(out / name) for name, draw in plots]
    for p in made:
        _say(str(p))
    return EXIT_OK


def cmd_animate(args) -> int:
    """flexmb animate: a GIF (or MP4) of the mechanism's motion, for viewers without ParaView."""
    res = _load_result(args.result)
    src = Path(args.result)
    out = Path(args.out) if args.out else (src / "animation.gif" if src.is_dir() else src.with_suffix(".gif"))
    try:
        request = dict(every=args.every, fps=args.fps, view=args.view)
        animation.check_request(res, out, overwrite=args.overwrite, **request)  # before recording: a user's file is never claimed
        _record_in_run_dir(src, [out])  # before writing: see flexmb.app.run
        path = animation.animate(res, out, overwrite=True, **request)
    except (RunDirError, ResultFileError, AnimationError) as exc:
        raise CliError(str(exc), exc.hint) from exc
    _say(f"animation: {path}  ({len(res.t)} output rows, status {res.status})")
    return EXIT_OK


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
        base = dict(parse_param(p) for p in args.param or [])
    except CaseError as exc:
        raise CliError(str(exc), exc.hint) from exc
    if args.t_end is not None:
        base["t_end"] = args.t_end
    if args.dt is not None:
        base["dt"] = args.dt
    if args.tol is not None:
        base["tol"] = args.tol
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
    _say(case.title)
    _say(f"sweep of {case.path} -> {out}, runs on {where}")
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
            _say(f"  {r['run']}: {r['status']}: {r.get('reason', '')}")
    _say(f"sweep: {s.line()}")
    _say(f"table:  {s.table}  (flexmb.app.study.read_table('{s.table}'))")
    return EXIT_OK if s.failed == 0 else EXIT_RUN_FAILED


# ---------------------------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``flexmb`` command."""
    codes = "exit codes: 0 ok, 1 run failed or incomplete, 2 usage or bad input, 3 internal error, 130 interrupted"
    p = _Parser(prog="flexmb", description="flexmb: sparse finite-element flexible multibody dynamics.", epilog=codes)
    p.add_argument("--version", action="version", version=f"flexmb {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    def common(sp):
        sp.add_argument("--debug", action="store_true", help="print the traceback of errors")

    def params(sp):
        sp.add_argument("--param", "-p", action="append", metavar="NAME=VALUE",
                        help="set a case parameter; VALUE is a Python literal (2.5, 'text', [1, 2]) or a bare word")

    r = sub.add_parser("run", epilog=codes, help="run a case file", description="Run a case file: simulate, stream the result to "
                       "DIR, write ParaView files (DIR/paraview), plots (DIR/*.png) and the case's summary.")
    r.add_argument("case", metavar="CASE", help="case file (Python, with DEFAULTS and build())")
    params(r)
    r.add_argument("--t-end", type=float, help="end time [s] (default: the case's t_end)")
    r.add_argument("--dt", type=_dt_arg, help="time step [s], or 'auto' for error-controlled steps (default: the case's dt)")
    r.add_argument("--tol", type=float, help="error tolerance of --dt auto (default 1e-4: error per unit step relative "
                   "to the motion, flexmb.solvers.step_control)")
    r.add_argument("--output-dt", type=float, metavar="S", help="with --dt auto: output rows at multiples of S seconds "
                   "(default: a row every output_every steps)")
    r.add_argument("--out", metavar="DIR", help="output directory (default: runs/<case name>)")
    r.add_argument("--overwrite", action="store_true", help="replace DIR if it holds an earlier flexmb run")
    r.add_argument("--every", type=int, metavar="N",
                   help=f"write every N-th output row to ParaView (default: at most {MAX_FRAMES} frames)")
    r.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    common(r)
    r.set_defaults(func=cmd_run)

    i = sub.add_parser("info", epilog=codes, help="describe a case's model", description="Print the nodes, bodies, elements, "
                       "joints, the joint tree, the loops and where each is cut, and the degrees of freedom.")
    i.add_argument("case", metavar="CASE")
    params(i)
    common(i)
    i.set_defaults(func=cmd_info)

    e = sub.add_parser("export", epilog=codes, help="write a result for ParaView", description="Write a result (run directory or "
                       ".npz) for ParaView: pvd = VTU files + .pvd collection (default), xdmf = XDMF 3 + HDF5.")
    e.add_argument("result", metavar="RESULT")
    e.add_argument("--format", choices=("pvd", "xdmf"), default="pvd", help="file format (default pvd)")
    e.add_argument("--out", metavar="DIR", help="output directory (default: RESULT/paraview)")
    e.add_argument("--name", help="file name stem (default: the case name)")
    e.add_argument("--every", type=int, metavar="N", help=f"every N-th output row (default: at most {MAX_FRAMES} frames)")
    e.add_argument("--overwrite", action="store_true", help="replace existing files of the same name")
    common(e)
    e.set_defaults(func=cmd_export)

    pl = sub.add_parser("plot", epilog=codes, help="plot time histories",
                        description="Plot quantities of a result into PNG files: "
                        + "; ".join(f"'{k}' = {v}" for k, v in PLOT_WORDS.items())
                        + "; or names of coordinates (together in one plot), nodes (x, y, z) or beam elements "
                        "(their six section forces).")
    pl.add_argument("result", metavar="RESULT")
    pl.add_argument("quantity", metavar="QUANTITY", nargs="+")
    pl.add_argument("--out", metavar="DIR", help="output directory (default: RESULT/plots)")
    common(pl)
    pl.set_defaults(func=cmd_plot)

    an = sub.add_parser("animate", epilog=codes, help="write an animation (GIF or MP4) of the motion",
                        description="Draw the mechanism of a result (run directory or .npz) at its output times into "
                        "an animation that opens anywhere, without ParaView: beams, rigid bodies, joints and bushings, "
                        "the time in the title, fixed axes that hold the whole motion. GIF (default) or MP4 (needs "
                        "ffmpeg), chosen by the file name. Written inside a run directory, the file is recorded in its "
                        "manifest (a later 'flexmb run --overwrite' removes it).")
    an.add_argument("result", metavar="RESULT")
    an.add_argument("--out", metavar="FILE", help="animation file, ending in .gif or .mp4 (default: RESULT/animation.gif; "
                    "for RESULT.npz: RESULT.gif)")
    an.add_argument("--every", type=int, metavar="N",
                    help=f"draw every N-th output row (default: at most {animation.MAX_FRAMES} frames)")
    an.add_argument("--fps", type=float, default=20.0, metavar="F",
                    help=f"frames per second (default 20; GIF at most {animation.MAX_GIF_FPS:g})")
    an.add_argument("--view", choices=animation.VIEWS, default="auto",
                    help="xy, xz, yz: that plane (first letter across); 3d; auto (default): the plane of the motion, "
                    "or 3d if it is spatial")
    an.add_argument("--overwrite", action="store_true", help="replace an existing file of that name")
    common(an)
    an.set_defaults(func=cmd_animate)

    sw = sub.add_parser("sweep", epilog=codes, help="run a case for many parameter sets (local processes or Dask)",
                        description="Run a case file for every combination of --grid values, the runs of a JSON file, "
                        "or --samples random sets, each into its own result directory DIR/run_NNNN, and write "
                        "DIR/summary.csv: one row per run with its parameters, status, wall time, steps, Newton "
                        "iterations, energy-balance error, peak axial force, the case's summary and the --output "
                        "columns. Runs go to local worker processes (all cores), or to a Dask cluster with "
                        "--scheduler. Rerunning the same command resumes: finished runs are skipped. A failing run "
                        "is recorded with its reason and the sweep goes on.")
    sw.add_argument("case", metavar="CASE", help="case file (Python, with DEFAULTS and build())")
    sw.add_argument("--grid", "-g", action="append", metavar="NAME=V1,V2,...",
                    help="values of a parameter (Python literals, as for --param); several --grid: every combination")
    sw.add_argument("--runs", metavar="FILE.json", help="a JSON list of objects, one per run (parameter name -> value)")
    sw.add_argument("--samples", type=int, metavar="N", help="N random parameter sets drawn from the --range's")
    sw.add_argument("--range", action="append", metavar="NAME=LO:HI[:log]",
                    help="uniform (or log-uniform) range of a parameter for --samples; integers for integer parameters")
    sw.add_argument("--seed", type=int, default=0, help="random seed of --samples (default 0)")
    params(sw)
    sw.add_argument("--t-end", type=float, help="end time [s] of every run (default: the case's t_end)")
    sw.add_argument("--dt", type=_dt_arg, help="time step [s] of every run, or 'auto' (default: the case's dt)")
    sw.add_argument("--tol", type=float, help="error tolerance of --dt auto")
    sw.add_argument("--output", "-o", action="append", metavar="SPEC",
                    help="an extra column: node:NAME (final position), coordinate:NAME (final value), "
                    "peak_force:PATTERN (peak |axial force| over the beam elements, peak |force| over the loop cuts "
                    "matching the glob), or a bare name")
    sw.add_argument("--out", metavar="DIR", help="sweep directory (default: runs/<case name>_sweep); an existing one is resumed")
    sw.add_argument("--workers", type=int, metavar="N", help="local worker processes (default: all cores; 0: in this process)")
    sw.add_argument("--scheduler", metavar="ADDRESS", help="run on the Dask cluster of this scheduler (tcp://host:8786); "
                    "needs dask.distributed (pip install 'flexmb[cluster]') and the case file and DIR on a shared file system")
    sw.add_argument("--retry-failed", action="store_true",
                    help="on resume, run the failed runs again (default: keep their record)")
    sw.add_argument("--no-postprocess", action="store_true", help="skip the case's postprocess (its plots and summary columns)")
    sw.add_argument("--quiet", "-q", action="store_true", help="no progress lines")
    common(sw)
    sw.set_defaults(func=cmd_sweep)
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``flexmb`` console script; returns the exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    debug = "--debug" in argv
    try:
        args = build_parser().parse_args(argv)
        with warnings.catch_warnings():  # restores Python's display when the command returns
            warnings.showwarning = _show_warning(warnings.showwarning)
            return int(args.func(args))
    except CliError as exc:  # also the FlexmbErrors the commands turned into one
        if debug and exc.__cause__ is not None:
            traceback.print_exception(exc.__cause__)
        _error(str(exc), exc.hint)
        return exc.code
    except FlexmbError as exc:  # one the commands did not expect: still the user's input or the run, not a bug
        if debug:
            traceback.print_exc()
        _error(str(exc), exc.hint)
        return EXIT_RUN_FAILED if isinstance(exc, SolverError) else EXIT_USAGE
    except KeyboardInterrupt:
        print("flexmb: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:
        if debug:
            traceback.print_exc()
        if disk_problem(exc):  # the disk or the file system refused a write: the user's environment, not a bug
            _error(*disk_problem(exc))
            return EXIT_USAGE
        print(f"flexmb: error: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        print("  hint: this is a bug in flexmb; rerun with --debug and report the traceback", file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
