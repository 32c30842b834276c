"""Plumbing shared by the benchmark scripts in this folder (not a benchmark itself).

* Every measurement runs in its own subprocess (the calling script with ``--worker ...``): its
  peak memory is that process's ``ru_maxrss`` and one run cannot warm or pollute the next. The
  worker prints one line ``MARK + json``; :func:`run_worker` returns that dict (or a dict whose
  ``status`` says why there is none: killed at the time limit, crashed).
* :func:`worker_env` fixes the BLAS for the child: ``system`` (whatever ``libblas.so.3`` the
  system selects), ``reference`` or ``openblas`` (Debian's ``/usr/lib/<arch>/{blas,lapack}`` or
  ``openblas-pthread`` put first on ``LD_LIBRARY_PATH``), and the BLAS/OpenMP thread counts.
* :func:`median_runs` folds repeats into one row (median of the numbers, spread of ms/step).
* Only flexmb's public face is used (``import flexmb as fm``; ``result.stats`` keys read with
  ``.get`` where they are optional), so the scripts survive internal changes.
"""

from __future__ import annotations

import json
import math
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

MARK = "FLEXMB_BENCH_RESULT "
ARCH_LIB = "/usr/lib/x86_64-linux-gnu"
BLAS_DIRS = {"reference": [f"{ARCH_LIB}/blas", f"{ARCH_LIB}/lapack"], "openblas": [f"{ARCH_LIB}/openblas-pthread"]}
REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results"


def peak_mb() -> float:
    """Peak resident memory of this process so far in MB (Linux ru_maxrss is in kB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def emit(result: dict) -> None:
    """Worker side: hand ``result`` to the parent (one marked JSON line on stdout)."""
    print(MARK + json.dumps(result), flush=True)


def worker_env(blas: str = "system", threads: int = 1, numba_threads: int = 0) -> dict:
    """Environment for a worker: BLAS choice (``system``, ``reference``, ``openblas``) and thread counts
    (``numba_threads`` > 0: NUMBA_NUM_THREADS, the threads of flexmb's beam passes; 0: numba's
    default, one per core)."""
    env = dict(os.environ)
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[k] = str(threads)
    env.pop("NUMBA_NUM_THREADS", None)
    if numba_threads > 0:
        env["NUMBA_NUM_THREADS"] = str(numba_threads)
    if blas != "system":
        if blas not in BLAS_DIRS:
            raise SystemExit(f"--blas {blas!r}: choose system, reference or openblas")
        missing = [d for d in BLAS_DIRS[blas] if not os.path.isdir(d)]
        if missing:
            raise SystemExit(f"--blas {blas}: {missing[0]} does not exist (install Debian's libopenblas0-pthread: "
                             "scripts/setup.sh)")
        rest = [p for p in env.get("LD_LIBRARY_PATH", "").split(":")
                if p and p not in sum(BLAS_DIRS.values(), [])]
        env["LD_LIBRARY_PATH"] = ":".join(BLAS_DIRS[blas] + rest)
    return env


def run_worker(cmd: list[str], env: dict, timeout_s: float, cwd: str | None = None) -> dict:
    """Run one worker; its result dict, plus ``load_before`` (1-min load average) and ``child_wall_s``."""
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout_s, cwd=cwd)
    except subprocess.TimeoutExpired:
        return {"status": f"killed at the time limit ({timeout_s:.0f} s)", "load_before": load,
                "child_wall_s": time.perf_counter() - t0}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(MARK)]
    if proc.returncode != 0 or not lines:
        tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
        return {"status": f"worker error (exit code {proc.returncode}): {tail}", "load_before": load,
                "child_wall_s": time.perf_counter() - t0}
    out = json.loads(lines[-1][len(MARK):])
    out["load_before"] = load
    out["child_wall_s"] = time.perf_counter() - t0
    return out


def ok(r: dict) -> bool:
    """True if the run finished its whole simulated time."""
    return r.get("status") == "finished"


def repeat(run, repeats: int, label: str) -> list[dict]:
    """``run()`` up to ``repeats`` times; a run that does not finish is not repeated (it is reported as is)."""
    runs = []
    for k in range(repeats):
        r = run()
        runs.append(r)
        per = r.get("ms_per_step")
        print(f"  {label} [{k + 1}/{repeats}]: {r.get('status')}"
              + (f", {per:.4g} ms/step" if per is not None else "")
              + f" (load {r.get('load_before', float('nan')):.2f})", file=sys.stderr, flush=True)
        if not ok(r):
            break
    return runs


def median_runs(runs: list[dict]) -> dict:
    """One row from repeats: numbers are medians over the finished runs (all runs if none finished);
    other fields from the run whose ms/step is the median; ``repeats`` and ``ms_spread`` (min, max) added."""
    done = [r for r in runs if ok(r)] or runs
    keyed = sorted(done, key=lambda r: r.get("ms_per_step", float("inf")))
    row = dict(keyed[(len(keyed) - 1) // 2])
    for k, v in row.items():
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            vals = [r[k] for r in done if isinstance(r.get(k), (int, float))]
            if len(vals) == len(done):
                row[k] = statistics.median(vals)
    per = [r["ms_per_step"] for r in done if isinstance(r.get("ms_per_step"), (int, float))]
    row["repeats"] = f"{len(done)}" + (f" of {len(runs)}" if len(done) != len(runs) else "")
    row["ms_spread"] = (min(per), max(per)) if per else None
    return row


def git_commit() -> str:
    """Short commit of the flexmb checkout, with '+ uncommitted changes' when the tree is dirty."""
    try:
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return commit + (" + uncommitted changes" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "?"


def package_version(name: str) -> str:
    """Installed version of a distribution, or 'not installed'."""
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def host_line() -> str:
    """Machine, interpreter and package versions in one line."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu)
    except OSError:
        pass
    vers = ", ".join(f"{p} {package_version(p)}" for p in ("numpy", "scipy", "numba", "scikit-sparse", "exudyn"))
    return (f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}; Python {platform.python_version()}; "
            f"{vers}; flexmb commit {git_commit()}")


