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
traceback. This module parses the command line, runs ``run`` and ``info`` and maps outcomes to exit
codes; the commands that read a result (``export``, ``plot``, ``animate``) are in
flexmb.app.cli_results, ``sweep`` in flexmb.app.cli_sweep, the exit codes and the printing they
share in flexmb.app.cli_common. The work is done by flexmb.app.run (the run pipeline),
flexmb.app.study (sweeps) and flexmb.results.
"""

from __future__ import annotations

import argparse
import sys
import traceback
import warnings
from collections.abc import Callable

from flexmb.app.casefile import load_case, resolve_params
from flexmb.app.cli_common import (
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_RUN_FAILED,
    EXIT_USAGE,
    error,
    overrides,
    say,
)
from flexmb.app.cli_results import PLOT_WORDS, cmd_animate, cmd_export, cmd_plot
from flexmb.app.cli_sweep import (
    _split_values,  # noqa: F401  (re-exported: the tests of --grid values import it from here)
    cmd_sweep,
)
from flexmb.app.companions import Companions, companion_params
from flexmb.app.describe import describe
from flexmb.app.progress import ProgressBar
from flexmb.app.run import MAX_FRAMES, RunStart, build_model, run_case
from flexmb.errors import CaseError, CliError, FlexmbError, RunDirError, SolverError
from flexmb.results import animation
from flexmb.results.files import disk_problem
from flexmb.results.load import load
from flexmb.version import __version__

__all__ = ["main", "build_parser", "CliError", "EXIT_OK", "EXIT_RUN_FAILED", "EXIT_USAGE", "EXIT_INTERNAL",
           "EXIT_INTERRUPTED"]


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors and exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise CliError(message, f"see '{self.prog} --help'")


# ---------------------------------------------------------------------------------- helpers
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


def _dt_arg(text: str) -> float | str:
    """--dt: a step in seconds or 'auto' (error-controlled steps)."""
    if text.strip().lower() == "auto":
        return "auto"
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is neither a number of seconds nor 'auto'") from None


def _summary_lines(summary: dict) -> list[str]:
    return [f"  {k}: {v:.6g}" if isinstance(v, float) else f"  {k}: {v}" for k, v in summary.items()]


# ---------------------------------------------------------------------------------- commands
def cmd_run(args) -> int:
    """flexmb run: simulate a case, stream the result, write ParaView files, plots and summary."""
    bar: ProgressBar | None = None
    start: RunStart | None = None

    def on_start(s: RunStart):
        nonlocal bar, start
        start = s
        st = s.settings
        say(f"{s.case.title}")
        say(f"case {s.case.path} -> {s.out}   {st.describe()}, {s.model.n_u} coordinates")
        bar = ProgressBar(st.t_end, stream=sys.stderr) if not args.quiet else None
        return bar.update if bar else None

    try:
        outcome = run_case(args.case, overrides(args), args.out, overwrite=args.overwrite, every=args.every,
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
        error(f"case '{outcome.case.name}': {outcome.postprocess_error}",
              "the run itself finished and is saved; run with --debug for the traceback")
    say("summary:")
    for line in _summary_lines(outcome.summary):
        say(line)
    say(f"results:  {out}  (flexmb.load('{out}'))")
    say(f"paraview: {outcome.paraview}")
    say("plots:    " + ", ".join(str(p) for p in outcome.plots))
    if outcome.ok:
        return EXIT_OK
    if not outcome.completed:
        if outcome.kind == "failed" and res.t.size == 0:
            error(f"run failed at the start: {res.status.partition(': ')[2]}",
                  f"the run directory {out} records it; check the model (flexmb info) and its initial state")
        else:
            error(f"run did not finish: {res.status}",
                  f"the {res.t.size} output rows computed before are saved in {out}; a smaller --dt often helps")
    return EXIT_RUN_FAILED


def cmd_info(args) -> int:
    """flexmb info: describe the case's model."""
    try:
        case = load_case(args.case)
        params = resolve_params(case, overrides(args))
        model = build_model(case, params)
    except CaseError as exc:
        raise CliError(str(exc), exc.hint) from exc
    say(f"{case.title}  ({case.path})")
    dt = params["dt"]  # the cut table's omega*dt: for dt = "auto" the step is not known beforehand
    say(describe(model, dt=float(dt) if isinstance(dt, (int, float)) else None))
    settings = case.settings(params)  # a case's DEFAULTS may leave rho_inf out: the run's default then
    say(f"run: {settings.describe()}")
    if case.takes_companions:  # the further runs `flexmb run` starts beside this one
        try:
            say(Companions(case, companion_params(case, params), base=params).describe())
        except CaseError as exc:
            raise CliError(str(exc), exc.hint) from exc
    from flexmb.engine.linalg import blas_info  # imports CHOLMOD: only here
    from flexmb.solvers.generalized_alpha import GeneralizedAlpha  # builds the solver: only here

    # the run's steps: fixed or error-controlled (dt "auto"), and whether the case's monitor sees every one
    solver = GeneralizedAlpha(model, rho_inf=settings.rho_inf).describe_solver(
        fixed_steps=dt != "auto", callback=getattr(case.module, "monitor", None) is not None)
    say(f"linear solver: {solver}")
    say(f"BLAS under CHOLMOD: {blas_info()}")
    return EXIT_OK


