"""Error-controlled time steps against fixed steps (issue 14, "What must be shown": the same answer
as a fixed-step reference within the tolerance, with fewer steps; the step-size history plotted).

Models (built by the case files' ``build()`` with their defaults, loaded through
flexmb.app.casefile.load_case as the CLI does; the case's ρ∞, no monitor callback, no postprocess):

* ``four_bar``: cases/change_point_four_bar.py, 0 … 2.6 s (the whole run): starts from rest in its
  folded singular configuration and passes the next one (crank pin over O4) at t = 2.07 s.
* ``six_link``: cases/zahariev_six_link.py, 0 … ``--six-link-t-end`` (default 7.5 s): leaves the
  singular configuration of the start; the case runs on to the next one at t = 8.006 s, where its
  monitor stops it at the elastic limit (forces without bound), so the span ends before it.

Runs per model, each in its own process after a JIT warm-up on the same model (a few fixed and
auto steps, not in the row):

* ``reference``: fixed dt = case dt / ``--ref-factor`` (default 10), a row every ``--ref-factor`` steps
  (so its rows are at the multiples of the case's dt);
* ``fixed``: the case's own dt, a row every step;
* ``auto``: ``fm.simulate(model, t_end, "auto", tol=tol, output_dt=case dt)`` for each ``--tols``:
  rows at the same times as the other two, from the dense output between steps.

Every run streams its rows to a temporary run directory (``out=DIR, keep="all"``, deleted after the
run) and has a ``progress`` callback, so a run that stops accepting steps can be stopped and still
reported: a watchdog thread interrupts a run that accepts no step for ``--stall-seconds`` (default 60 s)
of wall time; its row says "stalled" with the time reached and its last attempts (size, error, status),
and its errors cover the rows computed before that.

tol (flexmb/solvers/step_control.py, E3): the estimated local position error of a step per unit step
relative to the motion, err = ε / (h V) <= tol (ε: largest node displacement error + ℓ × rotation error,
V: largest node speed |v| + ℓ |ω| so far, ℓ = max(1 m, largest |X0|)); the local errors add up to a
global position error of about tol · V · (t_end - t0). The table gives that bound ("tol V T") beside
the measured errors.

Per run: status, accepted steps, rejected attempts (error above tol), failed attempts (Newton), Newton
iterations per accepted step (all iterations, rejected attempts included, ÷ accepted steps), smallest and
largest step, the max error over all rows of the tracked outputs against the reference (interpolated
onto the reference's times; the outputs below), wall time of the solve (result.stats["wall_time"]) and
CPU time of the process over the call. A run killed at the time limit (``--max-minutes``, default 10
here) is reported with the simulated time, accepted steps and last step it reached (the worker writes
them every 2 s of wall time from simulate's ``progress`` callback, which every run has). Tracked outputs:

* four_bar: every node's position (max |Δx| over nodes and rows), the rocker angle ``O4.q`` (the crank
  is driven), the coupler's axial force (largest |N| over its elements, the case's cut force);
* six_link: every node's position, q3 and q5 (the case's ``angles``: chords of links 3 and 5), the
  longitudinal forces of links 3 and 5 (the case's ``axial_forces``: mean over each link's elements).

Figure ``<date>-auto_step.png``: the accepted step sizes against time (log h) per model and tol, the
fixed dt, rejected attempts as crosses, and shaded where the rigid mechanism is near singular (σ of
the rigid loop closure below 10 % of its largest along the reference; four-bar: |a² sin(ψ − φ)|, the
case's ``closure_jacobian_det``, at every row; six-link: σ_min of the rigid loop-closure Jacobian, the
case's ``sigma_history``, every 10th row).

Run (from the repository root):

    python benchmarks/auto_step.py --blas openblas                       # about 3 min
    python benchmarks/auto_step.py --four-bar-t-end 0.3 --six-link-t-end 0.3 --tols 1e-3 --results-dir /tmp/b  # check
"""

from __future__ import annotations

import _thread
import argparse
import json
import math
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