def blas_of_child(env: dict) -> str:
    """What ``flexmb.engine.linalg.blas_info()`` says in a child with environment ``env``."""
    code = ("from flexmb.engine.linalg import blas_info\n"
            "print(blas_info())")
    try:
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120,
                              cwd=str(REPO)).stdout.strip() or "unknown (blas_info printed nothing)"
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unknown ({exc})"


def blas_short(info: str) -> str:
    """blas_info() without the file and OpenBLAS's build string: 'OpenBLAS (pthread, 1 thread(s))'."""
    kind = info.rsplit(" /", 1)[0] if " /" in info else info
    return re.sub(r";[^)]*\)", ")", kind)


def stat(stats: dict, key: str, default=None):
    """``result.stats[key]`` as a float, or ``default`` when this flexmb version does not report it."""
    v = stats.get(key, default) if isinstance(stats, dict) else default
    return float(v) if isinstance(v, (int, float)) else default


def fmt(x, spec: str = ".3g", none: str = "–") -> str:
    """Format a number (or '–' for None/NaN)."""
    if x is None or (isinstance(x, float) and x != x):
        return none
    return format(x, spec)


def tol_text(x) -> str:
    """A tolerance as 1e-4, 1e-10 (or '–')."""
    if not isinstance(x, (int, float)):
        return "–"
    m, e = f"{x:.6e}".split("e")
    return f"{m.rstrip('0').rstrip('.')}e{int(e)}"


def worker_lines(args, blas: str, repeats_note: str) -> list[str]:
    """The report lines on where and how a peer benchmark ran: host, the workers' BLAS, numba's threads
    and the command, with ``repeats_note`` after "median of N run(s) per row, each in its own process"."""
    return [f"Host: {host_line()}",
            f"BLAS of the workers (--blas {args.blas}, {args.threads} thread(s)): {blas}",
            f"{numba_threads_line(args.numba_threads)}",
            f"Command: `{command_line()}`; median of {args.repeats} run(s) per row, each in its own process"
            + repeats_note]


