"""Falling flexible beam: flexmb and exudyn timed side by side on the same model (issue 3).

Model (the flexible link of Zahariev's example): E = 0.7e11 Pa, rho = 3000 kg/m^3, A = 4e-4 m^2,
I = 2e-7 m^4, L = 2 m, N elements, pinned at x = 0 (rotation about z free), released from
horizontal (along +x) under gravity g = 9.81 m/s^2 in -y; h = 1e-3 s, generalized-alpha with
rho_inf = 0.8, t = 0 ... t_end (default 1 s).

* flexmb: 3-D co-rotational Euler-Bernoulli beam (``fm.BeamSection`` without shear factors,
  G = E/2.6, J = 2I), revolute joint to ground about z, ``simulate(rho_inf=0.8)`` with Newton
  tolerance --fm-rtol (default 1e-10, flexmb's default; one flexmb row per value), CHOLMOD.
* exudyn: 2-D geometrically exact (Simo-Reissner) beam ``ObjectBeamGeometricallyExact2D`` on
  ``NodeRigidBody2D`` nodes, bending EI, axial EA, shear GA with G = E/2.6 (no correction factor),
  cross-section inertia rho*I, mass per length rho*A, weight by ``LoadMassProportional`` per
  element, pin = ``CoordinateConstraint`` on x and y of node 0; generalized-alpha spectral radius
  0.8, ``newton.relativeTolerance`` = --exu-rtol (default 1e-4: with exudyn's default 1e-8 this
  stiff link stalls), all other settings exudyn's defaults (modified Newton, adaptive step
  reduction on Newton failure), ``EigenSparse``, 1 thread, no solution file.

Each (program, N) run is a separate subprocess (this file with --worker), so the peak resident
memory (ru_maxrss of that process) of one program does not mix with the other's. Runs are
sequential; nothing else of this script runs at the same time. The machine's load average is
printed with each run: another process running on the machine slows both programs.

Guards (--max-minutes per run, default 10):
* flexmb first runs a short probe (20 steps, reported as "probe s"; it also warms up any JIT),
  estimates the time per step and, if the full t_end would not fit the budget, runs a shorter
  t_end instead; the row then says "shortened" and "steps done (t covered)" gives the simulated
  time actually covered. Per-step numbers refer to that shorter run.
* exudyn runs with a pre-step function that stops it when the budget is used up, or when the
  simulated time advanced by less than 10 steps h in --stall-seconds (default 60) of wall time
  (exudyn cuts the step size when Newton fails, so a stalled run would otherwise never end);
  the row then says "stopped" and gives the time reached and the last step size.
* A run exceeding 3 x budget + 5 min is killed (row "killed", no numbers).

Profile split (flexmb only), ms per step: kern = time inside the public functions of
flexmb.elements.* (element kernels, measured by wrapping them; --no-kernel-timing switches the
wrapping off), asm = flexmb's assembly timer minus kern, fact = factorization timer, solve =
solve timer, other = wall - (assembly + fact + solve) (integrator update, output recording).

Run (from the repository root; exudyn is a benchmark-only dependency: pip install exudyn):

    python3 benchmarks/beam_fall.py                                  # N = 10, 100, 1000, 4000
    python3 benchmarks/beam_fall.py --n 10,100 --t-end 1.0
    python3 benchmarks/beam_fall.py --n 4000 --max-minutes 20 --exu-rtol 1e-4,1e-3
    python3 benchmarks/beam_fall.py --programs flexmb --n 1000 --out /tmp/beam_fall.md

Options: --n (comma list), --t-end, --dt, --max-minutes, --stall-seconds, --programs (flexmb,exudyn),
--exu-rtol (comma list: one exudyn row per value), --blas-threads (sets OMP/OPENBLAS/MKL thread
counts for both workers; default: leave the environment alone), --out (also write the markdown
there), --json (raw results).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time

import benchlib as bl

E, RHO, AREA, INERTIA, LENGTH, GRAVITY = 0.7e11, 3000.0, 4e-4, 2e-7, 2.0, 9.81
G_SHEAR = E / 2.6
RHO_INF = 0.8
TIP_REF = (-1.7626, -0.9451)  # exudyn 2-D, t = 1 s, N = 10 and 100 (benchmarks/README.md)
PROBE_STEPS = 20
MARK = "BEAM_FALL_RESULT "


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: kB


# ---------------------------------------------------------------- flexmb worker

def _wrap_kernels() -> dict:
    """Time the public functions of flexmb.elements.* (outermost call only) by replacing them,
    wherever flexmb's modules reference them, with timing wrappers."""
    import importlib
    import pkgutil

    import flexmb.elements as pkg

    acc = {"time": 0.0, "calls": 0, "depth": 0, "per_function": {}}
    originals = {}
    for info in pkgutil.walk_packages(pkg.__path__, f"{pkg.__name__}."):
        if info.name.endswith(".reference"):  # test oracles: never called by flexmb
            continue
        mod = importlib.import_module(info.name)
        for name, obj in list(vars(mod).items()):
            if name.startswith("_") or isinstance(obj, type) or not callable(obj):
                continue
            if getattr(obj, "__module__", None) != mod.__name__:
                continue
            originals[id(obj)] = (obj, f"{info.name[len(pkg.__name__) + 1:]}.{name}")

    def make(fn, label):
        def timed(*args, **kwargs):
            if acc["depth"]:
                return fn(*args, **kwargs)
            acc["depth"] = 1
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                dt = time.perf_counter() - t0
                acc["time"] += dt
                acc["calls"] += 1
                acc["per_function"][label] = acc["per_function"].get(label, 0.0) + dt
                acc["depth"] = 0
        timed.__wrapped__ = fn
        return timed

    wrappers = {key: make(fn, label) for key, (fn, label) in originals.items()}
    for modname, mod in list(sys.modules.items()):
        if mod is None or not modname.startswith("flexmb"):
            continue
        for name, obj in list(vars(mod).items()):
            if id(obj) in wrappers and obj is originals[id(obj)][0]:
                setattr(mod, name, wrappers[id(obj)])
    return acc


