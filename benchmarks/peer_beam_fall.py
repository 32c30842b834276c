"""Falling Zahariev link: flexmb's 3-D co-rotational beam beside exudyn's 3-D geometrically exact beam (issue 14).

Model: E = 0.7e11 Pa, rho = 3000 kg/m^3, A = 4e-4 m^2, I = 2e-7 m^4 (both bending axes), L = 2 m, N
elements, pinned at x = 0 (only the rotation about z free), released at rest from horizontal (+x)
under gravity 9.81 m/s^2 along -y; h = 1e-3 s, generalized-alpha rho_inf = 0.8, t = 0 ... t_end (1 s).

* flexmb: ``fm.BeamSection(E, G=E/2.6, A, Iy=I, Iz=I, J=2I, rho)`` without shear factors (Euler-Bernoulli
  co-rotational beam), ``add_flexible_link`` with N elements, revolute joint to ground about z, ``fm.simulate(
  rho_inf=0.8, rtol=...)`` with flexmb's other defaults (CHOLMOD, reuse_factor 'auto'), output rows only
  at t = 0 and t_end (exudyn writes no solution file either). 5-step runs of a 2-link chain and a
  2-element link, and 3 steps of a PARALLEL_MIN-element link (the threaded passes), first compile the
  numba kernels (reported as "JIT warm-up", not in the row).
* exudyn: ``ObjectBeamGeometricallyExact`` (3-D Simo-Reissner beam, 6 coordinates per node) on
  ``NodeRigidBodyRotVecLG`` or ``NodeRigidBodyRxyz`` nodes; ``exudyn.BeamSection`` stiffness
  diag(EA, GA, GA, GJ, EI, EI) with G = E/2.6, J = 2I (shear stiffness GA without correction factor:
  effectively Euler-Bernoulli at this slenderness), inertia diag(rho 2I, rho I, rho I), mass per length
  rho A; gravity by ``LoadMassProportional`` on each element; pin = ``CoordinateConstraint`` on the
  three displacements and the first two rotation coordinates of node 0 (for both node types these
  leave exactly the rotation about z). Generalized-alpha spectral radius 0.8,
  ``newton.relativeTolerance`` as given, everything else exudyn's defaults (modified Newton, adaptive
  step reduction on Newton failure, absolute tolerance 1e-10), ``EigenSparse``, 1 thread, no
  solution file.
* Stall guard (exudyn only): exudyn cuts its step when Newton fails, so a run that keeps failing may
  never end (with relative tolerance 1e-8 this stiff link stalls already at N = 100). With the guard a
  pre-step Python function stops the run when its simulated time advanced by less than 10 h in
  --stall-seconds of wall time, or at the time limit; the row then says "stopped" with the time
  reached and the step size. A Python call per step costs exudyn a few microseconds per step (several
  per cent of a small model's step), so with ``--exu-guard auto`` (default) a first guarded run probes
  each setting: if it stops, that is the row (not repeated); if it finishes, the timed repeats run
  without the guard (the guard only returns True, so they compute the same steps). ``on``: every run
  guarded; ``off``: no guard, a stalled run is killed at the time limit.

Measured per run, each in its own subprocess: status, simulated time reached, steps taken, wall and
process CPU time per step of size h (ms per h of simulated time: exudyn's reduced steps are counted
by the time they cover), Newton iterations and Jacobians (factorizations) per step taken, peak
resident memory of the child (ru_maxrss) and its value before the model was built, the tip position
at the end and its distance from flexmb's rtol 1e-10 tip for the same N. The median of --repeats
runs is reported; a run that does not finish is not repeated.

Run (from the repository root; exudyn is the benchmark-only extra: pip install -e '.[bench]'):

    python benchmarks/peer_beam_fall.py                        # N = 10,100,1000,4000, 1 s, 3 repeats
    python benchmarks/peer_beam_fall.py --n 10,100 --t-end 0.05 --repeats 1 --results-dir /tmp/x   # check

Options: --n, --t-end, --dt, --programs (flexmb,exudyn), --fm-rtol (1e-10,1e-4), --exu-rtol (1e-4,1e-8),
--exu-nodes (RotVecLG,Rxyz), --exu-guard (auto|on|off), --stall-seconds, and the common --repeats,
--blas, --threads, --max-minutes, --results-dir, --json.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import warnings

import benchlib as bl

E, RHO, AREA, INERTIA, LENGTH, GRAVITY = 0.7e11, 3000.0, 4e-4, 2e-7, 2.0, 9.81
G_SHEAR = E / 2.6
RHO_INF = 0.8
TIP_REF = (-1.7626, -0.9451)  # tip at t = 1 s (exudyn 2-D, N = 10 and 100; benchmarks/README.md)


# ---------------------------------------------------------------- flexmb worker

def fm_link(fm, n: int, length: float = LENGTH):
    """The link (``length`` metres, default the model's 2 m) as a flexmb model, and the name of its tip node."""
    sec = fm.BeamSection(E, G_SHEAR, AREA, INERTIA, INERTIA, 2 * INERTIA, RHO)
    mb = fm.ModelBuilder(gravity=(0.0, -GRAVITY, 0.0))
    nodes = mb.add_flexible_link("link", (0.0, 0.0, 0.0), (length, 0.0, 0.0), n, sec)
    mb.add_joint("pin", "revolute", "ground", nodes[0], axis=(0.0, 0.0, 1.0))
    return mb.compile(), nodes[-1]


def run_flexmb(n: int, t_end: float, dt: float, rtol: float) -> dict:
    import flexmb as fm

    warm_s = bl.fm_warm_up(fm, dt, threaded=True)
    base = bl.peak_mb()
    t0 = time.perf_counter()
    model, tip = fm_link(fm, n)
    build_s = time.perf_counter() - t0
    n_steps = int(round(t_end / dt))
    cpu0 = time.process_time()
    res = fm.simulate(model, t_end, dt, rho_inf=RHO_INF, rtol=rtol, output_every=n_steps)
    cpu = time.process_time() - cpu0
    out = bl.fm_step_numbers(res, dt, cpu)
    out.update({
        "program": "flexmb", "variant": "co-rotational 3-D", "tol": rtol, "n": n, "dof": getattr(model, "n_u", None),
        "peak_mb": bl.peak_mb(), "base_mb": base, "tip": [float(v) for v in res.node_position(tip)[-1][:2]],
        "build_s": build_s, "warmup_s": warm_s,
        "settings": f"gen-α ρ∞={RHO_INF}, Newton rtol={rtol:g}, CHOLMOD, flexmb defaults otherwise, "
                    f"output at t=0 and t_end only",
    })
    return out


# ---------------------------------------------------------------- exudyn worker

def exu_link(exu, eii, n: int, nodes_kind: str):
    """The link as an exudyn system (assembled): system container, main system, tip node."""
    import numpy as np

    sc = exu.SystemContainer()
    mbs = sc.AddSystem()
    sec = exu.BeamSection()
    sec.stiffnessMatrix = np.diag([E * AREA, G_SHEAR * AREA, G_SHEAR * AREA, G_SHEAR * 2 * INERTIA, E * INERTIA, E * INERTIA])
    sec.inertia = np.diag([RHO * 2 * INERTIA, RHO * INERTIA, RHO * INERTIA])
    sec.massPerLength = RHO * AREA
    node_class = {"RotVecLG": eii.NodeRigidBodyRotVecLG, "Rxyz": eii.NodeRigidBodyRxyz}[nodes_kind]
    le = LENGTH / n
    nodes = [mbs.AddNode(node_class(referenceCoordinates=[i * le, 0.0, 0.0, 0.0, 0.0, 0.0])) for i in range(n + 1)]
    for i in range(n):
        beam = mbs.AddObject(eii.ObjectBeamGeometricallyExact(nodeNumbers=[nodes[i], nodes[i + 1]], length=le, sectionData=sec))
        mass = mbs.AddMarker(eii.MarkerBodyMass(bodyNumber=beam))
        mbs.AddLoad(eii.LoadMassProportional(markerNumber=mass, loadVector=[0.0, -GRAVITY, 0.0]))
    ground = mbs.AddNode(eii.NodePointGround(referenceCoordinates=[0.0, 0.0, 0.0]))
    mg = mbs.AddMarker(eii.MarkerNodeCoordinate(nodeNumber=ground, coordinate=0))
    for c in range(5):  # x, y, z and the first two rotation coordinates: the rotation about z stays free
        mn = mbs.AddMarker(eii.MarkerNodeCoordinate(nodeNumber=nodes[0], coordinate=c))
        mbs.AddObject(eii.CoordinateConstraint(markerNumbers=[mg, mn]))
    return sc, mbs, nodes[-1]


def run_exudyn(n: int, t_end: float, dt: float, rtol: float, nodes_kind: str, guard: bool, budget_s: float,
               stall_s: float) -> dict:
    warnings.simplefilter("ignore", DeprecationWarning)
    import exudyn as exu
    import exudyn.itemInterface as eii

    base = bl.peak_mb()
    t0 = time.perf_counter()
    sc, mbs, tip = exu_link(exu, eii, n, nodes_kind)
    ss = bl.exu_settings(exu, t_end, dt, rtol, RHO_INF)
    build_s = time.perf_counter() - t0
    out = bl.run_exudyn_solver(exu, mbs, ss, dt, guard, budget_s, stall_s)
    pos = mbs.GetNodeOutput(tip, exu.OutputVariableType.Position)
    out.update({
        "program": "exudyn", "variant": f"GeometricallyExact 3-D, {nodes_kind} nodes", "tol": rtol, "n": n,
        "dof": int(mbs.systemData.ODE2Size()), "constraints": int(mbs.systemData.AEsize()),
        "peak_mb": bl.peak_mb(), "base_mb": base, "tip": [float(pos[0]), float(pos[1])], "build_s": build_s,
        "settings": bl.exu_settings_text(exu, ss) + (", stall guard (pre-step function)" if guard else ""),
    })
    return out


# ---------------------------------------------------------------- driver


def configs(args) -> list[dict]:
    progs = [p.strip() for p in args.programs.split(",") if p.strip()]
    out = []
    if "flexmb" in progs:
        out += [{"program": "flexmb", "tol": t} for t in bl.floats(args.fm_rtol)]
    if "exudyn" in progs:
        out += [{"program": "exudyn", "nodes": k.strip(), "tol": t} for k in args.exu_nodes.split(",") if k.strip()
                for t in bl.floats(args.exu_rtol)]
    return out


def label(c: dict) -> str:
    return (f"flexmb rtol {bl.tol_text(c['tol'])}" if c["program"] == "flexmb"
            else f"exudyn {c['nodes']} {bl.tol_text(c['tol'])}")


def worker_cmd(args, c: dict, n: int, guard: bool = False) -> list[str]:
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", c["program"], "--n", str(n), "--t-end", repr(args.t_end),
           "--dt", repr(args.dt), "--max-minutes", repr(args.max_minutes), "--stall-seconds", repr(args.stall_seconds)]
    if c["program"] == "flexmb":
        return cmd + ["--fm-rtol", repr(c["tol"])]
    return cmd + ["--exu-rtol", repr(c["tol"]), "--exu-nodes", c["nodes"], "--exu-guard", "on" if guard else "off"]