CASE_FILES = {"four_bar": "change_point_four_bar.py", "six_link": "zahariev_six_link.py"}
TITLES = {"four_bar": "change-point four-bar (cases/change_point_four_bar.py)",
          "six_link": "Zahariev six-link (cases/zahariev_six_link.py)"}
NEAR_SINGULAR = 0.1


def load(name: str):
    """The case (flexmb.app.casefile.Case) and its default parameters."""
    from flexmb.app.casefile import load_case

    case = load_case(bl.REPO / "cases" / CASE_FILES[name])
    return case, dict(case.defaults)


def tracked(name: str, case, model, params: dict, res) -> dict[str, np.ndarray]:
    """The outputs compared with the reference (module docstring), one array per output, rows first."""
    out = {"t": np.asarray(res.t), "x": np.asarray(res.x)}
    ell = max(1.0, float(np.abs(np.asarray(model.X0)).max(initial=0.0)))  # ℓ of step_control E3
    tw = np.asarray(res.twists)
    out["V"] = (np.linalg.norm(tw[..., :3], axis=-1) + ell * np.linalg.norm(tw[..., 3:], axis=-1)).max(axis=1)
    if name == "four_bar":
        out["rocker"] = res.coordinate("O4.q")
        out["axial"] = np.abs(res.element_forces[:, :, 0]).max(axis=1)
    else:
        q = case.module.angles(model, res.x, params)
        f = case.module.axial_forces(model, res)
        out.update(q3=q["q3"], q5=q["q5"], N3=f["link3"], N5=f["link5"])
    return out


def singularity(name: str, case, model, params: dict, res) -> tuple[np.ndarray, np.ndarray]:
    """(t, σ) along a run for the figure: σ of the rigid loop closure (four-bar: |a² sin(ψ − φ)|, the case's
    closure_jacobian_det, every row; six-link: σ_min of the rigid loop-closure Jacobian, the case's
    sigma_history, every 10th row)."""
    if name == "four_bar":
        return res.t, np.array([abs(case.module.closure_jacobian_det(model, x, params["a"])) for x in res.x])
    return case.module.sigma_history(model, res, stride=10, dense_tail=0.0)