def floats(text: str) -> list[float]:
    """The numbers of a comma-separated option value (empty items skipped), e.g. --fm-rtol 1e-6,1e-10."""
    return [float(v) for v in text.split(",") if v.strip()]


def all_runs(head: list[str], lines: list[list[str]], rows: list[dict]) -> list[str]:
    """The "All runs" section of a peer report: the table of every run, then each setting once that a
    run reported (``* label: settings``, in the order of the rows)."""
    seen = []
    for r in rows:
        if r.get("settings"):
            s = f"* {r['label']}: {r['settings']}"
            if s not in seen:
                seen.append(s)
    return ["## All runs", "", table(head, lines), "", "Settings in full:", *seen]


def table(head: list[str], rows: list[list[str]]) -> str:
    """A markdown table."""
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(str(c).replace("|", "/") for c in r) + " |" for r in rows]
    return "\n".join(out)


def write_results(name: str, text: str, results_dir: str | None) -> Path:
    """Write ``text`` to ``<results_dir>/<YYYY-MM-DD>-<name>.md`` (default benchmarks/results) and return the path."""
    d = Path(results_dir) if results_dir else RESULTS
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{time.strftime('%Y-%m-%d')}-{name}.md"
    path.write_text(text)
    return path


def publish(name: str, text: str, results_dir: str | None, json_path: str | None = None, data=None) -> int:
    """A benchmark's end: its report ``text`` printed, written by :func:`write_results` (the path on
    stderr), and ``data`` written to ``json_path`` as JSON when given (--json); returns 0 (exit code)."""
    print(text)
    print(f"written: {write_results(name, text, results_dir)}", file=sys.stderr)
    if json_path:
        with open(json_path, "w") as f:
            json.dump(data, f, indent=1)
    return 0


def numba_threads_line(n: int) -> str:
    """What the workers' numba threads are, for the reports (--numba-threads n)."""
    from flexmb.engine.parallel import PARALLEL_MIN, threading_layer

    return (f"numba threads of the workers: {n if n > 0 else f'{os.cpu_count()} (numba default: one per core)'}, "
            f"threading layer {threading_layer()}, from {PARALLEL_MIN} beam elements on")


def command_line() -> str:
    """The command that ran this script (for the report)."""
    return " ".join(["python"] + [os.path.relpath(sys.argv[0], REPO) if i == 0 else a for i, a in enumerate(sys.argv)])


def common_options(p, repeats: int = 3, max_minutes: float = 10.0) -> None:
    """Options every script shares: repeats, BLAS, threads, time limit, results folder, raw JSON."""
    p.add_argument("--repeats", type=int, default=repeats, help=f"runs per setting, median reported (default {repeats})")
    p.add_argument("--blas", default="system", choices=("system", "reference", "openblas"),
                   help="BLAS of the workers (default: the system's libblas.so.3)")
    p.add_argument("--threads", type=int, default=1, help="OMP/OPENBLAS/MKL_NUM_THREADS of the workers (default 1)")
    p.add_argument("--numba-threads", type=int, default=0,
                   help="NUMBA_NUM_THREADS of the workers: threads of flexmb's beam passes from PARALLEL_MIN elements on "
                        "(default 0: numba's default, one per core)")
    p.add_argument("--max-minutes", type=float, default=max_minutes,
                   help=f"time limit of one worker; it is killed after that (default {max_minutes:g})")
    p.add_argument("--results-dir", default=None, help="where the markdown goes (default benchmarks/results)")
    p.add_argument("--json", default="", help="also write the raw results to this JSON file")


def run_options(p, n: str, n_help: str = "element counts, comma-separated") -> None:
    """The first options of a script timing models of several sizes: ``--n`` (comma list, default ``n``),
    ``--t-end`` (1.0 s), ``--dt`` (1e-3 s)."""
    p.add_argument("--n", default=n, help=n_help)
    p.add_argument("--t-end", type=float, default=1.0)
    p.add_argument("--dt", type=float, default=1e-3)


