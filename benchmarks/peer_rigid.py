"""Small rigid mechanisms: flexmb beside exudyn's 3-D rigid bodies, same run (issue 14).

Models (uniform rods, horizontal along +x at rest, revolute joints about z, the first pinned to ground
at the origin, gravity 9.81 m/s^2 along -y; inertia about the centre of mass diag(0, m l^2/12, m l^2/12)):

* ``pendulum2``: double pendulum, rods 1 m, 1 kg, 10 s;
* ``chain10`` / ``chain100``: falling chain of 10 / 100 links of 0.1 m, 0.1 kg (benchmarks/chain_fall.py's
  chain), 1 s.

h = 1e-3 s and generalized-alpha rho_inf = 0.8 for both programs (the side-by-side settings of the beam
benchmark; chain_fall.py itself runs rho_inf = 0.9).

* flexmb: joint coordinates (one per revolute joint), ``fm.simulate(rho_inf, rtol)`` with its other
  defaults; output rows every second of simulated time only (t = 0, 1, 2, ...), to compare the answers.
  5-step runs of small models first compile the numba kernels (not in the row).
* exudyn: redundant coordinates: one ``ObjectRigidBody`` per rod on a 3-D rigid-body node at its centre
  of mass (``NodeRigidBodyEP``: Euler parameters with their constraint, ``NodeRigidBodyRxyz`` or
  ``NodeRigidBodyRotVecLG``, option --exu-nodes), the same mass and inertia (Ixx = 0: the joints fix the
  rotation about the rod), weight by ``LoadMassProportional``, ``ObjectJointRevoluteZ`` between
  ``MarkerBodyRigid`` markers at the rod ends (an ``ObjectGround`` marker at the origin for the first);
  generalized-alpha spectral radius rho_inf, ``newton.relativeTolerance`` as given, exudyn's other
  defaults (modified Newton, adaptive step), ``EigenSparse``, 1 thread, no solution file; the chain tip
  is stored by a ``SensorBody`` (storeInternal) every second of simulated time. No Python user function
  runs during the solve.

Agreement: the tip of the last rod (its free end) at every full second and the absolute angle of the
last rod at the end, each compared with flexmb at rtol 1e-10: "Δtip ≤ 1 s" is the largest distance up
to t = 1 s (a check that the models are the same), "Δtip end" and "Δangle end" at t_end (the double
pendulum is chaotic: over 10 s the answers of two correct integrators drift apart).

Per run (own subprocess): ms per step wall and CPU (time of the solve / (simulated time / h)), Newton
iterations and Jacobians per step taken, peak MB (ru_maxrss of the child; before the model in
brackets). Median of --repeats runs.

Run (from the repository root; exudyn: pip install -e '.[bench]'):

    python benchmarks/peer_rigid.py                      # all three models, 3 repeats
    python benchmarks/peer_rigid.py --t-end 0.05 --repeats 1 --results-dir /tmp/x    # quick check

Options: --models, --t-end (override every model's), --dt, --rho-inf, --fm-rtol (1e-10,1e-4), --exu-rtol
(1e-4,1e-8), --exu-nodes (EP,Rxyz,RotVecLG), and the common --repeats, --blas, --threads, --max-minutes,
--results-dir, --json.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import warnings

import benchlib as bl

MODELS = {  # name: (links, length m, mass kg, t_end s, description)
    "pendulum2": (2, 1.0, 1.0, 10.0, "double pendulum, rods 1 m, 1 kg"),
    "chain10": (10, 0.1, 0.1, 1.0, "falling chain, 10 rigid links 0.1 m, 0.1 kg"),
    "chain100": (100, 0.1, 0.1, 1.0, "falling chain, 100 rigid links 0.1 m, 0.1 kg"),
}
GRAVITY = 9.81
CHECK_PERIOD = 1.0  # s: the answers are compared at every full second


def check_period(t_end: float) -> float:
    return min(CHECK_PERIOD, t_end)


def wrap(a: float) -> float:
    """Angle in (-pi, pi]."""
    return math.atan2(math.sin(a), math.cos(a))


# ---------------------------------------------------------------- flexmb worker

def run_flexmb(model_name: str, t_end: float, dt: float, rho_inf: float, rtol: float) -> dict:
    import numpy as np

    import flexmb as fm

    n, length, mass, _, _ = MODELS[model_name]
    warm_s = bl.fm_warm_up(fm, dt)
    base = bl.peak_mb()
    t0 = time.perf_counter()
    model = bl.fm_chain(fm, n, length, mass, GRAVITY)
    build_s = time.perf_counter() - t0
    every = max(1, int(round(check_period(t_end) / dt)))
    cpu0 = time.process_time()
    res = fm.simulate(model, t_end, dt, rho_inf=rho_inf, rtol=rtol, output_every=every)
    cpu = time.process_time() - cpu0
    out = bl.fm_step_numbers(res, dt, cpu)
    last = f"n{n - 1}"
    x = np.asarray(res.node_position(last))  # (rows, 3): the last rod's node = its proximal joint
    axis = np.asarray(res.R)[:, list(res.node_names).index(last), :, 0]  # the rod's axis (node x) in global axes
    tips = x + length * axis
    out.update({
        "program": "flexmb", "model": model_name, "tol": rtol, "dof": getattr(model, "n_u", None),
        "check": [[float(t), float(p[0]), float(p[1])] for t, p in zip(res.t, tips)],
        "angle_end": float(math.atan2(axis[-1, 1], axis[-1, 0])),
        "peak_mb": bl.peak_mb(), "base_mb": base, "build_s": build_s, "warmup_s": warm_s,
        "settings": f"joint coordinates, gen-α ρ∞={rho_inf}, Newton rtol={rtol:g}, "
                    f"{'O(n) tree factorization' if res.stats.get('tree_solver') else 'CHOLMOD'}, "
                    f"{'compiled steps, ' if res.stats.get('time_compiled_step') else ''}flexmb defaults otherwise, "
                    f"output every {every} steps",
    })
    return out


# ---------------------------------------------------------------- exudyn worker

def exu_chain(exu, eii, n: int, length: float, mass: float, nodes_kind: str, period: float):
    """The chain in exudyn's redundant coordinates (see the module docstring); (mbs, last body, tip sensor)."""
    sc = exu.SystemContainer()
    mbs = sc.AddSystem()
    ground = mbs.AddObject(eii.ObjectGround(referencePosition=[0.0, 0.0, 0.0]))
    inertia = [0.0, mass * length**2 / 12.0, mass * length**2 / 12.0, 0.0, 0.0, 0.0]  # xx, yy, zz, yz, xz, xy
    rot0 = {"EP": [1.0, 0.0, 0.0, 0.0], "Rxyz": [0.0, 0.0, 0.0], "RotVecLG": [0.0, 0.0, 0.0]}[nodes_kind]
    node_class = {"EP": eii.NodeRigidBodyEP, "Rxyz": eii.NodeRigidBodyRxyz, "RotVecLG": eii.NodeRigidBodyRotVecLG}[nodes_kind]
    parent, parent_point = ground, [0.0, 0.0, 0.0]
    for i in range(n):
        node = mbs.AddNode(node_class(referenceCoordinates=[(i + 0.5) * length, 0.0, 0.0] + rot0))
        body = mbs.AddObject(eii.ObjectRigidBody(mass=mass, inertia=inertia, nodeNumber=node))
        mbs.AddLoad(eii.LoadMassProportional(markerNumber=mbs.AddMarker(eii.MarkerBodyMass(bodyNumber=body)),
                                             loadVector=[0.0, -GRAVITY, 0.0]))
        m0 = mbs.AddMarker(eii.MarkerBodyRigid(bodyNumber=parent, localPosition=parent_point))
        m1 = mbs.AddMarker(eii.MarkerBodyRigid(bodyNumber=body, localPosition=[-0.5 * length, 0.0, 0.0]))
        mbs.AddObject(eii.ObjectJointRevoluteZ(markerNumbers=[m0, m1]))
        parent, parent_point = body, [0.5 * length, 0.0, 0.0]
    sensor = mbs.AddSensor(eii.SensorBody(bodyNumber=parent, localPosition=[0.5 * length, 0.0, 0.0],
                                          outputVariableType=exu.OutputVariableType.Position, storeInternal=True,
                                          writeToFile=False))
    return sc, mbs, parent, sensor


