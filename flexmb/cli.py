"""The ``flexmb`` command: run case files, describe models, export results to ParaView, plot.

    flexmb run CASE [--param name=value ...] [--t-end T] [--dt H] [--out DIR] [--overwrite]
    flexmb info CASE [--param name=value ...]
    flexmb export RESULT [--format pvd|xdmf] [--out DIR] [--every N] [--overwrite]
    flexmb plot RESULT QUANTITY ... [--out DIR]

Exit codes (scripts can rely on them):

    0    success (the run finished, or the case's monitor stopped it: status "stopped: ...")
    1    the run stopped early (Newton failure), its result is incomplete, or the case's
         postprocess failed; the results computed so far are on disk
    2    usage error or bad input: bad option, missing case file, unknown parameter, bad
         value, model error, output directory exists, unreadable result
    3    internal error in flexmb (a bug: rerun with --debug and report the traceback)
    130  interrupted by Ctrl-C (the run directory is closed with status "interrupted")

Errors are one line on stderr (``flexmb: error: ...``) plus a hint line; ``--debug`` adds the
traceback.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import traceback
from pathlib import Path

from . import __version__

__all__ = ["main", "EXIT_OK", "EXIT_RUN_FAILED", "EXIT_USAGE", "EXIT_INTERNAL", "EXIT_INTERRUPTED"]

EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
MAX_FRAMES = 500  # default ceiling of ParaView frames written by `flexmb run`


class CliError(Exception):
    """An error to report as one line plus a hint, with an exit code."""

    def __init__(self, message: str, hint: str = "", code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.hint, self.code = hint, code


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


def _case_and_params(args) -> tuple:
    from .casefile import CaseError, load_case, parse_param, resolve_params

    try:
        case = load_case(args.case)
        overrides = dict(parse_param(p) for p in args.param or [])
        if getattr(args, "t_end", None) is not None:
            overrides["t_end"] = args.t_end
        if getattr(args, "dt", None) is not None:
            overrides["dt"] = args.dt
        params = resolve_params(case, overrides)
    except CaseError as exc:
        raise CliError(str(exc), exc.hint) from exc
    return case, params


def _build(case, params):
    from .errors import FlexmbError

    try:
        return case.build(params)
    except FlexmbError as exc:
        raise CliError(f"model error in case '{case.name}': {exc}", "check the parameters (flexmb info CASE)") from exc
    except Exception as exc:
        raise CliError(f"case '{case.name}': build() failed: {type(exc).__name__}: {exc}",
                       "run with --debug for the traceback") from exc


def _monitor(case, params, model):
    """The case's run callback (casefile: optional ``monitor``), or None."""
    from .errors import FlexmbError

    try:
        return case.monitor(model, params)
    except FlexmbError as exc:
        raise CliError(f"model error in case '{case.name}' (monitor): {exc}", "check the parameters") from exc
    except Exception as exc:
        raise CliError(f"case '{case.name}': monitor() failed: {type(exc).__name__}: {exc}",
                       "run with --debug for the traceback") from exc


def _load_result(path: str):
    from .errors import ResultFileError
    from .result import load

    try:
        return load(path)
    except ResultFileError as exc:
        raise CliError(str(exc), "give a run directory written by 'flexmb run' or a .npz saved by Result.save") from exc


def _check_out_dir(out: Path, overwrite: bool) -> None:
    from .runfiles import is_run_dir

    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        if not overwrite:
            raise CliError(f"output directory '{out}' already exists", "pass --overwrite to replace it, or --out DIR")
        if not is_run_dir(out):
            raise CliError(f"'{out}' is not a flexmb run directory; --overwrite deletes only those",
                           "choose another --out")


def _default_coordinates(result, limit: int = 8) -> list[str]:
    names = [n for n in result.coordinate_names if ":free." not in n]
    return names[:limit]


def _summary_lines(summary: dict) -> list[str]:
    out = []
    for k, v in summary.items():
        if isinstance(v, float):
            v = f"{v:.6g}"
        out.append(f"  {k}: {v}")
    return out


def _frames_every(n_rows: int, every: int | None) -> int:
    return every if every else max(1, math.ceil(n_rows / MAX_FRAMES))