def _flexmb_model(n: int):
    import flexmb as fm

    sec = fm.BeamSection(E, G_SHEAR, AREA, INERTIA, INERTIA, 2 * INERTIA, RHO)  # Euler-Bernoulli (no shear factors)
    mb = fm.ModelBuilder(gravity=(0, -GRAVITY, 0))
    nodes = mb.add_flexible_link("link", (0, 0, 0), (LENGTH, 0, 0), n, sec)
    mb.add_joint("pin", "revolute", "ground", nodes[0], axis=(0, 0, 1))
    m = mb.compile()
    return m, m.node_index(nodes[-1])


def _run_flexmb(n: int, t_end: float, dt: float, budget_s: float, kernel_timing: bool, rtol: float) -> dict:
    from flexmb.solvers.simulate import simulate

    acc = _wrap_kernels() if kernel_timing else None
    base_mb = _peak_mb()
    t0 = time.perf_counter()
    m, tip = _flexmb_model(n)
    build_s = time.perf_counter() - t0

    n_total = int(round(t_end / dt))
    probe = min(PROBE_STEPS, n_total)
    t0 = time.perf_counter()
    pres = simulate(m, probe * dt, dt, rho_inf=RHO_INF, output_every=100, rtol=rtol)
    probe_s = time.perf_counter() - t0
    per_step = probe_s / max(probe, 1)
    n_run = n_total if per_step * n_total <= budget_s else max(1, int(budget_s / per_step))
    shortened = n_run < n_total

    if acc is not None:
        acc["time"], acc["calls"], acc["per_function"] = 0.0, 0, {}
    last = {"steps": 0, "t": 0.0, "tip": None}

    def count(st, ev) -> None:
        last["steps"] += 1
        last["t"] = float(st.t)
        last["tip"] = ev.kin.x[tip, :2].tolist()

    cpu0 = time.process_time()
    res = simulate(m, n_run * dt, dt, rho_inf=RHO_INF, output_every=100, callback=count, rtol=rtol)
    cpu = time.process_time() - cpu0
    s = res.stats
    steps = last["steps"]
    status = res.status
    if shortened and res.status == "finished":
        status = f"shortened (--max-minutes; probe {1e3 * per_step:.0f} ms/step)"
    out = {
        "program": "flexmb", "n": n, "dof": int(m.n_u), "dof_note": f"{m.n_u} (3-D, 6/node + pin)",
        "settings": f"gen-α ρ∞={RHO_INF}, Newton rtol={rtol:g}, CHOLMOD, factor reuse 'auto', output every 100 steps",
        "rtol": rtol,
        "status": status, "steps": steps, "t_covered": last["t"], "t_end": t_end,
        "wall_s": s["wall_time"], "cpu_s": cpu, "newton_it": s["newton_iterations"], "factorizations": s["factorizations"],
        "modified_newton_steps": s.get("modified_newton_steps", 0.0),
        "time_assembly": s.get("time_assembly", float("nan")), "time_factorization": s.get("time_factorization", float("nan")),
        "time_solve": s.get("time_solve", float("nan")),
        "kernel_time": acc["time"] if acc and acc["calls"] else None, "kernel_calls": acc["calls"] if acc else 0,
        "kernel_functions": acc["per_function"] if acc else {},
        "tip": last["tip"] if last["tip"] is not None else res.x[-1, tip, :2].tolist(),
        "build_s": build_s, "probe_s": probe_s, "probe_status": pres.status,
        "peak_mb": _peak_mb(), "base_mb": base_mb,
    }
    return out