def measure(args, c: dict, n: int, env: dict, budget: float) -> list[dict]:
    """The runs of one setting (see the stall guard in the module docstring)."""
    lab = f"N={n} {label(c)}"

    def run(guard: bool) -> dict:
        return bl.run_worker(worker_cmd(args, c, n, guard), env, budget * 1.5 + 60)

    if c["program"] == "exudyn" and args.exu_guard == "auto":
        probe = bl.repeat(lambda: run(True), 1, lab + " guarded probe")[0]
        if not bl.ok(probe):
            return [probe]
    return bl.repeat(lambda: run(c["program"] == "exudyn" and args.exu_guard == "on"), args.repeats, lab)


def _short(status: str) -> str:
    return status if len(status) <= 70 else status[:67] + "..."


def report(rows: list[dict], args, blas: str) -> str:
    ref = {r["n"]: r["tip"] for r in rows if r["label"] == "flexmb rtol 1e-10" and bl.ok(r) and r.get("tip")}
    head = ["N", "program", "tol", "status", "t reached s", "steps", "ms/step wall", "(min–max)", "CPU ms/step",
            "Newton it/step", "Jacobians/step", "peak MB (before model)", "tip x, y m", "Δtip m vs flexmb 1e-10", "DOF",
            "load"]
    lines = []
    for r in rows:
        tip = r.get("tip")
        d = (math.dist(tip, ref[r["n"]]) if tip and bl.ok(r) and r["n"] in ref else None)  # same time: both finished
        spread = r.get("ms_spread")
        lines.append([
            r["n"], r.get("variant_short", r["program"]), bl.tol_text(r.get("tol")), _short(r.get("status", "?")),
            bl.fmt(r.get("t_covered"), ".4g"), bl.fmt(r.get("steps"), ".0f"), bl.fmt(r.get("ms_per_step"), ".4g"),
            f"{spread[0]:.3g}–{spread[1]:.3g}" if spread else "–", bl.fmt(r.get("cpu_ms_per_step"), ".4g"),
            bl.fmt(r.get("newton_per_step"), ".2f"), bl.fmt(r.get("jac_per_step"), ".2f"),
            f"{bl.fmt(r.get('peak_mb'), '.0f')} ({bl.fmt(r.get('base_mb'), '.0f')})",
            f"{tip[0]:.5f}, {tip[1]:.5f}" if tip else "–", bl.fmt(d, ".1e"),
            bl.fmt(r.get("dof"), ".0f") + (f" + {r['constraints']} constr." if r.get("constraints") else ""),
            bl.fmt(r.get("load_before"), ".2f"),
        ])
    ns = sorted({r["n"] for r in rows})
    cols = [c for c in dict.fromkeys(r["label"] for r in rows)]
    summary = []
    for n in ns:
        by = {r["label"]: r for r in rows if r["n"] == n}
        cells = []
        for c in cols:
            r = by.get(c)
            cells.append("–" if r is None else bl.fmt(r.get("ms_per_step"), ".3g") if bl.ok(r) else
                         f"{r.get('status', '?').split(' ')[0]} (t = {bl.fmt(r.get('t_covered'), '.3g')} s)")
        fm_ref = by.get("flexmb rtol 1e-10")
        exu_ok = [r["ms_per_step"] for c, r in by.items() if c.startswith("exudyn") and bl.ok(r)]
        ratio = (min(exu_ok) / fm_ref["ms_per_step"] if exu_ok and fm_ref and bl.ok(fm_ref) else None)
        peaks = " / ".join(f"{bl.fmt(by[c].get('peak_mb'), '.0f')}" for c in cols if c in by)
        summary.append([n] + cells + [bl.fmt(ratio, ".2f"), peaks])
    text = [
        f"# Falling Zahariev link, flexmb vs exudyn 3-D beam ({time.strftime('%Y-%m-%d %H:%M')})",
        "",
        f"Model: E = {E:g} Pa, ρ = {RHO:g} kg/m³, A = {AREA:g} m², I = {INERTIA:g} m⁴, L = {LENGTH:g} m, pinned at one "
        f"end, falling from horizontal under g = {GRAVITY} m/s²; h = {args.dt:g} s, generalized-α ρ∞ = {RHO_INF}, "
        f"t_end = {args.t_end:g} s.",
        "",
        *bl.worker_lines(args, blas, " (a run that does not finish is not repeated); time limit "
                         f"{args.max_minutes:g} min per run."),
        "",
        "ms per step: wall (or CPU) time of the solve divided by the simulated time reached / h (so exudyn's reduced "
        "steps are charged by the time they cover); Newton it/step and Jacobians/step per step taken; peak MB: "
        "ru_maxrss of the run's process (in brackets: before the model was built, i.e. interpreter + imports "
        "(+ flexmb's JIT warm-up)).",
        "",
        "## Summary: ms per step (status if the run did not finish)",
        "",
        bl.table(["N"] + cols + ["best exudyn ÷ flexmb rtol 1e-10 (> 1: flexmb faster)", "peak MB (same order)"], summary),
        "",
        *bl.all_runs(head, lines, rows),
    ]
    notes = []
    for r in rows:
        if r.get("tip") and abs(r.get("t_covered", 0) - 1.0) < 1e-9:
            notes.append(f"* N={r['n']} {r['label']}: tip − reference {TIP_REF} (benchmarks/README.md) = "
                         f"({r['tip'][0] - TIP_REF[0]:+.1e}, {r['tip'][1] - TIP_REF[1]:+.1e}) m")
        extra = [f"build {r['build_s']:.2f} s" if "build_s" in r else "",
                 f"JIT warm-up {r['warmup_s']:.1f} s" if "warmup_s" in r else ""]
        extra = ", ".join(e for e in extra if e)
        if extra:
            notes.append(f"* N={r['n']} {r['label']}: {extra} (not in the row)")
    return bl.markdown(text, notes)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    bl.run_options(p, "10,100,1000,4000")
    p.add_argument("--programs", default="flexmb,exudyn")
    p.add_argument("--fm-rtol", default="1e-10,1e-4", help="flexmb Newton rtol values")
    p.add_argument("--exu-rtol", default="1e-4,1e-8", help="exudyn newton.relativeTolerance values")
    p.add_argument("--exu-nodes", default="RotVecLG,Rxyz", help="exudyn node types (RotVecLG, Rxyz)")
    p.add_argument("--exu-guard", default="auto", choices=("auto", "on", "off"),
                   help="exudyn stall guard: auto (a guarded probe, then unguarded repeats), on, off")
    p.add_argument("--stall-seconds", type=float, default=60.0)
    p.add_argument("--worker", choices=("flexmb", "exudyn"), help=argparse.SUPPRESS)
    bl.common_options(p)
    args = p.parse_args(argv)
    ns = [int(v) for v in args.n.split(",") if v.strip()]
    budget = 60.0 * args.max_minutes

    if args.worker == "flexmb":
        bl.emit(run_flexmb(ns[0], args.t_end, args.dt, bl.floats(args.fm_rtol)[0]))
        return 0
    if args.worker == "exudyn":
        bl.emit(run_exudyn(ns[0], args.t_end, args.dt, bl.floats(args.exu_rtol)[0], args.exu_nodes, args.exu_guard == "on",
                           budget, args.stall_seconds))
        return 0

    env, blas = bl.peer_env("peer_beam_fall", args)
    rows = []
    for n in ns:
        for c in configs(args):
            lab = label(c)
            print(f"N = {n}, {lab}:", file=sys.stderr, flush=True)
            row = bl.median_runs(measure(args, c, n, env, budget))
            row.update({"n": n, "program": c["program"], "tol": c["tol"], "label": lab,
                        "variant_short": "flexmb" if c["program"] == "flexmb" else f"exudyn {c['nodes']}"})
            rows.append(row)
    text = report(rows, args, blas)
    return bl.publish("peer_beam_fall", text, args.results_dir, args.json, rows)


if __name__ == "__main__":
    sys.exit(main())