# ---------------------------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``flexmb`` command: the subcommands run, info, export, plot, animate and
    sweep, each declared by its ``_add_*`` function below, in that order."""
    codes = "exit codes: 0 ok, 1 run failed or incomplete, 2 usage or bad input, 3 internal error, 130 interrupted"
    p = _Parser(prog="flexmb", description="flexmb: sparse finite-element flexible multibody dynamics.", epilog=codes)
    p.add_argument("--version", action="version", version=f"flexmb {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    def command(name: str, func: Callable[[argparse.Namespace], int], **text: str) -> argparse.ArgumentParser:
        """The subcommand ``name`` (``text``: its help and description) that runs ``func``, with the exit
        codes in its epilog; every subcommand takes --debug too (added last, after all are declared)."""
        sp = sub.add_parser(name, epilog=codes, **text)
        sp.set_defaults(func=func)
        return sp

    for add in (_add_run, _add_info, _add_export, _add_plot, _add_animate, _add_sweep):
        add(command)
    for sp in sub.choices.values():  # every subcommand, its last option
        sp.add_argument("--debug", action="store_true", help="print the traceback of errors")
    return p


_Command = Callable[..., argparse.ArgumentParser]
"""build_parser's ``command(name, func, help=..., description=...)``: adds a subcommand, returns its parser."""


def _params(sp: argparse.ArgumentParser) -> None:
    """The repeatable --param NAME=VALUE option of the subcommands that build a case."""
    sp.add_argument("--param", "-p", action="append", metavar="NAME=VALUE",
                    help="set a case parameter; VALUE is a Python literal (2.5, 'text', [1, 2]) or a bare word")


def _add_run(command: _Command) -> None:
    """``flexmb run CASE``: simulate a case file into a run directory."""
    r = command("run", cmd_run, help="run a case file", description="Run a case file: simulate, stream the result to "
                "DIR, write ParaView files (DIR/paraview), plots (DIR/*.png) and the case's summary.")
    r.add_argument("case", metavar="CASE", help="case file (Python, with DEFAULTS and build())")
    _params(r)
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


def _add_info(command: _Command) -> None:
    """``flexmb info CASE``: describe a case's model."""
    i = command("info", cmd_info, help="describe a case's model", description="Print the nodes, bodies, elements, "
                "joints, the joint tree, the loops and where each is cut, and the degrees of freedom.")
    i.add_argument("case", metavar="CASE")
    _params(i)


def _result_arguments(parser: argparse.ArgumentParser, out_metavar: str, out_help: str) -> None:
    """The RESULT argument of export, plot and animate, and their ``--out`` (``out_metavar``, ``out_help``)."""
    parser.add_argument("result", metavar="RESULT", help="a run directory (of flexmb run) or a result file (.npz)")
    parser.add_argument("--out", metavar=out_metavar, help=out_help)


def _add_export(command: _Command) -> None:
    """``flexmb export RESULT``: write a result for ParaView."""
    e = command("export", cmd_export, help="write a result for ParaView", description="Write a result (run directory or "
                ".npz) for ParaView: pvd = VTU files + .pvd collection (default), xdmf = XDMF 3 + HDF5.")
    _result_arguments(e, "DIR", "output directory (default: RESULT/paraview)")
    e.add_argument("--format", choices=("pvd", "xdmf"), default="pvd", help="file format (default pvd)")
    e.add_argument("--name", help="file name stem (default: the case name)")
    e.add_argument("--every", type=int, metavar="N", help=f"every N-th output row (default: at most {MAX_FRAMES} frames)")
    e.add_argument("--overwrite", action="store_true", help="replace existing files of the same name")


