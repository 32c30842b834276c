"""Six-link mechanism study: peak longitudinal elastic force in links 3 and 5 versus damping.

Sweeps the ``damping`` parameter of ``cases/zahariev_six_link.py`` (Zahariev & Cuadrado 2011,
§4: the six-link mechanism whose links are flexible) and plots, for each value, the largest
|axial force| over time in the beam elements of link 3 and of link 5 (elements named
``link3.e0``, ``link3.e1``, … and ``link5.e…`` by ``add_flexible_link``). More damping takes
the elastic vibration out of the links, so the peaks fall towards the quasi-static force of
the rigid motion.

Run:  python cases/study_six_link_damping.py [--out DIR] [--damping 0,0.01,...] [--t-end T] [--param NAME=VALUE ...]
                                             [--workers N | --scheduler ADDR]

The paper gives no damping value (its Fig. 10 only shows the forces "taking into account
damping"), so the default grid is 0 to 4 times the case's own default damping, and each run
covers the first ``--t-end`` = 2 s (the exaggerated forces when leaving the initial singular
configuration) to keep the study to minutes; ``--t-end 8`` covers the paper's whole motion.

Every run goes through the same pipeline as ``flexmb run`` (flexmb.app.run), the case's
monitor included: a run whose link force passes the elastic limit (``yield_strain`` · EA) is
stopped there, as the case is designed to be, with status ``stopped`` and the monitor's reason
in the table. Its peak is then the force at the stop (just above the limit); the plot marks
such points and the printed table names their status. ``--param`` sets any other parameter of
the case for every run (e.g. ``--param yield_strain=2e-5`` to see the stop within 0.1 s).

Writes DIR/summary.csv (the sweep table, flexmb.app.study.read_table), DIR/run_NNNN (each run's
result), DIR/peak_force_vs_damping.png and DIR/study.json. Rerunning resumes. If the six-link
case file is not there (or lacks the ``damping`` parameter or the link 3 and 5 elements), the
study says so and stops without running anything (exit code 0: skipped).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from flexmb.app.casefile import load_case, parse_param
from flexmb.app.study import DONE, read_table, sweep
from flexmb.errors import CaseError, StudyError
from flexmb.results.plots import plt, save_figure

CASE = Path(__file__).resolve().with_name("zahariev_six_link.py")
FACTORS = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0)  # default grid: these multiples of the case's own damping
FALLBACK = (0.0, 0.005, 0.01, 0.02, 0.05, 0.1)  # if the case's default damping is 0
T_END = 2.0
LINKS = ("link3", "link5")


def why_not_ready(case_path: Path) -> str:
    """'' if the six-link case has what the study needs, else what is missing."""
    if not case_path.is_file():
        return f"the six-link case file {case_path} is not there yet"
    try:
        case = load_case(case_path)
    except CaseError as exc:
        return f"the six-link case file does not load: {exc}"
    if "damping" not in case.defaults:
        return f"{case_path.name} has no 'damping' parameter (its parameters: {', '.join(sorted(case.defaults))})"
    try:
        names = case.build(case.defaults).elements["beam"].names
    except Exception as exc:
        return f"{case_path.name}: build() with its defaults failed: {type(exc).__name__}: {exc}"
    missing = [ln for ln in LINKS if not any(n.startswith(f"{ln}.e") for n in names)]
    if missing:
        prefixes = sorted({n.rsplit(".", 1)[0] for n in names})
        return f"{case_path.name} has no beam elements {', '.join(m + '.e*' for m in missing)} (its links: {', '.join(prefixes)})"
    return ""


def plot(damping: np.ndarray, peaks: dict[str, np.ndarray], path: Path, stopped: np.ndarray | None = None) -> Path:
    """Peak axial force of each link versus the damping parameter; runs the case's monitor
    stopped at the elastic limit (``stopped``, bool per point) are circled in red."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for link, p in peaks.items():
        ax.plot(damping, p, "o-", label=f"{link}: max |N| over the run")
    if stopped is not None and stopped.any():
        for p in peaks.values():
            ax.plot(damping[stopped], p[stopped], "o", mfc="none", mec="red", ms=12)
        ax.plot([], [], "o", mfc="none", mec="red", label="run stopped at the elastic limit (its peak: the force there)")
    ax.set_xlabel("damping parameter of the links")
    ax.set_ylabel("peak longitudinal elastic force |N| [N]")
    ax.set_title("six-link mechanism: peak link forces versus damping")
    ax.grid(True, alpha=0.3)
    ax.legend()
    return save_figure(fig, path)