# ---------------------------------------------------------------- exudyn worker

def _run_exudyn(n: int, t_end: float, dt: float, budget_s: float, rtol: float, stall_s: float) -> dict:
    import exudyn as exu
    import exudyn.itemInterface as eii

    base_mb = _peak_mb()
    t0 = time.perf_counter()
    sc = exu.SystemContainer()
    mbs = sc.AddSystem()
    le = LENGTH / n
    nodes = [mbs.AddNode(eii.NodeRigidBody2D(referenceCoordinates=[i * le, 0.0, 0.0])) for i in range(n + 1)]
    for i in range(n):
        beam = mbs.AddObject(eii.ObjectBeamGeometricallyExact2D(
            nodeNumbers=[nodes[i], nodes[i + 1]], length=le, massPerLength=RHO * AREA, crossSectionInertia=RHO * INERTIA,
            bendingStiffness=E * INERTIA, axialStiffness=E * AREA, shearStiffness=G_SHEAR * AREA))
        mk = mbs.AddMarker(eii.MarkerBodyMass(bodyNumber=beam))
        mbs.AddLoad(eii.LoadMassProportional(markerNumber=mk, loadVector=[0.0, -GRAVITY, 0.0]))
    ground = mbs.AddNode(eii.NodePointGround(referenceCoordinates=[0.0, 0.0, 0.0]))
    for c in (0, 1):
        mg = mbs.AddMarker(eii.MarkerNodeCoordinate(nodeNumber=ground, coordinate=c))
        mn = mbs.AddMarker(eii.MarkerNodeCoordinate(nodeNumber=nodes[0], coordinate=c))
        mbs.AddObject(eii.CoordinateConstraint(markerNumbers=[mg, mn]))
    guard = {"deadline": float("inf"), "mark": (0.0, 0.0), "stalled": False}

    def pre_step(mbs_, t: float) -> bool:  # False stops exudyn's solver
        now = time.perf_counter()
        if now > guard["deadline"]:
            return False
        w0, t0_ = guard["mark"]
        if now - w0 > stall_s:
            if t - t0_ < 10 * dt:
                guard["stalled"] = True
                return False
            guard["mark"] = (now, t)
        return True

    mbs.SetPreStepUserFunction(pre_step)
    mbs.Assemble()

    n_total = int(round(t_end / dt))
    ss = exu.SimulationSettings()
    ti = ss.timeIntegration
    ti.numberOfSteps = n_total
    ti.endTime = n_total * dt
    ti.generalizedAlpha.spectralRadius = RHO_INF
    ti.newton.relativeTolerance = rtol
    ss.linearSolver.solverType = exu.LinearSolverType.EigenSparse
    ss.solution.file.write = False
    ss.parallel.numberOfThreads = 1
    build_s = time.perf_counter() - t0

    solver = exu.MainSolverImplicitSecondOrder()
    t0 = time.perf_counter()
    guard["deadline"], guard["mark"] = t0 + budget_s, (t0, 0.0)
    cpu0 = time.process_time()
    ok = solver.SolveSystem(mbs, ss)
    cpu = time.process_time() - cpu0
    wall = time.perf_counter() - t0
    it = solver.it
    steps = max(int(it.currentStepIndex) - 1, 0)
    t_reached = float(it.currentTime)
    if not ok:
        status = f"failed: {solver.GetErrorString()}".strip()
    elif t_reached < ti.endTime - 1e-9:
        why = f"stalled: < 10 h of progress in {stall_s:g} s" if guard["stalled"] else "--max-minutes"
        status = f"stopped ({why}; step size cut to {it.currentStepSize:.1e} s)"
    else:
        status = "finished"
    nw = ti.newton
    settings = (f"gen-α ρ∞={RHO_INF}, newton.relativeTolerance={rtol:g}, absoluteTolerance={nw.absoluteTolerance:g}, "
                f"modified Newton={'on' if nw.useModifiedNewton else 'off'}, adaptiveStep={'on' if ti.adaptiveStep else 'off'}, "
                f"EigenSparse, 1 thread")
    pos = mbs.GetNodeOutput(nodes[-1], exu.OutputVariableType.Position)
    return {
        "program": "exudyn", "n": n, "dof": int(mbs.systemData.ODE2Size()),
        "dof_note": f"{mbs.systemData.ODE2Size()} (2-D, 3/node) + {mbs.systemData.AEsize()} constr.",
        "settings": settings, "rtol": rtol, "status": status, "steps": steps, "t_covered": t_reached, "t_end": t_end,
        "wall_s": wall, "cpu_s": cpu, "newton_it": float(it.newtonStepsCount), "factorizations": float(it.newtonJacobiCount),
        "tip": [float(pos[0]), float(pos[1])], "build_s": build_s, "peak_mb": _peak_mb(), "base_mb": base_mb,
        "version": exu.__version__,
    }