def run_exudyn(model_name: str, t_end: float, dt: float, rho_inf: float, rtol: float, nodes_kind: str,
               budget_s: float) -> dict:
    warnings.simplefilter("ignore", DeprecationWarning)
    import exudyn as exu
    import exudyn.itemInterface as eii
    import numpy as np

    n, length, mass, _, _ = MODELS[model_name]
    base = bl.peak_mb()
    t0 = time.perf_counter()
    period = check_period(t_end)
    sc, mbs, last, sensor = exu_chain(exu, eii, n, length, mass, nodes_kind, period)
    ss = bl.exu_settings(exu, t_end, dt, rtol, rho_inf)
    ss.solution.sensors.active = True
    ss.solution.sensors.writePeriod = period
    build_s = time.perf_counter() - t0
    out = bl.run_exudyn_solver(exu, mbs, ss, dt, False, budget_s, math.inf)
    data = np.asarray(mbs.GetSensorStoredData(sensor))
    R = np.asarray(mbs.GetObjectOutputBody(last, exu.OutputVariableType.RotationMatrix)).reshape(3, 3)
    out.update({
        "program": "exudyn", "model": model_name, "tol": rtol, "nodes": nodes_kind,
        "dof": int(mbs.systemData.ODE2Size()), "constraints": int(mbs.systemData.AEsize()),
        "check": [[float(r[0]), float(r[1]), float(r[2])] for r in data],
        "angle_end": float(math.atan2(R[1, 0], R[0, 0])),
        "peak_mb": bl.peak_mb(), "base_mb": base, "build_s": build_s,
        "settings": f"redundant coordinates, {nodes_kind} nodes, " + bl.exu_settings_text(exu, ss),
    })
    return out


