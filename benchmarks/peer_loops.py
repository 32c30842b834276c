"""Closed loops: the IFToMM A02 N-four-bar, flexmb beside exudyn's rigid bodies in 3-D and in 2-D.

Model (IFToMM benchmark A02, the N-four-bar mechanism): N parallelogram windows side by side in the x-y
plane, 2N + 1 uniform rods of L = 1 m and 1 kg, gravity 9.81 m/s^2 along -y. Cranks i = 0..N turn about z
on the ground pivots O_i = (i L, 0); coupler j = 1..N lies on top of window j, from the tip of crank j-1
(B_{j-1}) to the tip of crank j (B_j). At the start the cranks stand at theta0 from +x (--theta0-deg,
default 90: upright, as in exudyn's own example of this benchmark) and B0, crank 0's tip, moves along +x
at 1 m/s: every crank turns at -1/(L sin theta0) rad/s, the couplers translate. Whenever the cranks'
angle theta is a multiple of pi all rods are horizontal: a singular configuration, where the mechanism
gains N degrees of freedom. The exact motion is the one-degree-of-freedom motion of the parallelogram
branch, ((N+1)/3 + N) m L^2 theta'' = -((N+1)/2 + N) m g L cos theta, integrated here (scipy's DOP853,
rtol 1e-12) independently of both programs; B0's x is L cos theta. From 90 deg the cranks go over the top
and keep turning (horizontal at t = 0.72 s and 1.24 s, then two passages every turn of about 1.96 s:
5 passages in 5 s, 20 in 20 s, whatever N); from 45 deg they do not reach the top: the mechanism swings
to and fro between about 0.92 rad and -pi - 0.92 rad, through theta = 0 and -pi (7 passages in 5 s, 26
in 20 s).

Programs and variants (h = --dt = 1e-3 s fixed, generalized-alpha rho_inf = --rho-inf = 0.9, flexmb's
default, for both):

* flexmb (joint coordinates: a revolute joint per crank on the ground and per coupler on crank j-1, the
  tree; each window cut where coupler j meets crank j's tip), ``fm.simulate(model, t_end, dt, rho_inf,
  output_every)`` with flexmb's other defaults (rtol 1e-10). The model is
  ``benchmarks/n_four_bar_model.n_four_bar``, the one the cut tests check (tests/cut_mechanisms.py imports it):
  - ``bushing k``: each cut a revolute bushing (free rotation z) of stiffness k on the translations and
    k L^2 on the two tilts, flexmb's default damping (--fm-k, default 1e9 and 1e10);
  - ``rigid``: each cut ``add_rigid_cut(free_rotation="z")`` (augmented Lagrangian). Rigid cuts may fail
    at a singular configuration with a message naming the cut: the row then gives that status and the
    time reached (a valid result, not retried);
  - ``planar``: the same model declared planar, ``ModelBuilder(planar="xy")`` (docs/planar.md): every cut
    (bushing of the first --fm-k, and rigid) holds only its two in-plane translations, 2 rows per
    window instead of 5, none redundant (--fm-planar).
* exudyn (redundant coordinates, one rigid body per rod at its centre of mass, the rods' inertia
  m L^2/12 about the two axes across the rod and 0 along it, weight by ``LoadMassProportional``):
  - ``3-D``: ``ObjectRigidBody`` on ``NodeRigidBodyEP`` (Euler parameters and their constraint) or
    ``NodeRigidBodyRotVecLG`` (Lie group; --exu-nodes); ``ObjectJointRevoluteZ`` at every ground pivot
    and at every B_{j-1} (crank j-1 - coupler j), and at the window-closing pin B_j (coupler j - crank j)
    an ``ObjectJointGeneric`` holding only the two in-plane translations (constrainedAxes
    [1,1,0,0,0,0]): a revolute pin there would repeat the out-of-plane constraints the tree already
    holds (3 redundant equations per window), which exudyn's linear solvers do not take (see
    --exu3d-closing);
  - ``2-D``: ``NodeRigidBody2D`` + ``ObjectRigidBody2D``, ``ObjectJointRevolute2D`` at every pin
    (exudyn's example of this benchmark; in the plane no equation is redundant).
  Start: the bodies' velocities of the exact motion (cranks: v_centre = (L/2) w (sin theta0, -cos theta0),
  omega_z = -w, w = 1/(L sin theta0); couplers: v = L w (sin theta0, -cos theta0), omega = 0; at 90 deg
  [0.5 v0, 0, -v0/L] and [v0, 0, 0] as in exudyn's example). Settings: ``newton.relativeTolerance``
  --exu3d-rtol (1e-4 and 1e-8), --exu2d-rtol (1e-8); spectral radius rho_inf; ``EigenSparse``, 1 thread,
  no solution file; exudyn's other defaults (modified Newton, adaptive step: a step whose Newton fails is
  halved and later grown back). With these defaults every exudyn run passed every singular configuration
  on 2026-11-28 except the 3-D model at 1e-8 from 45 deg at N = 40, which fails at the 24th passage
  (t = 17.875 s); no setting was found that passes it at 1e-8 (the settings tried are in
  benchmarks/results/2026-11-28-peer_loops.md); relative tolerance 1e-6 or 1e-4 passes.
  Stall guard (exudyn, as in peer_beam_fall.py): --exu-guard auto runs a first probe with a pre-step
  Python function that stops a run whose simulated time advanced by less than 10 h in --stall-seconds;
  if it stops, that is the row; if it finishes, the timed repeats run without the guard.

Measured per run, each run in its own process with one thread (OMP/OPENBLAS/MKL_NUM_THREADS=1 and
NUMBA_NUM_THREADS=1 by default): status and the simulated time reached; ms per step = wall time of the
time integration only (``result.stats['wall_time']`` / exudyn's ``SolveSystem`` call; not the model's
build, not flexmb's JIT warm-up) / (time reached / h), and the process CPU time the same way; Newton
iterations and Jacobians (factorizations) per step; the largest |B0 x - L cos theta(t)| over the
recorded rows (every --sample-dt = 0.01 s of simulated time, for both programs: flexmb's
``output_every``, exudyn's ``SensorBody`` on crank 0's tip with ``storeInternal``), and at the last row;
the horizontal passages (theta = k pi) of the exact motion up to the time reached; the peak resident
memory of the process (ru_maxrss; before the model in brackets). The median of --repeats runs; a run that
does not finish is not repeated.

Run (from the repository root; exudyn is the benchmark-only extra: pip install -e '.[bench]'):

    python benchmarks/peer_loops.py                                  # N = 10 (5 s), 40 (20 s), 200 (2 s)
    python benchmarks/peer_loops.py --theta0-deg 45                  # the earlier start: results/2026-11-28-peer_loops-45deg.md
    python benchmarks/peer_loops.py --cases 10:0.5,40:0.5 --repeats 1 --results-dir /tmp/x   # quick check

Options: --cases (N:t_end, ...), --theta0-deg, --dt, --rho-inf, --sample-dt, --fm-k, --fm-rigid, --fm-planar,
--exu3d-rtol, --exu2d-rtol, --exu-nodes, --exu3d-closing, --exu-guard, --stall-seconds, and the common
--repeats, --blas, --threads, --numba-threads (default 1 here), --max-minutes, --results-dir, --json.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

L, MASS, GRAVITY = 1.0, 1.0, 9.81
V0 = 1.0  # m/s: B0's x-velocity at the start
CASES = "10:5,40:20,200:2"


# ---------------------------------------------------------------- the exact motion

def exact_angle(n: int, t, theta0: float, g: float = GRAVITY):
    """The cranks' exact angle theta(t) from +x (theta(0) = theta0, theta'(0) = -V0/(L sin theta0)): the
    one-degree-of-freedom motion ((N+1)/3 + N) m L^2 theta'' = -((N+1)/2 + N) m g L cos theta, by scipy's
    DOP853 to rtol 1e-12 (as tests/cut_mechanisms.n_four_bar_angle; independent of both programs)."""
    import numpy as np
    from scipy.integrate import solve_ivp

    inertia = (n + 1) / 3 + n
    c = ((n + 1) / 2 + n) * g / L
    t = np.asarray(t, dtype=float)
    if t.size == 0:
        return t
    sol = solve_ivp(lambda _, y: [y[1], -c * np.cos(y[0]) / inertia], (0.0, max(float(t.max()), 1e-12)),
                    [theta0, -V0 / (L * np.sin(theta0))], t_eval=t, rtol=1e-12, atol=1e-13, method="DOP853")
    return sol.y[0]


def passages(n: int, t_end: float, theta0: float, dt: float) -> int:
    """Horizontal passages (sin theta changes sign) of the exact motion in (0, t_end], seen every dt/10."""
    import numpy as np

    if t_end <= 0:
        return 0
    t = np.linspace(0.0, t_end, int(math.ceil(10 * t_end / dt)) + 1)
    s = np.sign(np.sin(exact_angle(n, t, theta0)))
    s = s[s != 0]
    return int(np.count_nonzero(s[1:] != s[:-1]))


def accuracy(n: int, t, x, theta0: float, t_cov: float, dt: float) -> dict:
    """B0's x against the exact L cos theta(t) at the recorded times, and the passages up to t_cov."""
    import numpy as np

    t, x = np.asarray(t, float), np.asarray(x, float)
    keep = t <= t_cov + 1e-9
    t, x = t[keep], x[keep]
    err = np.abs(x - L * np.cos(exact_angle(n, t, theta0))) if t.size else np.zeros(0)
    return {"err_max": float(err.max()) if err.size else None, "err_end": float(err[-1]) if err.size else None,
            "rows": int(t.size), "passages": passages(n, t_cov, theta0, dt)}