# ---------------------------------------------------------------- driver

def _host_info() -> dict:
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu)
    except OSError:
        pass
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        commit = subprocess.run(["git", "-C", repo, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", repo, "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                               text=True, timeout=10).stdout.strip()
        commit += " + uncommitted changes" if dirty else ""
    except (OSError, subprocess.SubprocessError):
        commit = "?"
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(), "flexmb_commit": commit}


def _worker_cmd(args, program: str, n: int, rtol: float | None) -> list[str]:
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", program, "--n", str(n), "--t-end", repr(args.t_end),
           "--dt", repr(args.dt), "--max-minutes", repr(args.max_minutes), "--stall-seconds", repr(args.stall_seconds)]
    if rtol is not None:
        cmd += ["--exu-rtol" if program == "exudyn" else "--fm-rtol", repr(rtol)]
    if not args.kernel_timing:
        cmd.append("--no-kernel-timing")
    return cmd


def _run_worker(args, program: str, n: int, rtol: float | None) -> dict:
    env = dict(os.environ)
    if args.blas_threads:
        for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            env[k] = str(args.blas_threads)
    budget = 60.0 * args.max_minutes
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(_worker_cmd(args, program, n, rtol), capture_output=True, text=True, env=env,
                              timeout=3 * budget + 300)
    except subprocess.TimeoutExpired:
        return {"program": program, "n": n, "status": f"killed after {time.perf_counter() - t0:.0f} s", "load": load}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(MARK)]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return {"program": program, "n": n, "status": f"worker error (rc {proc.returncode}): {' | '.join(tail)}", "load": load}
    out = json.loads(lines[-1][len(MARK):])
    out["load"] = load
    return out


def _f(x, fmt: str) -> str:
    return "–" if x is None else format(x, fmt)


def _row(r: dict) -> str:
    if "wall_s" not in r:
        return f"| {r['n']} | – | {r['program']} | – | {r['status']} | – | – | – | – | – | – | – | – | – | {r['load']:.2f} |"
    steps = r["steps"]
    per = 1e3 * r["wall_s"] / steps if steps else None
    split = "–"
    if r["program"] == "flexmb" and steps:
        asm, fac, sol = r["time_assembly"], r["time_factorization"], r["time_solve"]
        other = r["wall_s"] - asm - fac - sol
        k = r.get("kernel_time")
        parts = ([f"kern {1e3 * k / steps:.2f}", f"asm {1e3 * (asm - k) / steps:.2f}"] if k is not None
                 else [f"asm+kern {1e3 * asm / steps:.2f}"])
        parts += [f"fact {1e3 * fac / steps:.2f}", f"solve {1e3 * sol / steps:.3f}", f"other {1e3 * other / steps:.2f}"]
        split = " / ".join(parts)
    tip = f"({r['tip'][0]:.5f}, {r['tip'][1]:.5f})" if r.get("tip") else "–"
    settings = (f"ρ∞=0.8, rtol {r['rtol']:.0e}, CHOLMOD" if r["program"] == "flexmb"
                else f"ρ∞=0.8, rel.tol {r['rtol']:.0e}, EigenSparse")
    return (f"| {r['n']} | {r['dof_note']} | {r['program']} | {settings} | {r['status']} | {steps} ({r['t_covered']:.3f} s) "
            f"| {r['wall_s']:.2f} | {_f(per, '.3f')} | {_f(1e3 * r['cpu_s'] / steps if steps else None, '.3f')} "
            f"| {_f(r['newton_it'] / steps if steps else None, '.2f')} "
            f"| {_f(r['factorizations'] / steps if steps else None, '.2f')} | {r['peak_mb']:.0f} ({r['base_mb']:.0f}) "
            f"| {split} | {tip} | {r['load']:.2f} |")