# ---------------------------------------------------------------- driver


def configs(args) -> list[dict]:
    progs = [p.strip() for p in args.programs.split(",") if p.strip()]
    out = []
    if "flexmb" in progs:
        out += [{"program": "flexmb", "tol": t, "label": f"flexmb {bl.tol_text(t)}"} for t in bl.floats(args.fm_rtol)]
    if "exudyn" in progs:
        out += [{"program": "exudyn", "nodes": k.strip(), "tol": t, "label": f"exudyn {k.strip()} {bl.tol_text(t)}"}
                for k in args.exu_nodes.split(",") if k.strip() for t in bl.floats(args.exu_rtol)]
    return out


def worker_cmd(args, c: dict, model: str, t_end: float) -> list[str]:
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", c["program"], "--models", model, "--t-end", repr(t_end),
           "--dt", repr(args.dt), "--rho-inf", repr(args.rho_inf), "--max-minutes", repr(args.max_minutes)]
    if c["program"] == "flexmb":
        return cmd + ["--fm-rtol", repr(c["tol"])]
    return cmd + ["--exu-rtol", repr(c["tol"]), "--exu-nodes", c["nodes"]]


def compare(r: dict, ref: dict | None) -> dict:
    """Tip distances to the reference run at common check times, and the end-angle difference."""
    if not ref or not r.get("check") or not ref.get("check") or not (bl.ok(r) and bl.ok(ref)):
        return {}
    refc = {round(t, 6): (x, y) for t, x, y in ref["check"]}
    d = [(t, math.dist((x, y), refc[round(t, 6)])) for t, x, y in r["check"] if round(t, 6) in refc]
    if not d:
        return {}
    early = [v for t, v in d if t <= CHECK_PERIOD + 1e-9]
    return {"dtip_1s": max(early) if early else None, "dtip_end": d[-1][1],
            "dangle_end": abs(wrap(r["angle_end"] - ref["angle_end"]))}