# ---------------------------------------------------------------- flexmb

def fm_n_four_bar(fm, n: int, cut: str = "elastic", k: float = 1e9, theta0: float = math.pi / 2, planar: bool = False):
    """flexmb's N-four-bar: benchmarks/n_four_bar_model.n_four_bar (the model the cut tests check) at scale 1
    (L = 1 m, 1 kg rods, B0's x-velocity V0 = 1 m/s), x0 = 0 (``cut`` "elastic": revolute bushings of
    stiffness k, k L^2 on the tilts, default damping; "rigid": add_rigid_cut). Crank i's node is at its
    pivot, coupler j's at B_{j-1}: node "coupler1" is B0. ``planar``: a planar model
    (``ModelBuilder(planar="xy")``): every cut holds only its in-plane translations. ``fm``: flexmb,
    imported by the caller (after the BLAS environment is set)."""
    from n_four_bar_model import n_four_bar

    return n_four_bar(n, cut, k=k, g=GRAVITY, theta0=theta0, planar=planar)


def run_flexmb(n: int, t_end: float, dt: float, rho_inf: float, cut: str, k: float, theta0: float,
               sample_dt: float) -> dict:
    import flexmb as fm
    from flexmb.builder.planar import planar_rows

    planar = cut.startswith("planar-")  # "planar-elastic", "planar-rigid": ModelBuilder(planar="xy")
    cut = cut.removeprefix("planar-")
    warm_s = bl.fm_warm_up(fm, dt)
    t0 = time.perf_counter()
    fm.simulate(fm_n_four_bar(fm, 1, cut, k, theta0, planar), 5 * dt, dt, rho_inf=rho_inf)  # the cuts' kernels too
    warm_s += time.perf_counter() - t0
    base = bl.peak_mb()
    t0 = time.perf_counter()
    model = fm_n_four_bar(fm, n, cut, k, theta0, planar)
    build_s = time.perf_counter() - t0
    every = max(1, int(round(sample_dt / dt)))
    cpu0 = time.process_time()
    res = fm.simulate(model, t_end, dt, rho_inf=rho_inf, output_every=every)
    cpu = time.process_time() - cpu0
    out = bl.fm_step_numbers(res, dt, cpu)
    out.update(accuracy(n, res.t, res.node_position("coupler1")[:, 0], theta0, out["t_covered"], dt))
    s = res.stats
    solver = next((name for key, name in (("tree_solver", "O(n) tree"), ("dense_solver", "dense"), ("band_solver", "band"))
                   if s.get(key)), "CHOLMOD" if s.get("symbolic_analyses") else "auto")
    out.update({
        "program": "flexmb", "dof": getattr(model, "n_u", None), "peak_mb": bl.peak_mb(), "base_mb": base,
        "build_s": build_s, "warmup_s": warm_s,
        "settings": f"joint coordinates, {'planar (ModelBuilder(planar=xy)) ' if planar else ''}"
                    f"{'rigid cuts (add_rigid_cut)' if cut == 'rigid' else f'bushings k={bl.tol_text(k)}'}, "
                    f"{planar_rows(model)[0]} cut rows held, "
                    f"gen-α ρ∞={rho_inf:g}, Newton rtol 1e-10 (default), linear solver: {solver}, "
                    f"flexmb defaults otherwise, output every {every} steps",
    })
    return out