def worker(name: str, mode: str, tol: float, t_end: float, ref_factor: int, npz: str, stall_s: float) -> dict:
    import flexmb as fm

    case, p = load(name)
    model = case.build(p)
    dt, rho = float(p["dt"]), float(p.get("rho_inf", 0.9))
    t0 = time.perf_counter()
    fm.simulate(model, 5 * dt, dt, rho_inf=rho)  # JIT warm-up on this model, both step modes
    fm.simulate(model, 5 * dt, "auto", tol=1e-3, rho_inf=rho, output_dt=dt)
    warm = time.perf_counter() - t0
    if mode == "reference":
        call = dict(dt=dt / ref_factor, output_every=ref_factor)
    elif mode == "fixed":
        call = dict(dt=dt, output_every=1)
    else:
        call = dict(dt="auto", tol=tol, output_dt=dt)
    log = Path(npz + ".progress.json")
    seen = {"steps": 0, "newton": 0, "t": 0.0, "h": 0.0, "h_min": math.inf, "w0": time.perf_counter(), "next": 0.0,
            "w_last": time.perf_counter(), "done": False, "stalled": False}

    def progress(t: float, it: int) -> None:
        """Where the run is (written every 2 s of wall time): what a run killed at the time limit reports."""
        seen["steps"] += 1
        seen["newton"] += it
        seen["h"], seen["t"] = t - seen["t"], t
        seen["h_min"] = min(seen["h_min"], seen["h"])
        seen["w_last"] = time.perf_counter()
        w = seen["w_last"] - seen["w0"]
        if w >= seen["next"]:
            seen["next"] = w + 2.0
            log.write_text(json.dumps({"t": t, "steps": seen["steps"], "newton": seen["newton"], "last_h": seen["h"],
                                       "h_min": seen["h_min"], "wall_s": w}))

    def watchdog() -> None:
        """Stop a run that accepts no step for ``stall_s`` of wall time (it then ends 'interrupted')."""
        while not seen["done"]:
            time.sleep(0.5)
            if not seen["done"] and time.perf_counter() - seen["w_last"] > stall_s:
                seen["stalled"] = True
                _thread.interrupt_main()
                return

    run_dir = Path(npz + ".run")
    threading.Thread(target=watchdog, daemon=True).start()
    c0 = time.process_time()
    try:
        res = fm.simulate(model, t_end, rho_inf=rho, progress=progress, out=run_dir, keep="all", **call)
    except KeyboardInterrupt:
        if not seen["stalled"]:
            raise
        res = fm.load(run_dir)  # the rows and steps computed before the stall
    seen["done"] = True
    cpu = time.process_time() - c0
    s = res.stats or {}
    steps = {k: np.asarray(v) for k, v in res.steps.items()}
    arrays = tracked(name, case, model, p, res)
    if mode == "reference":  # after the timed call
        arrays["sigma_t"], arrays["sigma"] = singularity(name, case, model, p, res)
    arrays.update({f"steps_{k}": np.asarray(v) for k, v in steps.items()})
    np.savez(npz, **arrays)
    acc = np.asarray(steps["status"]) == 0 if steps else np.zeros(0, bool)
    h = np.asarray(steps["h"])[acc] if steps else np.zeros(0)
    status = res.status
    if seen["stalled"]:
        st, hh, ee = (np.asarray(steps[k])[-3:] for k in ("status", "h", "error"))
        status = (f"stalled: no step accepted for {stall_s:g} s of wall time at t = {seen['t']:.6g} s (t_end {t_end:g} s); "
                  f"{int(np.sum(np.asarray(steps['status']) != 0))} rejected attempts in all, the last ones: h = "
                  + ", ".join(f"{v:.4g}" for v in hh) + " s, err = " + ", ".join(f"{v:.4g}" for v in ee)
                  + ", status " + ", ".join(str(int(v)) for v in st))
        s = dict(s)
        s.update(steps=float(seen["steps"]), newton_iterations=float(seen["newton"]),
                 rejected_steps=float(np.sum(np.asarray(steps["status"]) == 1)),
                 failed_steps=float(np.sum(np.asarray(steps["status"]) == 2)), wall_time=seen["w_last"] - seen["w0"])
    shutil.rmtree(run_dir, ignore_errors=True)
    return {
        "status": status, "t_reached": float(res.t[-1]), "steps": bl.stat(s, "steps", 0.0),
        "rejected": bl.stat(s, "rejected_steps", 0.0), "failed": bl.stat(s, "failed_steps", 0.0),
        "above_tol": bl.stat(s, "steps_error_above_tol", 0.0),
        "newton": bl.stat(s, "newton_iterations", 0.0), "factorizations": bl.stat(s, "factorizations"),
        "h_min": float(h.min()) if h.size else None, "h_max": float(h.max()) if h.size else None,
        "wall_s": bl.stat(s, "wall_time"), "cpu_s": cpu, "warm_up_s": warm, "peak_mb": bl.peak_mb(),
        "dt": dt, "rho_inf": rho, "call": {k: v for k, v in call.items()},
        "length_scale": max(1.0, float(np.abs(np.asarray(model.X0)).max(initial=0.0))),
    }


def errors(name: str, run: dict, ref: dict) -> dict:
    """Max over rows of |output - reference|, the run's outputs interpolated onto the reference's times."""
    t, tr = run["t"], ref["t"]
    keep = tr <= t[-1] + 1e-12
    tr = tr[keep]

    def on_ref(y):
        y = np.asarray(y)
        flat = y.reshape(y.shape[0], -1)
        return np.stack([np.interp(tr, t, flat[:, j]) for j in range(flat.shape[1])], 1).reshape((tr.size,) + y.shape[1:])

    out = {"x": float(np.linalg.norm(on_ref(run["x"]) - ref["x"][keep], axis=-1).max())}
    keys = ("rocker", "axial") if name == "four_bar" else ("q3", "q5", "N3", "N5")
    for k in keys:
        out[k] = float(np.abs(on_ref(run[k]) - ref[k][keep]).max())
        out[k + "_scale"] = float(np.abs(ref[k][keep]).max())
    return out


