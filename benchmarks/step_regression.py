"""Process time per step of seed cases and benchmark models under several checkouts.

The models: seed cases, the falling flexible link, the falling rigid chain and the N-four-bar closed by rigid cuts.

Guards against the step regression of issue 38 (beam/loop models' compiled step 35-75 % slower than at
2b9f5e9). Each checkout is timed in its own process, the checkouts one after the other and their order
swapped every round, so all see the same load of the shared machine. Within a process every case is
simulated once to warm numba's caches (not counted), then ``--repeats`` times; each repeat is timed with
``time.process_time`` around :func:`flexmb.simulate` only (no run folder, no monitor, no plots). Prints a
Markdown table of the minimum and median ms/step over all repeats of all rounds.

A checkout is ``LABEL=DIR``: DIR's own ``.venv/bin/python`` when it has one, else this interpreter with
``PYTHONPATH=DIR`` (a bisection worktree without a virtual environment; the worker prints
``flexmb.__file__`` so the import can be checked).

    python benchmarks/step_regression.py before=/path/to/old after=. --rounds 3 --repeats 3
    python benchmarks/step_regression.py before=/path/to/old after=. --cases rigid_chain falling_link
    python benchmarks/step_regression.py --worker --repeats 3      # one process: JSON lines on stdout
    python benchmarks/step_regression.py A=/a B=/b --path step --cases zahariev_six_link change_point_four_bar
    python benchmarks/step_regression.py before=/old after=. --output-every 1 100 --cases change_point_four_bar

``--path run`` (the default) times the runs as a user makes them: fixed steps without a callback, so a model of the
compiled element step takes its whole-run call between output rows (flexmb/solvers/element_run.py); ``--path
step`` passes a callback that does nothing, so every step is one call from Python (step_backends.py
CompiledElementNewton: the step-by-step path). ``--compile`` also times, per checkout and round, a first run in a
process with empty numba caches (NUMBA_CACHE_DIR a new folder): numba's compile of every kernel the cases use.
``--output-every`` times each case at each of the given output intervals instead of its own (a row every
step against one every 100: what a row costs); ``--cases`` keeps the cases whose label contains one of the words.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# (label, case file stem, or None for the falling link, "chain" / "chain_step" for the falling rigid chain,
# "rigid_four_bar" for the N-four-bar with rigid cuts, t_end [s], n_elements of the falling link, links of the chain
# or windows of the four-bar)
CASES = [
    ("zahariev_six_link", "zahariev_six_link", 4.0, 0),
    ("change_point_four_bar", "change_point_four_bar", 2.6, 0),
    ("falling_link_N10", None, 0.5, 10),
    ("falling_link_N100", None, 0.2, 100),
    ("rigid_chain_N10_run", "chain", 0.3, 10),
    ("rigid_chain_N10_step", "chain_step", 0.3, 10),
    ("rigid_chain_N100_run", "chain", 0.3, 100),
    ("rigid_chain_N100_step", "chain_step", 0.3, 100),
    ("rigid_cut_four_bar_N10", "rigid_four_bar", 0.5, 10),
    ("rigid_cut_four_bar_N40", "rigid_four_bar", 0.5, 40),
    ("rotational_chain_N10", "rotational", 0.5, 10),
    ("follower_beam", "follower_beam", 0.5, 0),
    ("follower_tree", "follower_tree", 0.5, 0),
    ("excavator", "excavator", 1.0, 0),  # cylinders (actuators), a rigid cut and a flexible stick
]


def _falling_link(n: int):
    """The pinned flexible link of n co-rotational elements falling under gravity, its step and run settings."""
    import flexmb as fm

    E, rho, A, I, L = 0.7e11, 3000.0, 4e-4, 2e-7, 2.0
    b = fm.ModelBuilder(gravity=(0, -9.81, 0))
    sec = fm.BeamSection(E=E, G=E / 2.6, A=A, Iy=I, Iz=I, J=2 * I, rho=rho)
    nodes = b.add_flexible_link("link", (0, 0, 0), (L, 0, 0), n, sec)
    b.add_joint("pin", "revolute", "ground", nodes[0], axis=(0, 0, 1))
    return b.compile(require_mass=False), dict(dt=1e-3, rho_inf=0.8, output_every=50)


def _rigid_chain(n: int, per_step: bool):
    """benchmarks/chain_fall.py's falling chain of n rigid links (rho_inf 0.9, dt 1e-3 s); ``per_step``: with a
    callback, so each step is one compiled tree step (the tree step) instead of many per call (the tree run)."""
    from benchlib import fm_chain

    import flexmb as fm

    settings = dict(dt=1e-3, rho_inf=0.9, rtol=1e-10)
    if per_step:
        settings["callback"] = lambda st, ev: None
    return fm_chain(fm, n), settings


def _rigid_four_bar(n: int):
    """benchmarks/peer_loops.py's N-four-bar of n windows closed by rigid cuts (benchmarks/n_four_bar_model.py; the
    cranks upright at the start, dt 1e-3 s, rho_inf 0.9, a row every 10 steps): the rigid cuts' kernels
    (elements/rigid_cut_kernels.py) in the compiled element step."""
    from n_four_bar_model import n_four_bar

    return n_four_bar(n, "rigid"), dict(dt=1e-3, rho_inf=0.9, output_every=10)


def _rotational_chain(n: int):
    """A chain of n links on revolute joints about z under gravity, each joint also held by a rotational
    spring-damper about its axis (docs/rotational_spring_damper.md: element state, the turns counted), the first
    joint driven at two turns a second (dt 1e-3 s, a row every 50 steps)."""
    import numpy as np

    import flexmb as fm

    mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    prev = "ground"
    for i in range(n):
        name = f"l{i}"
        mb.add_node(name, (0.2 * i, 0.0, 0.0))
        mb.add_body(name, name, 1.0, (0.1, 0.0, 0.0), np.diag([1e-4, 3.4e-3, 3.4e-3]))
        mb.add_joint(f"j{i}", "revolute", prev, name, point=(0.2 * i, 0.0, 0.0), axis=(0, 0, 1))
        mb.add_rotational_spring_damper(f"s{i}", prev, name, axis=(0, 0, 1), stiffness=5.0, damping=0.05)
        prev = name
    w = 4.0 * np.pi
    mb.add_drive("j0", lambda t: w * t, lambda t: w, lambda t: 0.0)
    return mb.compile(), dict(dt=1e-3, output_every=50)


def _follower(stem: str):
    """benchmarks/motion_load_models.py's follower beam or follower pendulum (a rigid tree) (dt 1e-3 s, a row every
    50 steps)."""
    from motion_load_models import follower_beam, follower_pendulum

    return (follower_beam if stem == "follower_beam" else follower_pendulum)(), dict(dt=1e-3, output_every=50)


def _case(stem: str | None, n: int):
    """The model and run settings of one row of CASES."""
    if stem is None:
        return _falling_link(n)
    if stem == "rigid_four_bar":
        return _rigid_four_bar(n)
    if stem == "rotational":
        return _rotational_chain(n)
    if stem.startswith("follower"):
        return _follower(stem)
    if stem.startswith("chain"):
        return _rigid_chain(n, stem == "chain_step")
    return _seed_case(stem)


def _seed_case(stem: str):
    """A seed case's model and run settings (its DEFAULTS), from the checkout flexmb is imported from."""
    import flexmb
    from flexmb.app.casefile import load_case, resolve_params

    root = Path(flexmb.__file__).resolve().parents[1]
    case = load_case(root / "cases" / f"{stem}.py")
    params = resolve_params(case, {})
    settings = case.settings(params).as_dict()
    settings.pop("t_end")
    return case.build(params), settings


