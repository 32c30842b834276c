"""CHOLMOD on Debian's reference BLAS against Debian's OpenBLAS, one thread (issue 14).

Two matrices, each factorized by CHOLMOD (scikit-sparse) in supernodal mode, where the dense
frontal matrices go to BLAS/LAPACK (dsyrk, dgemm, dtrsm, dpotrf):

* ``dense``: a dense 1000 x 1000 SPD matrix (B B^T + 1000 I, B standard normal, seed 0) stored sparse;
* ``chain``: the iteration matrix that CHOLMOD factorizes when flexmb integrates the falling chain of
  1000 rigid links with ``linear_solver="cholmod"`` (benchmarks/chain_fall.py's chain, joint
  coordinates: dense in practice, as each joint's mass-matrix row couples all links beyond it),
  captured from a 3-step run (the last matrix factorized) through sksparse's public functions. By
  default a rigid tree runs on the O(n) tree factorization (engine/tree_solver.py), which uses no
  BLAS: these numbers are what the BLAS does for CHOLMOD on such a matrix.

The matrices are built once (in a subprocess with the system BLAS) and saved; then one subprocess
per BLAS times them: ``reference`` puts /usr/lib/x86_64-linux-gnu/{blas,lapack} first on
LD_LIBRARY_PATH, ``openblas`` /usr/lib/x86_64-linux-gnu/openblas-pthread (Debian's
libopenblas0-pthread, installed by scripts/setup.sh), OPENBLAS_NUM_THREADS = OMP_NUM_THREADS = 1.
Each worker reports what flexmb.engine.linalg.blas_info() finds loaded, so the label is checked,
not assumed. Per matrix: one symbolic analysis, a first numeric factorization (not timed), then
--timing-repeats numeric factorizations (median and minimum) and solves (median).

Also with ``--chain-run``: the 1000-link chain's ms per step in flexmb on CHOLMOD
(``linear_solver="cholmod"``, ``--chain-t-end`` s of simulated time, output at the ends only) under
each BLAS, since that is what the factorization speed is for.

Run (from the repository root):

    python benchmarks/blas_dense.py                              # both matrices, both BLAS
    python benchmarks/blas_dense.py --chain-run --chain-t-end 0.2
    python benchmarks/blas_dense.py --chain-links 100 --timing-repeats 3 --results-dir /tmp/x   # quick check
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import benchlib as bl

DENSE_N = 1000


def make_matrices(path: str, dense_n: int, links: int) -> dict:
    """Build the dense SPD matrix and capture the chain's iteration matrix; save both to ``path`` (npz)."""
    import numpy as np
    import scipy.sparse as sp

    import flexmb as fm

    rng = np.random.default_rng(0)
    B = rng.standard_normal((dense_n, dense_n))
    dense = sp.csc_matrix(B @ B.T + dense_n * np.eye(dense_n))
    model = bl.fm_chain(fm, links)
    log = bl.CholmodLog()
    with bl.capture_cholmod(log):
        res = fm.simulate(model, 3e-3, 1e-3, rho_inf=0.9, output_every=3, linear_solver="cholmod")
    chain = log.matrix.tocsc()
    np.savez(path, dense_data=dense.data, dense_indices=dense.indices, dense_indptr=dense.indptr, dense_n=dense_n,
             chain_data=chain.data, chain_indices=chain.indices, chain_indptr=chain.indptr, chain_n=chain.shape[0])
    return {"status": res.status, "chain_mode": log.mode, "chain_factorizations": log.factorizations,
            "chain_solves": log.solves, "chain_dof": int(chain.shape[0]), "chain_nnz": int(chain.nnz)}


def time_matrices(path: str, repeats: int) -> dict:
    import numpy as np
    import scipy.sparse as sp

    from flexmb.engine.linalg import blas_info

    z = np.load(path)
    out = {"blas": blas_info()}
    for name in ("dense", "chain"):
        n = int(z[f"{name}_n"])
        A = sp.csc_matrix((z[f"{name}_data"], z[f"{name}_indices"], z[f"{name}_indptr"]), shape=(n, n))
        out[name] = bl.time_factor_and_solves(A, mode="supernodal", solves=1, repeats=repeats)
    out["status"] = "finished"
    return out