def figure(path: Path, models: list[str], data: dict, rows: dict, t_ends: dict) -> None:
    from flexmb.results.plots import plt, save_figure  # the Agg backend

    fig, axes = plt.subplots(len(models), 1, figsize=(9, 3.8 * len(models)), squeeze=False)
    for ax, name in zip(axes[:, 0], models):
        ref = data[name]["reference"]
        sig, sig_t = ref["sigma"], ref["sigma_t"]
        low = sig < NEAR_SINGULAR * sig.max()
        edges = np.flatnonzero(np.diff(np.concatenate([[0], low.astype(np.int8), [0]])))
        for k, (i0, i1) in enumerate(zip(edges[::2], edges[1::2] - 1)):
            ax.axvspan(sig_t[i0], sig_t[i1], color="tab:orange", alpha=0.2, lw=0,
                       label=f"near singular (σ < {100 * NEAR_SINGULAR:g} % of its largest)" if k == 0 else None)
        for key, r in data[name].items():
            if not key.startswith("auto"):
                continue
            st, h, tt = r["steps_status"], r["steps_h"], r["steps_t"]
            acc = st == 0
            line, = ax.step(tt[acc], h[acc], where="pre", lw=1,
                            label=f"dt auto, tol {bl.tol_text(rows[name][key]['tol'])}: {int(acc.sum())} steps")
            if np.any(st != 0):
                ax.plot(tt[st != 0], h[st != 0], "x", ms=3, color=line.get_color(), alpha=0.6)
        dt = rows[name]["fixed"]["dt"]
        ax.axhline(dt, color="k", ls="--", lw=1, label=f"fixed dt = {dt:g} s (the case's)")
        ax.axhline(dt / rows[name]["reference"]["ref_factor"], color="0.5", ls=":", lw=1, label="reference dt")
        ax.set_yscale("log")
        ax.set_xlim(0, t_ends[name])
        ax.set_xlabel("time t [s]")
        ax.set_ylabel("step size h [s]")
        ax.set_title(f"{TITLES[name]}: accepted steps (x: rejected attempts)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize="small", loc="lower right")
    save_figure(fig, path)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", default="four_bar,six_link", help="four_bar, six_link (comma-separated)")
    p.add_argument("--tols", default="1e-3,1e-4,1e-5", help="tolerances of the auto runs (comma-separated)")
    p.add_argument("--ref-factor", type=int, default=10, help="reference dt = case dt / this (default 10)")
    p.add_argument("--four-bar-t-end", type=float, default=None, help="default: the case's t_end (2.6 s)")
    p.add_argument("--six-link-t-end", type=float, default=7.5, help="default 7.5 s (the case's next singular "
                   "configuration is at 8.006 s)")
    p.add_argument("--stall-seconds", type=float, default=60.0,
                   help="stop a run that accepts no step for this wall time (default 60 s)")
    p.add_argument("--worker", nargs=5, metavar=("MODEL", "MODE", "TOL", "T_END", "NPZ"), help=argparse.SUPPRESS)
    bl.common_options(p, repeats=1, max_minutes=10.0)
    a = p.parse_args()
    if a.worker:
        name, mode, tol, t_end, npz = a.worker
        bl.emit(worker(name, mode, float(tol), float(t_end), a.ref_factor, npz, a.stall_seconds))
        return
    models = [m.strip() for m in a.models.split(",") if m.strip()]
    tols = [float(x) for x in a.tols.split(",") if x.strip()]
    env = bl.worker_env(a.blas, a.threads, a.numba_threads)
    blas = bl.blas_of_child(env)
    tmp = Path(tempfile.mkdtemp(prefix="flexmb_auto_step_"))
    data: dict = {}
    rows: dict = {}
    t_ends: dict = {}
    for name in models:
        _, par = load(name)
        t_end = float(par["t_end"]) if name == "four_bar" and a.four_bar_t_end is None else (
            a.four_bar_t_end if name == "four_bar" else a.six_link_t_end)
        t_ends[name] = t_end
        data[name], rows[name] = {}, {}
        for mode, tol in [("reference", 0.0), ("fixed", 0.0)] + [("auto", t) for t in tols]:
            key = mode if mode != "auto" else f"auto {tol:g}"
            npz = tmp / f"{name}_{key.replace(' ', '_')}.npz"
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", name, mode, repr(tol), repr(t_end), str(npz),
                   "--ref-factor", str(a.ref_factor), "--stall-seconds", repr(a.stall_seconds)]
            runs = bl.repeat(lambda cmd=cmd: bl.run_worker(cmd, env, 60 * a.max_minutes), 1 if mode == "reference" else
                             a.repeats, f"{name} {key}")
            r = bl.median_runs(runs)
            prog = Path(str(npz) + ".progress.json")
            if not bl.ok(r) and prog.exists() and "steps" not in r:  # killed or crashed: how far it got
                pr = json.loads(prog.read_text())
                r.update(t_reached=pr["t"], steps=pr["steps"], newton=pr["newton"], h_min=pr["h_min"], wall_s=pr["wall_s"])
                r["status"] = (f"{r.get('status')}; reached t = {pr['t']:.4g} s after {pr['steps']} accepted steps "
                               f"in {pr['wall_s']:.0f} s (last step {pr['last_h']:.2g} s)")
            r.update(mode=mode, tol=tol if mode == "auto" else None, ref_factor=a.ref_factor)
            rows[name][key] = r
            if npz.exists():
                with np.load(npz) as z:
                    data[name][key] = {k: z[k] for k in z.files}
    # errors against the reference
    for name in models:
        ref = data[name].get("reference")
        for key, r in rows[name].items():
            if ref is not None and key in data[name] and key != "reference":
                r["err"] = errors(name, data[name][key], ref)
        if ref is not None:  # V of step_control E3 along the reference: max over rows and nodes of |v| + ℓ |ω|
            for r in rows[name].values():
                r["V"] = float(ref["V"].max())
    # tables
    parts = [f"# Error-controlled steps (dt=\"auto\") against fixed steps ({time.strftime('%Y-%m-%d %H:%M')})\n",
             f"Host: {bl.host_line()}",
             f"BLAS of the workers (--blas {a.blas}, {a.threads} thread(s)): {blas}",
             f"{bl.numba_threads_line(a.numba_threads)}",
             f"Command: `{bl.command_line()}`; each run in its own process after a JIT warm-up on the same model "
             f"(5 fixed and a few auto steps, not in the row); median of {a.repeats} run(s) per row (the reference once).\n",
             "tol (flexmb/solvers/step_control.py, E3): estimated local position error per unit step relative to the "
             "motion; the global position error should be about tol · V · T (V: largest |v| + ℓ |ω| over the nodes "
             "and the reference's rows, ℓ the model's length scale; T: the span), given as `tol V T`. Errors: max over the "
             "rows (at the multiples of the case's dt) of |run − reference|, the run interpolated onto the reference's "
             "times; Δx: largest node position error (Euclidean). Newton it/step: all Newton iterations (rejected and "
             "failed attempts included) ÷ accepted steps. wall s: the solve (result.stats['wall_time']); CPU s: "
             "the process over the simulate call (rows included). load: 1-minute load average before the run.\n"]
    for name in models:
        rr = rows[name]
        ref = rr["reference"]
        case_dt = ref.get("dt")
        parts.append(f"## {TITLES[name]}, 0 … {t_ends[name]:g} s\n")
        parts.append(f"Case defaults (ρ∞ = {bl.fmt(ref.get('rho_inf'))}, dt = {bl.fmt(case_dt)} s); reference: fixed "
                     f"dt = {bl.fmt(case_dt / a.ref_factor if case_dt else None)} s (case dt / {a.ref_factor}), "
                     f"status {ref.get('status')}, {bl.fmt(ref.get('steps'), '.0f')} steps, "
                     f"{bl.fmt(ref.get('newton') / ref['steps'] if ref.get('steps') else None, '.2f')} Newton it/step, "
                     f"wall {bl.fmt(ref.get('wall_s'))} s, CPU {bl.fmt(ref.get('cpu_s'))} s, load "
                     f"{bl.fmt(ref.get('load_before'), '.2f')}. V = {bl.fmt(rr['reference'].get('V'))} m/s.\n")
        if name == "four_bar":
            extra = ["max Δ rocker rad", "max Δ axial N (of peak)"]
        else:
            extra = ["max Δ q3 rad", "max Δ q5 rad", "max Δ N3 N (of peak)", "max Δ N5 N (of peak)"]
        head = ["dt", "tol", "tol V T m", "status", "steps", "rejected", "failed", "Newton it/step", "h min–max s",
                "max Δx m"] + extra + ["wall s", "CPU s", "load"]
        body = []
        for key, r in rr.items():
            if key == "reference":
                continue
            e = r.get("err", {})
            n = r.get("steps")
            tol = r.get("tol")
            if name == "four_bar":
                ex = [bl.fmt(e.get("rocker"), ".2e"), f"{bl.fmt(e.get('axial'), '.3g')} ({bl.fmt(e.get('axial_scale'), '.3g')})"]
            else:
                ex = [bl.fmt(e.get("q3"), ".2e"), bl.fmt(e.get("q5"), ".2e"),
                      f"{bl.fmt(e.get('N3'), '.3g')} ({bl.fmt(e.get('N3_scale'), '.3g')})",
                      f"{bl.fmt(e.get('N5'), '.3g')} ({bl.fmt(e.get('N5_scale'), '.3g')})"]
            body.append([
                "auto" if tol else f"{bl.fmt(r.get('dt'))} (case)", bl.tol_text(tol) if tol else "–",
                bl.fmt(tol * r["V"] * t_ends[name], ".2e") if tol and r.get("V") else "–", r.get("status"),
                bl.fmt(n, ".0f"), bl.fmt(r.get("rejected"), ".0f"), bl.fmt(r.get("failed"), ".0f"),
                bl.fmt(r.get("newton") / n if n else None, ".2f"),
                f"{bl.fmt(r.get('h_min'), '.2g')}–{bl.fmt(r.get('h_max'), '.2g')}", bl.fmt(e.get("x"), ".2e"), *ex,
                bl.fmt(r.get("wall_s")), bl.fmt(r.get("cpu_s")), bl.fmt(r.get("load_before"), ".2f")])
        parts.append(bl.table(head, body) + "\n")
        notes = [f"* {key}: steps with the error above tol at the smallest step (accepted): {bl.fmt(r.get('above_tol'), '.0f')}"
                 for key, r in rr.items() if r.get("mode") == "auto" and r.get("above_tol")]
        notes += [f"* {key}: {r.get('status')}" for key, r in rr.items() if not bl.ok(r)]
        if notes:
            parts.append("\n".join(notes) + "\n")
    if any("reference" in data[n] for n in models):
        png = Path(a.results_dir or bl.RESULTS) / f"{time.strftime('%Y-%m-%d')}-auto_step.png"
        png.parent.mkdir(parents=True, exist_ok=True)
        figure(png, [n for n in models if "reference" in data[n]], data, rows, t_ends)
        parts.append(f"Figure: `{png.name}` (step size against time, log h; shaded: near a singular configuration "
                     "of the rigid mechanism).\n")
    text = "\n".join(parts)
    print(text)
    path = bl.write_results("auto_step", text, a.results_dir)
    print(path, file=sys.stderr)
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1, default=str))
    for f in tmp.iterdir():
        f.unlink()
    tmp.rmdir()


if __name__ == "__main__":
    main()