# ---------------------------------------------------------------- exudyn

def _start(i_or_j: int, kind: str, theta0: float):
    """Centre, rotation angle about z, centre velocity and omega_z of crank i or coupler j at the start."""
    c, s = math.cos(theta0), math.sin(theta0)
    w = V0 / (L * s)
    if kind == "crank":
        return [i_or_j * L + 0.5 * L * c, 0.5 * L * s], theta0, [0.5 * L * w * s, -0.5 * L * w * c], -w
    return [(i_or_j - 1) * L + L * c + 0.5 * L, L * s], 0.0, [L * w * s, -L * w * c], 0.0


def _exu_bodies(mbs, eii, n: int, theta0: float, add_body) -> dict:
    """The n + 1 cranks and n couplers of the chain, each made by ``add_body(pos, phi, vel, omega)`` (its node
    and body at the start :func:`_start`) and given its weight; {(kind, index): body number}."""
    bodies = {}
    for kind, idx in [("crank", i) for i in range(n + 1)] + [("coupler", j) for j in range(1, n + 1)]:
        body = add_body(*_start(idx, kind, theta0))
        mbs.AddLoad(eii.LoadMassProportional(markerNumber=mbs.AddMarker(eii.MarkerBodyMass(bodyNumber=body)),
                                             loadVector=[0.0, -GRAVITY, 0.0]))
        bodies[kind, idx] = body
    return bodies