def markdown(lines: list[str], notes: list[str]) -> str:
    """A report's text: its ``lines``, then, if there are any, the list of ``notes`` under "Notes:"."""
    return "\n".join(lines + (["", "Notes:"] + notes if notes else [])) + "\n"


def peer_env(script: str, args) -> tuple[dict, str]:
    """The workers' environment from the :func:`common_options` and the BLAS a child then loads, that one
    said on stderr as ``<script>: BLAS ...``."""
    env = worker_env(args.blas, args.threads, args.numba_threads)
    blas = blas_of_child(env)
    print(f"{script}: BLAS {blas}", file=sys.stderr)
    return env, blas


# ---------------------------------------------------------------- models

def fm_chain(fm, n: int, length: float = 0.1, mass: float = 0.1, gravity: float = 9.81):
    """flexmb: serial chain of ``n`` uniform rods (benchmarks/chain_fall.py's chain), horizontal along +x
    at rest, revolute joints about z, the first pinned to ground at the origin. Each rod's node is at
    its proximal joint, centre of mass at +length/2 on node x, inertia diag(0, m l^2/12, m l^2/12)."""
    import numpy as np

    mb = fm.ModelBuilder(gravity=(0.0, -gravity, 0.0))
    inertia = np.diag([0.0, mass * length**2 / 12.0, mass * length**2 / 12.0])
    parent = "ground"
    for i in range(n):
        node = f"n{i}"
        mb.add_node(node, position=(i * length, 0.0, 0.0))
        mb.add_body(f"link{i}", node=node, mass=mass, com=(0.5 * length, 0.0, 0.0), inertia=inertia)
        mb.add_joint(f"j{i}", "revolute", parent=parent, child=node, point=(i * length, 0.0, 0.0), axis=(0.0, 0.0, 1.0),
                     q0=0.0, u0=0.0)
        parent = node
    return mb.compile()


def fm_warm_up(fm, dt: float = 1e-3, threaded: bool = False) -> float:
    """Compile (or load from numba's cache) flexmb's kernels: a 2-link chain and a 2-element beam, 5 steps each;
    with ``threaded`` also a beam of PARALLEL_MIN elements (3 steps), whose passes run on numba's threads: their
    kernels load and the threads start here, not in the first timed steps (beam benchmarks). Seconds taken."""
    from flexmb.engine.parallel import PARALLEL_MIN

    t0 = time.perf_counter()
    fm.simulate(fm_chain(fm, 2), 5 * dt, dt)
    sec = fm.BeamSection(0.7e11, 0.7e11 / 2.6, 4e-4, 2e-7, 2e-7, 4e-7, 3000.0)
    for n, steps in ((2, 5),) + (((PARALLEL_MIN, 3),) if threaded else ()):
        mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
        nodes = mb.add_flexible_link("warm", (0.0, 0.0, 0.0), (2.0, 0.0, 0.0), n, sec)
        mb.add_joint("pin", "revolute", "ground", nodes[0], axis=(0.0, 0.0, 1.0))
        fm.simulate(mb.compile(), steps * dt, dt)
    return time.perf_counter() - t0


def fm_step_numbers(res, dt: float, cpu_s: float) -> dict:
    """Per-step numbers of a flexmb result from its public stats (optional keys may be missing)."""
    s = res.stats
    steps = stat(s, "steps", 0.0)
    wall = stat(s, "wall_time")
    t_cov = float(res.t[-1]) if len(res.t) else 0.0
    per_h = 1e3 * dt / t_cov if t_cov > 0 else None
    return {
        "status": res.status, "t_covered": t_cov, "steps": steps,
        "ms_per_step": wall * per_h if per_h and wall is not None else None,
        "cpu_ms_per_step": cpu_s * per_h if per_h else None,
        "newton_per_step": stat(s, "newton_iterations", 0.0) / steps if steps else None,
        "jac_per_step": stat(s, "factorizations", 0.0) / steps if steps and "factorizations" in s else None,
    }


# ---------------------------------------------------------------- CHOLMOD as a run uses it