def chain_run(links: int, t_end: float, dt: float) -> dict:
    import flexmb as fm
    from flexmb.engine.linalg import blas_info

    bl.fm_warm_up(fm, dt)
    model = bl.fm_chain(fm, links)
    cpu0 = time.process_time()
    res = fm.simulate(model, t_end, dt, rho_inf=0.9, output_every=int(round(t_end / dt)), linear_solver="cholmod")
    out = bl.fm_step_numbers(res, dt, time.process_time() - cpu0)
    s = res.stats
    steps = bl.stat(s, "steps", 0.0)
    fac = bl.stat(s, "time_factorization")
    out.update({"blas": blas_info(), "factorization_ms_per_step": 1e3 * fac / steps if fac is not None and steps else None,
                "peak_mb": bl.peak_mb()})
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--blas-list", default="reference,openblas", help="BLAS to compare (reference, openblas, system)")
    p.add_argument("--dense-n", type=int, default=DENSE_N)
    p.add_argument("--chain-links", type=int, default=1000)
    p.add_argument("--timing-repeats", type=int, default=20, help="factorizations timed per matrix (median)")
    p.add_argument("--chain-run", action="store_true", help="also time flexmb's run of the chain under each BLAS")
    p.add_argument("--chain-t-end", type=float, default=0.2)
    p.add_argument("--dt", type=float, default=1e-3)
    p.add_argument("--worker", choices=("make", "time", "run"), help=argparse.SUPPRESS)
    p.add_argument("--matrices", default="", help=argparse.SUPPRESS)
    bl.common_options(p, repeats=1)
    args = p.parse_args(argv)

    if args.worker == "make":
        bl.emit(make_matrices(args.matrices, args.dense_n, args.chain_links))
        return 0
    if args.worker == "time":
        bl.emit(time_matrices(args.matrices, args.timing_repeats))
        return 0
    if args.worker == "run":
        bl.emit(chain_run(args.chain_links, args.chain_t_end, args.dt))
        return 0

    budget = 60.0 * args.max_minutes
    me = [sys.executable, os.path.abspath(__file__), "--dense-n", str(args.dense_n), "--chain-links", str(args.chain_links),
          "--timing-repeats", str(args.timing_repeats), "--chain-t-end", repr(args.chain_t_end), "--dt", repr(args.dt)]
    blas_list = [b.strip() for b in args.blas_list.split(",") if b.strip()]
    with tempfile.TemporaryDirectory(prefix="flexmb-blas-") as tmp:
        mats = os.path.join(tmp, "matrices.npz")
        made = bl.run_worker(me + ["--worker", "make", "--matrices", mats], bl.worker_env("system", args.threads), budget)
        if not os.path.exists(mats):
            print(f"blas_dense: could not build the matrices: {made.get('status')}", file=sys.stderr)
            return 1
        print(f"matrices built: dense {args.dense_n}, chain {made.get('chain_dof')} DOF", file=sys.stderr)
        results = {}
        for b in blas_list:
            env = bl.worker_env(b, args.threads)
            runs = bl.repeat(lambda env=env: bl.run_worker(me + ["--worker", "time", "--matrices", mats], env, budget),
                             args.repeats, f"factorizations, --blas {b}")
            results[b] = {"time": bl.median_runs(runs)}
            if args.chain_run:
                runs = bl.repeat(lambda env=env: bl.run_worker(me + ["--worker", "run"], env, budget), args.repeats,
                                 f"chain run, --blas {b}")
                results[b]["run"] = bl.median_runs(runs)

    rows, base = [], None
    for b, r in results.items():
        t = r["time"]
        for name, what in (("dense", f"dense {args.dense_n}×{args.dense_n} SPD"),
                           ("chain", f"{args.chain_links}-link chain iteration matrix")):
            m = t.get(name)
            if not m:
                rows.append([b, t.get("blas", "–"), what, t.get("status", "?"), "–", "–", "–", "–", "–", "–"])
                continue
            if b == blas_list[0]:
                base = base or {}
                base[name] = m["factor_ms"]
            speed = base[name] / m["factor_ms"] if base and name in base else None
            rows.append([b, bl.blas_short(t["blas"]), what, f"{m['dof']} / {m['nnz_A']} / {bl.fmt(m['nnz_L'], '.0f')}",
                         bl.fmt(m["factor_ms"], ".3g"), bl.fmt(m["factor_ms_min"], ".3g"), bl.fmt(m["solve_ms"], ".3g"),
                         bl.fmt(speed, ".2f"), m["mode"], bl.fmt(t.get("load_before"), ".2f")])
    text = [
        f"# CHOLMOD supernodal factorization: reference BLAS vs OpenBLAS ({time.strftime('%Y-%m-%d %H:%M')})",
        "",
        f"Host: {bl.host_line()}",
        f"Command: `{bl.command_line()}`; {args.threads} BLAS thread(s); {args.timing_repeats} timed factorizations per "
        f"matrix after one untimed (median, min). Chain matrix: the last one factorized in a 3-step flexmb run "
        f"({made.get('status')}; {made.get('chain_factorizations')} factorizations, {made.get('chain_solves')} solves, "
        f"flexmb's CHOLMOD mode '{made.get('chain_mode')}'); timed here in supernodal mode.",
        "",
        "BLAS loaded (flexmb.engine.linalg.blas_info in the workers):",
        *[f"* --blas {b}: {r['time'].get('blas', r['time'].get('status'))}" for b, r in results.items()],
        "",
        bl.table(["--blas", "BLAS loaded", "matrix", "n / nnz(A) / nnz(L)", "factorization ms (median)",
                  "(min)", "solve ms", f"speed-up vs {blas_list[0]}", "CHOLMOD mode", "load"], rows),
    ]
    if args.chain_run:
        runs = []
        for b, r in results.items():
            c = r.get("run", {})
            runs.append([b, bl.blas_short(c.get("blas", "–")), c.get("status", "?"), bl.fmt(c.get("ms_per_step"), ".4g"),
                         bl.fmt(c.get("cpu_ms_per_step"), ".4g"), bl.fmt(c.get("factorization_ms_per_step"), ".4g"),
                         bl.fmt(c.get("newton_per_step"), ".2f"), bl.fmt(c.get("peak_mb"), ".0f")])
        text += ["", f"flexmb on the {args.chain_links}-link chain, {args.chain_t_end:g} s at h = {args.dt:g}, ρ∞ = 0.9, "
                     "rtol 1e-10, output at the ends only:", "",
                 bl.table(["--blas", "BLAS loaded", "status", "ms/step wall", "CPU ms/step", "factorization ms/step",
                           "Newton it/step", "peak MB"], runs)]
    text = "\n".join(text) + "\n"
    return bl.publish("blas_dense", text, args.results_dir, args.json, {"matrices": made, "results": results})


if __name__ == "__main__":
    sys.exit(main())