def _report(results: list[dict], host: dict, args) -> str:
    lines = [
        f"# Falling beam (E={E:g}, ρ={RHO:g}, A={AREA:g}, I={INERTIA:g}, L={LENGTH:g} m), h = {args.dt:g} s, "
        f"t_end = {args.t_end:g} s, ρ∞ = {RHO_INF}",
        "",
        f"Host: {host['cpu']}, {host['cores']} cores, Python {host['python']}; flexmb {host['flexmb_commit']}"
        + "".join(sorted({f"; exudyn {r['version']}" for r in results if r.get("version")}))
        + f"; --max-minutes {args.max_minutes:g}; BLAS threads: "
        + (str(args.blas_threads) if args.blas_threads else "environment default"),
        "",
        "| N | DOF | program | settings | status | steps done (t covered) | wall s | ms/step | CPU ms/step | Newton it/step "
        "| Jacobian fact./step | peak MB (after imports) | split ms/step (flexmb) | tip (x, y) m at end | load avg |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    lines += [_row(r) for r in results]
    lines += ["", "Settings in full:"]
    seen = set()
    for r in results:
        if "settings" in r and (r["program"], r["settings"]) not in seen:
            seen.add((r["program"], r["settings"]))
            lines.append(f"* {r['program']}: {r['settings']}")
    notes = []
    for r in results:
        if "build_s" not in r:
            continue
        label = f"N={r['n']} {r['program']}" + (f" (rel.tol {r['rtol']:.0e})" if r.get("rtol") else "")
        parts = []
        if r.get("tip") and r["n"] in (10, 100) and abs(r["t_covered"] - 1.0) < 1e-9:
            dx, dy = r["tip"][0] - TIP_REF[0], r["tip"][1] - TIP_REF[1]
            parts.append(f"tip − reference {TIP_REF} = ({dx:+.1e}, {dy:+.1e}) m")
        if r["program"] == "flexmb":
            st = max(r["steps"], 1)
            kf = ", ".join(f"{k} {1e3 * v / st:.2f}" for k, v in sorted(r["kernel_functions"].items(), key=lambda kv: -kv[1]))
            parts += [f"build + compile {r['build_s']:.2f} s, probe ({PROBE_STEPS} steps) {r['probe_s']:.2f} s: not in the row",
                      f"{r['kernel_calls']} kernel calls timed (ms/step: {kf or 'none'})",
                      f"modified-Newton steps {r['modified_newton_steps']:.0f}"]
        else:
            parts.append(f"build + Assemble {r['build_s']:.2f} s, not in the row")
        notes.append(f"* {label}: " + "; ".join(parts))
    return bl.markdown(lines, notes)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    bl.run_options(p, "10,100,1000,4000")
    p.add_argument("--max-minutes", type=float, default=10.0, help="time budget per run (see docstring)")
    p.add_argument("--programs", default="exudyn,flexmb")
    p.add_argument("--exu-rtol", default="1e-4", help="exudyn newton.relativeTolerance values, comma-separated")
    p.add_argument("--fm-rtol", default="1e-10", help="flexmb Newton rtol values, comma-separated (1e-10: its default)")
    p.add_argument("--stall-seconds", type=float, default=60.0, help="exudyn: stop if < 10 steps of progress in this time")
    p.add_argument("--blas-threads", type=int, default=0)
    p.add_argument("--no-kernel-timing", dest="kernel_timing", action="store_false")
    p.add_argument("--out", default="")
    p.add_argument("--json", default="")
    p.add_argument("--worker", choices=("flexmb", "exudyn"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    ns = [int(v) for v in args.n.split(",") if v.strip()]
    rtols = [float(v) for v in args.exu_rtol.split(",") if v.strip()]
    fm_rtols = [float(v) for v in args.fm_rtol.split(",") if v.strip()]
    budget = 60.0 * args.max_minutes

    if args.worker:
        if args.worker == "flexmb":
            out = _run_flexmb(ns[0], args.t_end, args.dt, budget, args.kernel_timing, fm_rtols[0])
        else:
            out = _run_exudyn(ns[0], args.t_end, args.dt, budget, rtols[0], args.stall_seconds)
        print(MARK + json.dumps(out), flush=True)
        return 0

    host = _host_info()
    programs = [s.strip() for s in args.programs.split(",") if s.strip()]
    results = []
    for n in ns:
        for prog in programs:
            for rtol in (rtols if prog == "exudyn" else fm_rtols):
                print(f"running {prog} N={n} rel.tol={rtol:g}"
                      + f" (load avg {os.getloadavg()[0]:.2f}) ...", file=sys.stderr, flush=True)
                r = _run_worker(args, prog, n, rtol)
                print("  " + _row(r), file=sys.stderr, flush=True)
                results.append(r)
    text = _report(results, host, args)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"host": host, "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