def _exu_pins(mbs, ground: int, bodies: dict, n: int, marker_type, pin, close, close_each_window: bool) -> None:
    """The pins of the chain: ground - crank i, crank j-1 - coupler j by ``pin(markers)``, and the pin B_j closing
    window j (coupler j - crank j) by ``close(markers)``, right after window j's other pin
    (``close_each_window``) or after all of them; markers of type ``marker_type`` on the rods' axes."""

    def marker(body, x):
        return mbs.AddMarker(marker_type(bodyNumber=body, localPosition=[x, 0.0, 0.0]))

    def closing(j):
        close([marker(bodies["coupler", j], 0.5 * L), marker(bodies["crank", j], 0.5 * L)])

    for i in range(n + 1):
        pin([marker(ground, i * L), marker(bodies["crank", i], -0.5 * L)])
    for j in range(1, n + 1):
        pin([marker(bodies["crank", j - 1], 0.5 * L), marker(bodies["coupler", j], -0.5 * L)])
        if close_each_window:
            closing(j)
    if not close_each_window:
        for j in range(1, n + 1):
            closing(j)


def exu_n_four_bar_3d(exu, eii, n: int, theta0: float = math.pi / 2, nodes_kind: str = "EP", closing: str = "generic"):
    """exudyn, 3-D rigid bodies (module docstring). ``closing``: the pin B_j that closes window j,
    "generic" (ObjectJointGeneric, the in-plane translations only) or "revolute" (ObjectJointRevoluteZ,
    redundant). Returns (system container, main system, crank 0's body)."""
    sc = exu.SystemContainer()
    mbs = sc.AddSystem()
    ground = mbs.AddObject(eii.ObjectGround(referencePosition=[0.0, 0.0, 0.0]))
    inertia = [0.0, MASS * L**2 / 12, MASS * L**2 / 12, 0.0, 0.0, 0.0]  # local x along the rod

    def add_body(pos, phi, vel, omega):
        if nodes_kind == "EP":
            ref = pos + [0.0, math.cos(phi / 2), 0.0, 0.0, math.sin(phi / 2)]
            v0 = vel + [0.0, -0.5 * omega * math.sin(phi / 2), 0.0, 0.0, 0.5 * omega * math.cos(phi / 2)]
            node = mbs.AddNode(eii.NodeRigidBodyEP(referenceCoordinates=ref, initialVelocities=v0))
        elif nodes_kind == "RotVecLG":  # velocity coordinates: the local angular velocity (= global about z)
            node = mbs.AddNode(eii.NodeRigidBodyRotVecLG(referenceCoordinates=pos + [0.0, 0.0, 0.0, phi],
                                                         initialVelocities=vel + [0.0, 0.0, 0.0, omega]))
        else:
            raise ValueError(f"--exu-nodes {nodes_kind!r}: EP or RotVecLG")
        return mbs.AddObject(eii.ObjectRigidBody(mass=MASS, inertia=inertia, nodeNumber=node))

    def revolute(ms):
        mbs.AddObject(eii.ObjectJointRevoluteZ(markerNumbers=ms))

    def close(ms):
        if closing == "generic":  # constrained axes in the coupler's frame (its z = global z)
            mbs.AddObject(eii.ObjectJointGeneric(markerNumbers=ms, constrainedAxes=[1, 1, 0, 0, 0, 0]))
        else:
            revolute(ms)

    bodies = _exu_bodies(mbs, eii, n, theta0, add_body)
    _exu_pins(mbs, ground, bodies, n, eii.MarkerBodyRigid, revolute, close, close_each_window=False)
    return sc, mbs, bodies["crank", 0]