class CholmodLog:
    """What a run asked of CHOLMOD: analyses (with their mode), numeric factorizations, solves, and a
    copy of the last matrix factorized (``matrix``). Filled by :func:`capture_cholmod`."""

    def __init__(self) -> None:
        self.analyses, self.factorizations, self.solves = 0, 0, 0
        self.mode, self.matrix = None, None


class _FactorProxy:
    """Wraps a sksparse Factor: records the matrices factorized and counts the solves."""

    def __init__(self, factor, log: CholmodLog) -> None:
        self._factor, self._log = factor, log

    def cholesky_inplace(self, A, *args, **kwargs):
        self._log.factorizations += 1
        self._log.matrix = A.copy()
        return self._factor.cholesky_inplace(A, *args, **kwargs)

    def __call__(self, b):
        self._log.solves += 1
        return self._factor(b)

    def solve_A(self, b):
        self._log.solves += 1
        return self._factor.solve_A(b)

    def __getattr__(self, name):
        return getattr(self._factor, name)


def capture_cholmod(log: CholmodLog):
    """Context manager: while active, ``sksparse.cholmod.analyze`` and ``cholesky`` hand out recording
    factors (whoever calls them through the module, as flexmb does). Raises RuntimeError on exit if
    nothing was factorized through them (flexmb no longer calls CHOLMOD that way)."""
    import contextlib

    from sksparse import cholmod

    @contextlib.contextmanager
    def cm():
        orig_analyze, orig_cholesky = cholmod.analyze, cholmod.cholesky

        def analyze(A, mode="auto", *args, **kwargs):
            log.analyses += 1
            log.mode = mode
            return _FactorProxy(orig_analyze(A, mode, *args, **kwargs), log)

        def cholesky(A, beta=0, mode="auto", *args, **kwargs):
            log.analyses += 1
            log.factorizations += 1
            log.mode, log.matrix = mode, A.copy()
            return _FactorProxy(orig_cholesky(A, beta, mode, *args, **kwargs), log)

        cholmod.analyze, cholmod.cholesky = analyze, cholesky
        try:
            yield log
        finally:
            cholmod.analyze, cholmod.cholesky = orig_analyze, orig_cholesky
        if log.matrix is None:
            raise RuntimeError("no matrix was factorized through sksparse.cholmod.analyze/cholesky: flexmb calls "
                               "CHOLMOD another way now; adapt benchmarks/benchlib.capture_cholmod")

    return cm()