def main(argv: list[str] | None = None) -> int:
    """Run (or resume) the damping sweep and plot the peak link forces."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="runs/study_six_link_damping", help="sweep directory")
    ap.add_argument("--damping", help="damping values, comma-separated (default: 0, 1/4, 1/2, 1, 2 and 4 times the "
                    f"case's default damping; {', '.join(map(str, FALLBACK))} if that is 0)")
    ap.add_argument("--t-end", type=float, default=T_END,
                    help=f"simulated time per run [s] (default {T_END}: leaving the initial singular configuration; "
                    "the paper's whole motion is about 8 s)")
    ap.add_argument("--param", "-p", action="append", metavar="NAME=VALUE", default=[],
                    help="set another parameter of the case for every run (as for flexmb run), e.g. yield_strain=2e-5")
    ap.add_argument("--case", default=str(CASE), help="the six-link case file (default cases/zahariev_six_link.py)")
    ap.add_argument("--workers", type=int, help="local worker processes (default: all cores)")
    ap.add_argument("--scheduler", help="Dask scheduler address (tcp://host:8786) instead of local processes")
    args = ap.parse_args(argv)
    case = Path(args.case)
    reason = why_not_ready(case)
    if reason:
        print(f"study_six_link_damping: skipped: {reason}; nothing was run.", file=sys.stderr)
        return 0
    if args.damping:
        values = [float(v) for v in args.damping.split(",")]
    else:
        d0 = float(load_case(case).defaults["damping"])
        values = [f * d0 for f in FACTORS] if d0 > 0 else list(FALLBACK)
    out = Path(args.out)
    try:
        params = dict(parse_param(p) for p in args.param)
    except CaseError as exc:
        print(f"study_six_link_damping: error: {exc}\n  hint: {exc.hint}", file=sys.stderr)
        return 2
    if args.t_end:
        params["t_end"] = args.t_end
    outputs = [f"peak_force:{ln}.e*" for ln in LINKS]
    try:
        s = sweep(case, grid={"damping": values}, params=params, outputs=outputs, out_dir=out, workers=args.workers,
                  scheduler=args.scheduler)
    except StudyError as exc:
        print(f"study_six_link_damping: error: {exc}\n  hint: {exc.hint}", file=sys.stderr)
        return 2
    tab = read_table(s.table)
    ok = np.array([st in DONE for st in tab["status"]])  # finished, or stopped by the monitor at the elastic limit
    damping = tab["damping"][ok]
    status = [st for st, k in zip(tab["status"], ok) if k]
    stopped = np.array([st == "stopped" for st in status], dtype=bool)
    peaks = {ln: tab[f"peak_N[{ln}.e*]"][ok] for ln in LINKS}
    png = plot(damping, peaks, out / "peak_force_vs_damping.png", stopped)
    (out / "study.json").write_text(json.dumps({"damping": damping.tolist(), "status": status,
                                                "final_time_s": tab["final_time_s"][ok].tolist(),
                                                **{f"peak_N_{ln}": p.tolist() for ln, p in peaks.items()}}, indent=1))
    print(f"sweep: {s.line()}")
    print(f"{'damping':>10}" + "".join(f"  {'peak |N| ' + ln + ' [N]':>20}" for ln in LINKS) + "  status")
    for k in range(len(damping)):
        print(f"{damping[k]:10.4g}" + "".join(f"  {peaks[ln][k]:20.5g}" for ln in LINKS) + f"  {status[k]}")
    print(f"plot: {png}")
    return 0 if s.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