def _add_plot(command: _Command) -> None:
    """``flexmb plot RESULT QUANTITY...``: plot time histories into PNG files."""
    pl = command("plot", cmd_plot, help="plot time histories",
                 description="Plot quantities of a result into PNG files: "
                 + "; ".join(f"'{k}' = {v}" for k, v in PLOT_WORDS.items())
                 + "; or names of coordinates (together in one plot), nodes (x, y, z) or beam elements "
                 "(their six section forces); or quantities by name into quantities.png: a coordinate's rate "
                 "NAME.u and acceleration NAME.udot (NAME: a coordinate or a one-coordinate joint), a "
                 "spring-damper's NAME.length, NAME.rate, NAME.force, a loop cut's NAME.fx ... NAME.mz, a "
                 "beam element's NAME.N, .Vy, .Vz, .T, .My, .Mz.")
    _result_arguments(pl, "DIR", "output directory (default: RESULT/plots)")
    pl.add_argument("quantity", metavar="QUANTITY", nargs="+")


def _add_animate(command: _Command) -> None:
    """``flexmb animate RESULT``: an animation (GIF or MP4) of the motion."""
    an = command("animate", cmd_animate, help="write an animation (GIF or MP4) of the motion",
                 description="Draw the mechanism of a result (run directory or .npz) at its output times into "
                 "an animation that opens anywhere, without ParaView: beams, rigid bodies, joints and bushings, "
                 "the time in the title, fixed axes that hold the whole motion. GIF (default) or MP4 (needs "
                 "ffmpeg), chosen by the file name. Written inside a run directory, the file is recorded in its "
                 "manifest (a later 'flexmb run --overwrite' removes it).")
    _result_arguments(an, "FILE", "animation file, ending in .gif or .mp4 (default: RESULT/animation.gif; for "
                      "RESULT.npz: RESULT.gif)")
    an.add_argument("--every", type=int, metavar="N",
                    help=f"draw every N-th output row (default: at most {animation.MAX_FRAMES} frames)")
    an.add_argument("--fps", type=float, default=20.0, metavar="F",
                    help=f"frames per second (default 20; GIF at most {animation.MAX_GIF_FPS:g})")
    an.add_argument("--view", choices=animation.VIEWS, default="auto",
                    help="xy, xz, yz: that plane (first letter across); 3d; auto (default): the plane of the motion, "
                    "or 3d if it is spatial")
    an.add_argument("--overwrite", action="store_true", help="replace an existing file of that name")


def _add_sweep(command: _Command) -> None:
    """``flexmb sweep CASE``: run a case for many parameter sets."""
    sw = command("sweep", cmd_sweep, help="run a case for many parameter sets (local processes or Dask)",
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
    _params(sw)
    sw.add_argument("--t-end", type=float, help="end time [s] of every run (default: the case's t_end)")
    sw.add_argument("--dt", type=_dt_arg, help="time step [s] of every run, or 'auto' (default: the case's dt)")
    sw.add_argument("--tol", type=float, help="error tolerance of --dt auto")
    sw.add_argument("--output", "-o", action="append", metavar="SPEC",
                    help="an extra column: node:NAME (final position), coordinate:NAME (final value; NAME.u its "
                    "rate, NAME.udot its acceleration), final:NAME (final value of any quantity by name: "
                    "coordinates and their rates, spring-damper NAME.length/.rate/.force, cut NAME.fx..., beam NAME.N...), "
                    "peak:NAME (its largest "
                    "magnitude), "
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
        error(str(exc), exc.hint)
        return exc.code
    except FlexmbError as exc:  # one the commands did not expect: still the user's input or the run, not a bug
        if debug:
            traceback.print_exc()
        error(str(exc), exc.hint)
        return EXIT_RUN_FAILED if isinstance(exc, SolverError) else EXIT_USAGE
    except KeyboardInterrupt:
        print("flexmb: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:
        if debug:
            traceback.print_exc()
        if disk_problem(exc):  # the disk or the file system refused a write: the user's environment, not a bug
            error(*disk_problem(exc))
            return EXIT_USAGE
        print(f"flexmb: error: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        print("  hint: this is a bug in flexmb; rerun with --debug and report the traceback", file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