def time_factor_and_solves(A, mode: str = "auto", solves: int = 2, repeats: int = 20) -> dict:
    """Median times (ms) of CHOLMOD numeric factorizations of ``A`` on one symbolic analysis, of one
    solve, and of one factorization + ``solves`` solves (the floor of a Newton step on that pattern)."""
    import statistics as st

    import numpy as np
    from sksparse import cholmod

    A = A.tocsc()
    factor = cholmod.analyze(A, mode=mode)
    factor.cholesky_inplace(A)  # first numeric factorization: allocation, not timed
    b = np.random.default_rng(0).standard_normal(A.shape[0])
    fac, sol, both = [], [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        factor.cholesky_inplace(A)
        t1 = time.perf_counter()
        for _ in range(solves):
            factor(b)
        t2 = time.perf_counter()
        fac.append(1e3 * (t1 - t0))
        sol.append(1e3 * (t2 - t1) / max(solves, 1))
        both.append(1e3 * (t2 - t0))
    try:
        nnz_l = int(factor.L().nnz)
    except Exception:  # informational only
        nnz_l = None
    return {"factor_ms": st.median(fac), "solve_ms": st.median(sol), "floor_ms": st.median(both),
            "factor_ms_min": min(fac), "dof": int(A.shape[0]), "nnz_A": int(A.nnz), "nnz_L": nnz_l, "mode": mode,
            "timing_repeats": repeats}


# ---------------------------------------------------------------- exudyn (the peer), shared by peer_*.py

def exu_settings(exu, t_end: float, dt: float, rtol: float, rho_inf: float):
    """Simulation settings: gen-alpha rho_inf, the Newton tolerance, EigenSparse, 1 thread, no files."""
    ss = exu.SimulationSettings()
    ti = ss.timeIntegration
    ti.numberOfSteps = int(round(t_end / dt))
    ti.endTime = ti.numberOfSteps * dt
    ti.generalizedAlpha.spectralRadius = rho_inf
    ti.newton.relativeTolerance = rtol
    ti.verboseMode = 0
    ss.linearSolver.solverType = exu.LinearSolverType.EigenSparse
    ss.solution.file.write = False
    ss.solution.sensors.active = False
    ss.parallel.numberOfThreads = 1
    ss.displayComputationTime = False
    return ss


def exu_settings_text(exu, ss) -> str:
    """exudyn's settings that matter for the comparison, in one line."""
    ti, nw = ss.timeIntegration, ss.timeIntegration.newton
    return (f"gen-α spectralRadius={ti.generalizedAlpha.spectralRadius:g}, newton.relativeTolerance={nw.relativeTolerance:g}, "
            f"absoluteTolerance={nw.absoluteTolerance:g}, useModifiedNewton={bool(nw.useModifiedNewton)}, "
            f"maxIterations={nw.maxIterations}, adaptiveStep={bool(ti.adaptiveStep)} (decrease "
            f"{ti.adaptiveStepDecrease:g}, minimumStepSize {ti.minimumStepSize:g}), numerical Jacobian forODE2="
            f"{bool(nw.numericalDifferentiation.forODE2)}, {ss.linearSolver.solverType.name}, "
            f"{ss.parallel.numberOfThreads} thread, no solution file, exudyn {exu.__version__}")


def run_exudyn_solver(exu, mbs, ss, dt: float, guard: bool, budget_s: float, stall_s: float) -> dict:
    """Solve with MainSolverImplicitSecondOrder, optionally with the stall guard; the solver's counters."""
    state = {"deadline": math.inf, "mark": (0.0, 0.0), "why": ""}

    def pre_step(mbs_, t: float) -> bool:  # returning False stops exudyn's solver
        now = time.perf_counter()
        if now > state["deadline"]:
            state["why"] = "time limit"
            return False
        w0, t0_ = state["mark"]
        if now - w0 > stall_s:
            if t - t0_ < 10 * dt:
                state["why"] = f"stalled: < 10 h of progress in {stall_s:g} s"
                return False
            state["mark"] = (now, t)
        return True

    if guard:
        mbs.SetPreStepUserFunction(pre_step)
    mbs.Assemble()
    solver = exu.MainSolverImplicitSecondOrder()
    t0 = time.perf_counter()
    state["deadline"], state["mark"] = t0 + budget_s, (t0, 0.0)
    cpu0 = time.process_time()
    error = ""
    try:
        success = bool(solver.SolveSystem(mbs, ss))
    except Exception as exc:  # exudyn raises on some failures
        success, error = False, f"{type(exc).__name__}: {exc}"
    cpu = time.process_time() - cpu0
    wall = time.perf_counter() - t0
    it = solver.it
    t_cov = float(it.currentTime)
    end = ss.timeIntegration.endTime
    if success and t_cov >= end - 1e-9:
        status = "finished"
    elif state["why"]:
        status = f"stopped ({state['why']}; step size {it.currentStepSize:.1e} s)"
    else:
        msg = error or (solver.GetErrorString() if hasattr(solver, "GetErrorString") else "")
        status = f"failed at t = {t_cov:.4g} s: {' '.join(str(msg).split())[:160] or 'solver returned False'}"
    steps = max(int(it.currentStepIndex) - 1, 0)
    per_h = 1e3 * dt / t_cov if t_cov > 0 else None
    return {
        "status": status, "t_covered": t_cov, "steps": steps, "wall_s": wall,
        "ms_per_step": wall * per_h if per_h else None, "cpu_ms_per_step": cpu * per_h if per_h else None,
        "newton_per_step": it.newtonStepsCount / steps if steps else None,
        "jac_per_step": it.newtonJacobiCount / steps if steps else None, "guard": guard,
    }