def _no_op(state, evaluation) -> None:
    """A callback that does nothing: every step then returns to Python (``--path step``)."""


def worker(repeats: int, every: list[int] | None = None, cases: list[str] | None = None, path: str = "run") -> None:
    """Time every case (those whose label contains one of ``cases``, None: all) ``repeats`` times after one
    warm-up run on ``path``, at each output interval of ``every`` (None: the case's own); one JSON line per case
    and interval on stdout."""
    _elements_from_checkout()
    import flexmb as fm
    import flexmb.elements as fe

    print(json.dumps({"flexmb": fm.__file__, "elements": fe.__file__}), flush=True)
    for label, stem, t_end, n in CASES:
        if cases and not any(c in label for c in cases):
            continue
        model, settings = _case(stem, n)
        if path == "step":
            settings["callback"] = _no_op
        t0 = time.process_time()
        fm.simulate(model, min(t_end, 0.05), **settings)  # numba's compile / cache load
        print(json.dumps({"case": label, "first": time.process_time() - t0}), flush=True)
        for k in every or [None]:
            run = settings if k is None else {**settings, "output_every": k}
            times, steps, status = [], 0, ""
            for _ in range(repeats):
                t0 = time.process_time()
                res = fm.simulate(model, t_end, **run)
                times.append(time.process_time() - t0)
                steps, status = int(res.stats.get("steps", 0)), res.status
            name = label if k is None else f"{label} every {k}"
            print(json.dumps({"case": name, "steps": steps, "status": status, "seconds": times}), flush=True)