def _standard_plots(result, out: Path) -> list[Path]:
    from .plots import plot_coordinates, plot_drive_forces, plot_element_forces, plot_energy

    made = [plot_energy(result, out / "energy.png")]
    coords = _default_coordinates(result)
    if coords:
        made.append(plot_coordinates(result, coords, out / "coordinates.png"))
    if result.driven_names:
        made.append(plot_drive_forces(result, out / "drive_forces.png"))
    if result.element_names:
        made.append(plot_element_forces(result, out / "element_forces.png"))
    return made


# ---------------------------------------------------------------------------------- commands
def cmd_run(args) -> int:
    """flexmb run: simulate a case, stream the result, write ParaView files, plots and summary."""
    from .errors import SolverError
    from .export import write_pvd
    from .progress import ProgressBar
    from .result import load
    from .runfiles import RunWriter
    from .simulate import simulate

    case, params = _case_and_params(args)
    out = Path(args.out) if args.out else Path("runs") / case.name
    _check_out_dir(out, args.overwrite)
    model = _build(case, params)
    callback = _monitor(case, params, model)
    _say(f"{case.title}")
    _say(f"case {case.path} -> {out}   t_end = {params['t_end']:g} s, dt = {params['dt']:g} s, "
         f"rho_inf = {params.get('rho_inf', 0.9):g}, {model.n_u} coordinates")
    writer = RunWriter(out, overwrite=args.overwrite, meta={
        "case": str(case.path), "case_name": case.name, "title": case.title, "params": params,
        "flexmb_version": __version__})
    bar = ProgressBar(params["t_end"], stream=sys.stderr) if not args.quiet else None
    try:
        simulate(model, params["t_end"], params["dt"], rho_inf=params.get("rho_inf", 0.9),
                 output_every=params.get("output_every", 1), out=writer, progress=bar.update if bar else None,
                 callback=callback)
    except KeyboardInterrupt:
        if bar:
            bar.close()
        res = load(out)
        t = f"t = {res.t[-1]:.6g} s" if res.t.size else "the start"
        print(f"flexmb: interrupted at {t}; {res.t.size} output rows saved in {out}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except SolverError as exc:  # before the first step (initial accelerations): nothing to continue from
        if bar:
            bar.close()
        raise CliError(f"run failed at the start: {exc}", f"the run directory {out} records it; check the model "
                       "(flexmb info) and its initial state", EXIT_RUN_FAILED) from exc
    if bar:
        bar.close()
    res = load(out)  # what is on disk is what the user gets
    pvd = write_pvd(res, None, out / "paraview", case.name, _frames_every(len(res.t), args.every))
    plots = _standard_plots(res, out)
    # "stopped: ...": the case's monitor ended the run as designed (e.g. at a singular configuration)
    code = EXIT_OK if res.status == "finished" or res.status.startswith("stopped:") else EXIT_RUN_FAILED
    summary: dict = {"status": res.status, "steps": int(res.stats.get("steps", 0)), "output_rows": int(res.t.size),
                     "final_time_s": float(res.t[-1]) if res.t.size else 0.0,
                     "wall_time_s": round(res.stats.get("wall_time", float("nan")), 3),
                     "newton_iterations": int(res.stats.get("newton_iterations", 0))}
    if code == EXIT_OK:
        try:
            summary.update(case.postprocess(res, model, params, out))
        except Exception as exc:
            if args.debug:
                traceback.print_exc()
            print(f"flexmb: error: case '{case.name}': postprocess() failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            print("  hint: the run itself finished and is saved; run with --debug for the traceback", file=sys.stderr)
            code = EXIT_RUN_FAILED
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    _say("summary:")
    for line in _summary_lines(summary):
        _say(line)
    _say(f"results:  {out}  (flexmb.load('{out}'))")
    _say(f"paraview: {pvd}")
    _say("plots:    " + ", ".join(str(p) for p in plots))
    if code == EXIT_RUN_FAILED and res.status != "finished":
        print(f"flexmb: error: run did not finish: {res.status}", file=sys.stderr)
        print(f"  hint: the {res.t.size} output rows computed before are saved in {out}; a smaller --dt often helps",
              file=sys.stderr)
    return code


def cmd_info(args) -> int:
    """flexmb info: describe the case's model."""
    from .describe import describe

    case, params = _case_and_params(args)
    model = _build(case, params)
    _say(f"{case.title}  ({case.path})")
    _say(describe(model))
    return EXIT_OK


def cmd_export(args) -> int:
    """flexmb export: write a result for ParaView."""
    from .export import export

    res = _load_result(args.result)
    src = Path(args.result)
    name = args.name or (res.meta.get("case_name") or (src.stem if src.is_file() else src.name) or "mechanism")
    out = Path(args.out) if args.out else (src / "paraview" if src.is_dir() else src.parent / f"{src.stem}_paraview")
    target = out / f"{name}.{args.format}"
    if target.exists() and not args.overwrite:
        raise CliError(f"'{target}' already exists", "pass --overwrite to replace it, or --out DIR")
    path = export(res, out, args.format, name, _frames_every(len(res.t), args.every))
    _say(f"{args.format}: {path}  ({len(res.t)} output rows, status {res.status})")
    return EXIT_OK


PLOT_WORDS = {"energy": "energy balance (all terms)", "coordinates": "the first generalized coordinates",
              "drives": "drive forces/torques", "forces": "beam section forces, largest over all elements"}


def cmd_plot(args) -> int:
    """flexmb plot: PNG time histories of named quantities."""
    from .plots import plot_coordinates, plot_drive_forces, plot_element_forces, plot_energy, plot_node_positions

    res = _load_result(args.result)
    src = Path(args.result)
    out = Path(args.out) if args.out else (src / "plots" if src.is_dir() else src.parent)
    coords, nodes, elements, words = [], [], [], []
    for q in args.quantity:
        if q in PLOT_WORDS:
            words.append(q)
        elif q in res.coordinate_names:
            coords.append(q)
        elif q in res.node_names:
            nodes.append(q)
        elif q in res.element_names:
            elements.append(q)
        else:
            sample = list(res.coordinate_names[:6]) + list(res.element_names[:3])
            raise CliError(f"unknown quantity '{q}'",
                           f"use {', '.join(PLOT_WORDS)}, a coordinate, node or beam element name, e.g. {', '.join(sample)}")
    if "drives" in words and not res.driven_names:
        raise CliError("this result has no driven coordinates to plot", "plot energy, coordinates or forces instead")
    if "forces" in words and not res.element_names:
        raise CliError("this result has no beam elements whose forces could be plotted", "plot energy or coordinates instead")
    out.mkdir(parents=True, exist_ok=True)
    made = []
    if "energy" in words:
        made.append(plot_energy(res, out / "energy.png"))
    if "drives" in words:
        made.append(plot_drive_forces(res, out / "drive_forces.png"))
    if "forces" in words:
        made.append(plot_element_forces(res, out / "element_forces.png"))
    if "coordinates" in words:
        coords = _default_coordinates(res) + [c for c in coords if c not in _default_coordinates(res)]
    if coords:
        made.append(plot_coordinates(res, coords, out / "coordinates.png"))
    if nodes:
        made.append(plot_node_positions(res, nodes, out / "nodes.png"))
    if elements:
        made.append(plot_element_forces(res, out / "element_forces_selected.png", names=elements))
    for p in made:
        _say(str(p))
    return EXIT_OK


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
    r.add_argument("--dt", type=float, help="time step [s] (default: the case's dt)")
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
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``flexmb`` console script; returns the exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    debug = "--debug" in argv
    try:
        args = build_parser().parse_args(argv)
        return int(args.func(args))
    except CliError as exc:
        if debug and exc.__cause__ is not None:
            traceback.print_exception(exc.__cause__)
        print(f"flexmb: error: {exc}", file=sys.stderr)
        if exc.hint:
            print(f"  hint: {exc.hint}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        print("flexmb: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:
        if debug:
            traceback.print_exc()
        print(f"flexmb: error: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        print("  hint: this is a bug in flexmb; rerun with --debug and report the traceback", file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