def exu_n_four_bar_2d(exu, eii, n: int, theta0: float = math.pi / 2):
    """exudyn, 2-D rigid bodies with revolute pins (module docstring); (system container, main system,
    crank 0's body)."""
    sc = exu.SystemContainer()
    mbs = sc.AddSystem()
    ground = mbs.AddObject(eii.ObjectGround(referencePosition=[0.0, 0.0, 0.0]))

    def add_body(pos, phi, vel, omega):
        node = mbs.AddNode(eii.NodeRigidBody2D(referenceCoordinates=pos + [phi], initialVelocities=vel + [omega]))
        return mbs.AddObject(eii.ObjectRigidBody2D(mass=MASS, inertia=MASS * L**2 / 12, nodeNumber=node))

    def revolute(ms):
        mbs.AddObject(eii.ObjectJointRevolute2D(markerNumbers=ms))

    bodies = _exu_bodies(mbs, eii, n, theta0, add_body)
    _exu_pins(mbs, ground, bodies, n, eii.MarkerBodyPosition, revolute, revolute, close_each_window=True)
    return sc, mbs, bodies["crank", 0]


def run_exudyn(dim: str, n: int, t_end: float, dt: float, rho_inf: float, rtol: float, theta0: float, sample_dt: float,
               nodes_kind: str, closing: str, guard: bool, budget_s: float, stall_s: float) -> dict:
    warnings.simplefilter("ignore", DeprecationWarning)
    import exudyn as exu
    import exudyn.itemInterface as eii
    import numpy as np

    base = bl.peak_mb()
    t0 = time.perf_counter()
    if dim == "3d":
        sc, mbs, crank0 = exu_n_four_bar_3d(exu, eii, n, theta0, nodes_kind, closing)
        variant = (f"3-D ObjectRigidBody, {nodes_kind} nodes, ObjectJointRevoluteZ, closing pins "
                   + ("ObjectJointGeneric [1,1,0,0,0,0]" if closing == "generic" else "ObjectJointRevoluteZ (redundant)"))
    else:
        sc, mbs, crank0 = exu_n_four_bar_2d(exu, eii, n, theta0)
        variant = "2-D ObjectRigidBody2D, NodeRigidBody2D, ObjectJointRevolute2D"
    sensor = mbs.AddSensor(eii.SensorBody(bodyNumber=crank0, localPosition=[0.5 * L, 0.0, 0.0],
                                          outputVariableType=exu.OutputVariableType.Position, storeInternal=True,
                                          writeToFile=False))
    ss = bl.exu_settings(exu, t_end, dt, rtol, rho_inf)
    ss.solution.sensors.active = True
    ss.solution.sensors.writePeriod = sample_dt
    build_s = time.perf_counter() - t0
    out = bl.run_exudyn_solver(exu, mbs, ss, dt, guard, budget_s, stall_s)
    data = np.asarray(mbs.GetSensorStoredData(sensor))
    if data.ndim != 2 or not len(data):
        data = np.zeros((0, 4))
    out.update(accuracy(n, data[:, 0], data[:, 1], theta0, out["t_covered"], dt))
    out.update({
        "program": "exudyn", "dof": int(mbs.systemData.ODE2Size()), "constraints": int(mbs.systemData.AEsize()),
        "peak_mb": bl.peak_mb(), "base_mb": base, "build_s": build_s,
        "settings": f"{variant}; " + bl.exu_settings_text(exu, ss) + f"; sensor every {sample_dt:g} s"
                    + (", stall guard (pre-step function)" if guard else ""),
    })
    return out