def report(rows: list[dict], args, blas: str) -> str:
    head = ["model", "program", "tol", "status", "t reached s", "steps", "ms/step wall", "(min–max)", "CPU ms/step",
            "Newton it/step", "Jacobians/step", "peak MB (before model)", "Δtip ≤ 1 s m", "Δtip end m", "Δangle end rad",
            "unknowns", "load"]
    lines, summary = [], []
    models = list(dict.fromkeys(r["model"] for r in rows))
    cols = list(dict.fromkeys(r["label"] for r in rows))
    for m in models:
        by = {r["label"]: r for r in rows if r["model"] == m}
        ref = by.get("flexmb 1e-10")
        for lab, r in by.items():
            cmp_ = compare(r, ref)
            sp = r.get("ms_spread")
            lines.append([
                m, lab.rsplit(" ", 1)[0], bl.tol_text(r.get("tol")), r.get("status", "?")[:70],
                bl.fmt(r.get("t_covered"), ".4g"), bl.fmt(r.get("steps"), ".0f"), bl.fmt(r.get("ms_per_step"), ".4g"),
                f"{sp[0]:.3g}–{sp[1]:.3g}" if sp else "–", bl.fmt(r.get("cpu_ms_per_step"), ".4g"),
                bl.fmt(r.get("newton_per_step"), ".2f"), bl.fmt(r.get("jac_per_step"), ".2f"),
                f"{bl.fmt(r.get('peak_mb'), '.0f')} ({bl.fmt(r.get('base_mb'), '.0f')})",
                bl.fmt(cmp_.get("dtip_1s"), ".1e"), bl.fmt(cmp_.get("dtip_end"), ".1e"), bl.fmt(cmp_.get("dangle_end"), ".1e"),
                bl.fmt(r.get("dof"), ".0f") + (f" + {r['constraints']} constr." if r.get("constraints") else ""),
                bl.fmt(r.get("load_before"), ".2f"),
            ])
        cells = []
        for c in cols:
            r = by.get(c)
            if r is None:
                cells.append("–")
            elif bl.ok(r):
                cells.append(bl.fmt(r.get("ms_per_step"), ".3g") + f" ({bl.fmt(r.get('newton_per_step'), '.1f')})")
            else:
                cells.append(r.get("status", "?").split(" ")[0])
        exu_ok = [r["ms_per_step"] for c, r in by.items() if c.startswith("exudyn") and bl.ok(r)]
        ratio = ref["ms_per_step"] / min(exu_ok) if exu_ok and ref and bl.ok(ref) else None
        summary.append([f"{MODELS[m][4]}, {bl.fmt(by[next(iter(by))].get('t_covered'), '.3g')} s"] + cells
                       + [bl.fmt(ratio, ".2f")])
    text = [
        f"# Small rigid mechanisms, flexmb vs exudyn 3-D rigid bodies ({time.strftime('%Y-%m-%d %H:%M')})",
        "",
        f"Uniform rods with revolute joints about z, starting horizontal at rest, g = {GRAVITY} m/s² along -y; "
        f"h = {args.dt:g} s, generalized-α ρ∞ = {args.rho_inf:g} for both programs.",
        "",
        *bl.worker_lines(args, blas, f"; time limit {args.max_minutes:g} min per run."),
        "",
        "ms per step: time of the solve divided by (simulated time reached / h); Newton it/step and Jacobians/step per "
        "step taken; Δ: distance of the last rod's free end from flexmb rtol 1e-10's at common times (every full "
        "second), largest up to 1 s and at the end, and the difference of the last rod's angle at the end.",
        "",
        "## Summary: ms per step (Newton iterations per step)",
        "",
        bl.table(["model"] + cols + ["flexmb 1e-10 ÷ best exudyn (> 1: flexmb slower)"], summary),
        "",
        *bl.all_runs(head, lines, rows),
    ]
    warm = [f"{r['model']} {r['label']} {r['warmup_s']:.1f} s" for r in rows if "warmup_s" in r]
    if warm:
        text += ["", "flexmb JIT warm-up (not in the rows): " + ", ".join(warm)]
    return "\n".join(text) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of {', '.join(MODELS)}")
    p.add_argument("--t-end", type=float, default=None, help="simulated time for every model (default: each model's)")
    p.add_argument("--dt", type=float, default=1e-3)
    p.add_argument("--rho-inf", type=float, default=0.8)
    p.add_argument("--programs", default="flexmb,exudyn")
    p.add_argument("--fm-rtol", default="1e-10,1e-4", help="flexmb Newton rtol values")
    p.add_argument("--exu-rtol", default="1e-4,1e-8", help="exudyn newton.relativeTolerance values")
    p.add_argument("--exu-nodes", default="EP,Rxyz,RotVecLG", help="exudyn rigid-body node types")
    p.add_argument("--worker", choices=("flexmb", "exudyn"), help=argparse.SUPPRESS)
    bl.common_options(p)
    args = p.parse_args(argv)
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    bad = [m for m in models if m not in MODELS]
    if bad:
        p.error(f"--models: unknown {bad}; choose from {list(MODELS)}")
    budget = 60.0 * args.max_minutes

    if args.worker:
        t_end = args.t_end if args.t_end else MODELS[models[0]][3]
        if args.worker == "flexmb":
            bl.emit(run_flexmb(models[0], t_end, args.dt, args.rho_inf, bl.floats(args.fm_rtol)[0]))
        else:
            bl.emit(run_exudyn(models[0], t_end, args.dt, args.rho_inf, bl.floats(args.exu_rtol)[0], args.exu_nodes, budget))
        return 0

    env, blas = bl.peer_env("peer_rigid", args)
    rows = []
    for m in models:
        t_end = args.t_end if args.t_end else MODELS[m][3]
        for c in configs(args):
            cmd = worker_cmd(args, c, m, t_end)
            runs = bl.repeat(lambda cmd=cmd: bl.run_worker(cmd, env, budget + 60), args.repeats, f"{m} {c['label']}")
            row = bl.median_runs(runs)
            row.update({"model": m, "label": c["label"], "tol": c["tol"]})
            rows.append(row)
    text = report(rows, args, blas)
    return bl.publish("peer_rigid", text, args.results_dir, args.json, rows)


if __name__ == "__main__":
    sys.exit(main())