def _elements_from_checkout() -> None:
    """In a worker run with ``PYTHONPATH=DIR`` (:func:`_command`), import ``flexmb.elements`` from DIR/elements too.

    ``flexmb.elements`` is the top-level folder ``elements/`` mapped into the package by the editable install; a
    checkout without its own virtual environment would otherwise take the elements of the installed checkout beside
    its own flexmb/ (a mixed import: what the 2026-11-28 A/B runs through PYTHONPATH measured)."""
    root = os.environ.get("STEP_REGRESSION_CHECKOUT")
    if not root:
        return
    import importlib.abc
    import importlib.util

    class _Elements(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name != "flexmb.elements":
                return None
            d = Path(root) / "elements"
            return importlib.util.spec_from_file_location(name, d / "__init__.py", submodule_search_locations=[str(d)])

    sys.meta_path.insert(0, _Elements())


def _command(directory: Path) -> tuple[list[str], dict[str, str]]:
    """The interpreter (and environment) that imports flexmb and its elements from ``directory``."""
    env = dict(os.environ)
    py = directory / ".venv" / "bin" / "python"
    if py.exists():
        return [str(py)], env
    env["PYTHONPATH"] = str(directory)
    env["STEP_REGRESSION_CHECKOUT"] = str(directory)
    return [sys.executable], env


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkouts", nargs="*", help="LABEL=DIR")
    ap.add_argument("--rounds", type=int, default=3, help="processes per checkout (order swapped every round)")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs per case and process")
    ap.add_argument("--path", choices=("run", "step"), default="run", help="whole-run calls or one call per step")
    ap.add_argument("--compile", action="store_true", help="also time a first run on empty numba caches")
    ap.add_argument("--output-every", type=int, nargs="+", help="output intervals to time each case at (default: its own)")
    ap.add_argument("--cases", nargs="+", help="only the cases whose label contains one of these (default: all)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    options = (["--output-every", *map(str, a.output_every)] if a.output_every else []) + \
        (["--cases", *a.cases] if a.cases else [])
    if a.worker:
        worker(a.repeats, a.output_every, a.cases, a.path)
        return 0
    checkouts = [(s.split("=", 1)[0], Path(s.split("=", 1)[1]).resolve()) for s in a.checkouts]
    ms: dict[tuple[str, str], list[float]] = {}
    first: dict[str, list[float]] = {}
    for rnd in range(a.rounds):
        for label, d in checkouts[:: 1 if rnd % 2 == 0 else -1]:
            cmd, env = _command(d)
            worker_cmd = [*cmd, str(Path(__file__).resolve()), "--worker", "--repeats", str(a.repeats), "--path", a.path,
                          *options]
            if a.compile:  # a first run on empty caches: the compile seconds of the first case
                with tempfile.TemporaryDirectory() as cache:
                    cold = subprocess.run([*worker_cmd[:4], "0", *worker_cmd[5:]], capture_output=True, text=True,
                                          env={**env, "NUMBA_CACHE_DIR": cache}, cwd=str(d))
                seconds = [json.loads(x).get("first") for x in cold.stdout.splitlines()]
                first.setdefault(label, []).append(sum(s for s in seconds if s is not None))
                print(f"# round {rnd} {label}: first runs on empty caches {first[label][-1]:.1f} s", file=sys.stderr,
                      flush=True)
            out = subprocess.run(worker_cmd, capture_output=True, text=True, env=env, cwd=str(d))
            if out.returncode != 0:
                print(out.stderr, file=sys.stderr)
                return 1
            for line in out.stdout.splitlines():
                r = json.loads(line)
                if "flexmb" in r or "first" in r:
                    if "flexmb" in r:
                        print(f"# round {rnd} {label}: flexmb from {r['flexmb']}, its elements from {r['elements']}",
                              file=sys.stderr, flush=True)
                        mixed = [f for f in (r["flexmb"], r["elements"]) if not Path(f).resolve().is_relative_to(d.resolve())]
                        if mixed:  # a worker that measured another checkout's code: refuse the comparison
                            print(f"step_regression: {label}={d} imported {mixed} from outside it", file=sys.stderr)
                            return 1
                    continue
                ms.setdefault((r["case"], label), []).extend(1e3 * s / max(r["steps"], 1) for s in r["seconds"])
                print(f"#   {r['case']}: {r['steps']} steps, {r['status']}, ms/step "
                      + " ".join(f"{1e3 * s / max(r['steps'], 1):.4f}" for s in r["seconds"]), file=sys.stderr, flush=True)
    print(f"load average at the end: {os.getloadavg()[0]:.2f}; {a.rounds} rounds x {a.repeats} repeats; "
          "process ms/step, min (median)\n")
    print("| case | " + " | ".join(label for label, _ in checkouts) + " |")
    print("|---|" + "---|" * len(checkouts))
    for label in dict.fromkeys(case for case, _ in ms):
        cells = [f"{min(v):.4f} ({statistics.median(v):.4f})" if (v := ms.get((label, c))) else "-" for c, _ in checkouts]
        print(f"| {label} | " + " | ".join(cells) + " |")
    if first:
        print("\nfirst runs of all cases on empty numba caches, process s (compile and run), per round: "
              + "; ".join(f"{c}: " + ", ".join(f"{s:.1f}" for s in first[c]) for c, _ in checkouts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