# ---------------------------------------------------------------- driver


def parse_cases(text: str) -> list[tuple[int, float]]:
    out = []
    for item in text.split(","):
        if item.strip():
            n, t = item.split(":")
            out.append((int(n), float(t)))
    return out


def configs(args) -> list[dict]:
    out = [{"program": "flexmb", "cut": "elastic", "k": k, "label": f"flexmb bushings k={bl.tol_text(k)}"}
           for k in bl.floats(args.fm_k)]
    if args.fm_rigid:
        out.append({"program": "flexmb", "cut": "rigid", "k": 0.0, "label": "flexmb rigid cuts"})
    if args.fm_planar:  # planar cuts (docs/planar.md): the in-plane rows only
        out += [{"program": "flexmb", "cut": "planar-elastic", "k": k, "label": f"flexmb planar bushings k={bl.tol_text(k)}"}
                for k in bl.floats(args.fm_k)[:1]]
        if args.fm_rigid:
            out.append({"program": "flexmb", "cut": "planar-rigid", "k": 0.0, "label": "flexmb planar rigid cuts"})
    out += [{"program": "exu3d", "rtol": t, "label": f"exudyn 3-D {bl.tol_text(t)}"} for t in bl.floats(args.exu3d_rtol)]
    out += [{"program": "exu2d", "rtol": t, "label": f"exudyn 2-D {bl.tol_text(t)}"} for t in bl.floats(args.exu2d_rtol)]
    return out


def worker_cmd(args, c: dict, n: int, t_end: float, guard: bool = False) -> list[str]:
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", c["program"], "--cases", f"{n}:{t_end!r}",
           "--theta0-deg", repr(args.theta0_deg), "--dt", repr(args.dt), "--rho-inf", repr(args.rho_inf),
           "--sample-dt", repr(args.sample_dt), "--max-minutes", repr(args.max_minutes)]
    if c["program"] == "flexmb":
        return cmd + ["--worker-cut", c["cut"], "--fm-k", repr(c["k"])]
    return cmd + ["--worker-rtol", repr(c["rtol"]), "--exu-nodes", args.exu_nodes, "--exu3d-closing", args.exu3d_closing,
                  "--exu-guard", "on" if guard else "off", "--stall-seconds", repr(args.stall_seconds)]


def measure(args, c: dict, n: int, t_end: float, env: dict, budget: float) -> list[dict]:
    """The runs of one setting (the exudyn stall guard: module docstring)."""
    lab = f"N={n} {c['label']}"
    exu = c["program"] != "flexmb"

    def run(guard: bool) -> dict:
        return bl.run_worker(worker_cmd(args, c, n, t_end, guard), env, budget * 1.5 + 60)

    if exu and args.exu_guard == "auto":
        probe = bl.repeat(lambda: run(True), 1, lab + " guarded probe")[0]
        if not bl.ok(probe):
            return [probe]
    return bl.repeat(lambda: run(exu and args.exu_guard == "on"), args.repeats, lab)


def _short(status: str, n: int = 90) -> str:
    return status if len(status) <= n else status[:n - 3] + "..."


def report(rows: list[dict], args, blas: str, raw: str) -> str:
    head = ["N", "t_end s", "variant", "status", "t reached s", "passages", "ms/step wall", "(min–max)", "CPU ms/step",
            "Newton it/step", "Jacobians/step", "max B0x error m", "B0x error at last row m", "peak MB (before model)",
            "unknowns", "load"]
    lines, summary = [], []
    cols = list(dict.fromkeys(r["label"] for r in rows))
    for n, t_end in dict.fromkeys((r["n"], r["t_end"]) for r in rows):
        by = {r["label"]: r for r in rows if r["n"] == n and r["t_end"] == t_end}
        cells = []
        for c in cols:
            r = by.get(c)
            if r is None:
                cells.append("–")
                continue
            cell = (f"{bl.fmt(r.get('ms_per_step'), '.3g')} ms, {bl.fmt(r.get('newton_per_step'), '.1f')} it, "
                    f"err {bl.fmt(r.get('err_max'), '.1e')}, {bl.fmt(r.get('peak_mb'), '.0f')} MB")
            if not bl.ok(r):
                cell = (f"**{r.get('status', '?').split(' ')[0]} at t = {bl.fmt(r.get('t_covered'), '.4g')} s** "
                        f"({bl.fmt(r.get('passages'), '.0f')} passages): " + cell)
            cells.append(cell)
        summary.append([n, f"{t_end:g}", bl.fmt(next(iter(by.values())).get("passages_exact"), ".0f")] + cells)
        for lab, r in by.items():
            sp = r.get("ms_spread")
            lines.append([
                n, f"{t_end:g}", lab, _short(r.get("status", "?")), bl.fmt(r.get("t_covered"), ".4g"),
                bl.fmt(r.get("passages"), ".0f"), bl.fmt(r.get("ms_per_step"), ".4g"),
                f"{sp[0]:.3g}–{sp[1]:.3g}" if sp else "–", bl.fmt(r.get("cpu_ms_per_step"), ".4g"),
                bl.fmt(r.get("newton_per_step"), ".2f"), bl.fmt(r.get("jac_per_step"), ".2f"),
                bl.fmt(r.get("err_max"), ".2e"), bl.fmt(r.get("err_end"), ".2e"),
                f"{bl.fmt(r.get('peak_mb'), '.0f')} ({bl.fmt(r.get('base_mb'), '.0f')})",
                bl.fmt(r.get("dof"), ".0f") + (f" + {r['constraints']} constr." if r.get("constraints") else ""),
                bl.fmt(r.get("load_before"), ".2f"),
            ])
    text = [
        f"# Closed loops: IFToMM A02 N-four-bar, flexmb vs exudyn 3-D and 2-D rigid bodies "
        f"({time.strftime('%Y-%m-%d %H:%M')})",
        "",
        f"N windows of 1 m, 1 kg rods, gravity {GRAVITY} m/s² along -y, cranks at θ0 = {args.theta0_deg:g}° at the start, "
        f"B0 at {V0:g} m/s along +x; h = {args.dt:g} s fixed (exudyn: its adaptive step may halve it), generalized-α "
        f"ρ∞ = {args.rho_inf:g} for both programs. The rods are horizontal (singular) whenever θ = kπ.",
        "",
        *bl.worker_lines(args, blas, " (a run that does not finish is not repeated); time limit "
                         f"{args.max_minutes:g} min per run."),
        "",
        "ms per step: wall (or CPU) time of the time integration only divided by (simulated time reached / h); Newton "
        "it/step and Jacobians/step per step taken; B0x error: |B0 x − L cos θ(t)| against the exact "
        f"one-degree-of-freedom motion at the rows recorded every {args.sample_dt:g} s; passages: horizontal passages "
        "(θ = kπ) of the exact motion up to the time reached; peak MB: ru_maxrss of the run's process (before the "
        "model in brackets: interpreter + imports (+ flexmb's JIT warm-up)); load: 1-minute load average before the "
        "run.",
        "",
        "## Summary: ms/step, Newton it/step, max B0x error, peak MB",
        "",
        bl.table(["N", "t_end s", "passages in t_end"] + cols, summary),
        "",
        *bl.all_runs(head, lines, rows),
    ]
    notes = []
    for r in rows:
        extra = ", ".join(e for e in (f"build {r['build_s']:.2f} s" if "build_s" in r else "",
                                      f"JIT warm-up {r['warmup_s']:.1f} s" if "warmup_s" in r else "") if e)
        if extra:
            notes.append(f"N={r['n']} {r['label']}: {extra}")
    if notes:
        text += ["", "Not in the rows: " + "; ".join(notes) + "."]
    if raw:
        text += ["", "## Raw output of the runs (stderr of the driver)", "", "```", raw.rstrip(), "```"]
    return "\n".join(text) + "\n"


class _Tee:
    """Copy of what the driver prints on stderr, for the report's raw output."""

    def __init__(self, stream) -> None:
        self.stream, self.lines = stream, []

    def write(self, s: str) -> int:
        self.lines.append(s)
        return self.stream.write(s)

    def flush(self) -> None:
        self.stream.flush()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", default=CASES, help=f"N:t_end pairs, comma-separated (default {CASES})")
    p.add_argument("--theta0-deg", type=float, default=90.0, help="the cranks' start angle from +x in degrees (default 90)")
    p.add_argument("--dt", type=float, default=1e-3)
    p.add_argument("--rho-inf", type=float, default=0.9)
    p.add_argument("--sample-dt", type=float, default=0.01, help="B0 recorded every this much simulated time (default 0.01)")
    p.add_argument("--fm-k", default="1e9,1e10", help="flexmb bushing stiffnesses (empty: none)")
    p.add_argument("--fm-rigid", type=int, default=1, help="1: also flexmb with rigid cuts (default), 0: not")
    p.add_argument("--fm-planar", type=int, default=1,
                   help="1: also flexmb as a planar model (planar cuts: bushings of the first --fm-k, rigid cuts if "
                        "--fm-rigid; default), 0: not")
    p.add_argument("--exu3d-rtol", default="1e-4,1e-8", help="exudyn 3-D newton.relativeTolerance values (empty: none)")
    p.add_argument("--exu2d-rtol", default="1e-8", help="exudyn 2-D newton.relativeTolerance values (empty: none)")
    p.add_argument("--exu-nodes", default="EP", choices=("EP", "RotVecLG"), help="exudyn 3-D rigid-body nodes")
    p.add_argument("--exu3d-closing", default="generic", choices=("generic", "revolute"),
                   help="exudyn 3-D window-closing pin: generic (in-plane translations only) or revolute (redundant)")
    p.add_argument("--exu-guard", default="auto", choices=("auto", "on", "off"),
                   help="exudyn stall guard: auto (a guarded probe, then unguarded repeats), on, off")
    p.add_argument("--stall-seconds", type=float, default=60.0)
    p.add_argument("--worker", choices=("flexmb", "exu3d", "exu2d"), help=argparse.SUPPRESS)
    p.add_argument("--worker-cut", default="elastic", help=argparse.SUPPRESS)
    p.add_argument("--worker-rtol", type=float, default=1e-8, help=argparse.SUPPRESS)
    bl.common_options(p, max_minutes=20.0)
    p.set_defaults(numba_threads=1)
    args = p.parse_args(argv)
    cases = parse_cases(args.cases)
    theta0 = math.radians(args.theta0_deg)
    if not 0.0 < args.theta0_deg < 180.0:
        p.error("--theta0-deg: between 0 and 180 (exclusive; 0 and 180 are singular)")
    budget = 60.0 * args.max_minutes

    if args.worker:
        n, t_end = cases[0]
        if args.worker == "flexmb":
            bl.emit(run_flexmb(n, t_end, args.dt, args.rho_inf, args.worker_cut, bl.floats(args.fm_k)[0], theta0,
                               args.sample_dt))
        else:
            bl.emit(run_exudyn(args.worker[3:], n, t_end, args.dt, args.rho_inf, args.worker_rtol, theta0, args.sample_dt,
                               args.exu_nodes, args.exu3d_closing, args.exu_guard == "on", budget, args.stall_seconds))
        return 0

    tee = _Tee(sys.stderr)
    sys.stderr = tee
    env, blas = bl.peer_env("peer_loops", args)
    rows = []
    for n, t_end in cases:
        exact = passages(n, t_end, theta0, args.dt)
        print(f"N = {n}, {t_end:g} s ({exact} horizontal passages):", file=sys.stderr, flush=True)
        for c in configs(args):
            runs = measure(args, c, n, t_end, env, budget)
            for r in runs:
                print(f"    raw: {json.dumps({k: v for k, v in r.items() if k != 'settings'})}", file=sys.stderr)
            row = bl.median_runs(runs)
            row.update({"n": n, "t_end": t_end, "label": c["label"], "passages_exact": exact})
            rows.append(row)
    sys.stderr = tee.stream
    text = report(rows, args, blas, "".join(tee.lines))
    name = "peer_loops" + ("" if args.theta0_deg == 90.0 else f"-{args.theta0_deg:g}deg")
    return bl.publish(name, text, args.results_dir, args.json, rows)


if __name__ == "__main__":
    sys.exit(main())
