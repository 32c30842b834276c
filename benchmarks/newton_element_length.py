"""Newton iterations per step against the beam element length on the falling Zahariev link (issue 14).

At N = 10000 elements on the 2 m link (cholmod_floor.py) flexmb needs about 3.2 Newton iterations per
step where N = 1000 needs 2.0. This script shows what sets the count: not N, but elements very stiff
against their own mass (short elements) together with the motion (results: 2026-11-26-newton_element_length.md).

Model: benchmarks/peer_beam_fall.py's link (Euler-Bernoulli co-rotational beam, E = 0.7e11 Pa, rho = 3000
kg/m^3, A = 4e-4 m^2, I = 2e-7 m^4, pinned about z, falling from horizontal under gravity) with N elements
on a link of length L; h = 1e-3 s, rho_inf = 0.8, rtol 1e-10, --steps steps (default 50), output at the
ends only.

Per case (N, L), in its own process (public API only: ``fm.simulate`` and ``result.stats``): Newton
iterations and factorizations per step. Beside them, from the parameters: the element length l, the
section depth over l (depth = sqrt(12 I / A) = 7.7 cm) and kappa = 12 E I h^2 / (rho A l^4), the element's
transverse stiffness over its mass in units of 1/h^2 (how stiff the element is against its own inertia
within one step; it grows as 1/l^4).

With ``--corrections`` (a diagnostic through flexmb internals: ``GeneralizedAlpha`` and its
``_trial``/``_evaluate``, the assembler's ``iteration_matrix``; small cases only, dense matrices), the
sizes max|dx| of the Newton corrections of one step (after --steps steps) with the iteration matrix
formed (a) at the predictor, as flexmb does, (b) again at the first corrected iterate, (c) at the
step's start state, and (d) with each solve refined in np.longdouble (matrix as in (a)).

With ``--large`` (flexmb internals too, sparse CHOLMOD factors, for links up to N = 10000), the same
for one step after a given step, by variant: (a) the factor at the predictor, as flexmb does; (b)
refactorized at the first corrected iterate; (c) as (a) with each solve refined once by a residual
formed in long double; (d) both; (e) the residual's own Jacobian: each correction after the first
solved by GMRES on central differences of the residual, preconditioned by (a)'s factor. Beside them:
the relative forward error of one solve with (a)'s factor (right-hand side formed in long double) and
flexmb's tolerance on the last correction. Small links say little here: at N = 10000 neither (b)
nor (c) shortens the iteration, while (e) does (results: 2026-11-26-newton_element_length.md).

Run (from the repository root):

    python benchmarks/newton_element_length.py                      # default cases, about 2 min
    python benchmarks/newton_element_length.py --corrections        # plus the corrections, about 1 min more
    python benchmarks/newton_element_length.py --cases 1000:2 --large   # plus the large links, about 2 min more
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import benchlib as bl
import peer_beam_fall as pb

CASES = "1000:2,3000:2,100:2,100:0.2,1000:0.6,100:0.06,300:0.06,1000:0.2,100:0.02,10000:2,10000:20"
CORRECTION_CASES = "100:2,100:0.2,100:0.06,100:0.02,300:0.06"
LARGE_CASES = "1000:2:22,1000:0.2:22,10000:2:22,10000:2:24"
DT = 1e-3


def link(fm, n: int, length: float):
    """benchmarks/peer_beam_fall.py's link with n elements on ``length`` metres."""
    return pb.fm_link(fm, n, length)[0]


def iterations(n: int, length: float, steps: int) -> dict:
    """Newton iterations and factorizations per step of ``steps`` steps."""
    import flexmb as fm

    res = fm.simulate(link(fm, n, length), steps * DT, DT, rho_inf=pb.RHO_INF, rtol=1e-10, output_every=steps)
    s = res.stats
    done = bl.stat(s, "steps", 0.0)
    return {"status": "finished", "it_per_step": bl.stat(s, "newton_iterations", 0.0) / done,
            "fac_per_step": bl.stat(s, "factorizations", 0.0) / done}


class _Step:
    """One step of the link after ``steps`` steps, taken by hand through flexmb's internals (the
    diagnostics' common set-up): the integrator ``integ`` at the state ``st`` with pseudo-acceleration
    ``a``, the iteration matrix's coefficients (γ', β') ``gp``, ``bp`` and diagonal ``diag``, the free
    coordinates ``free``, and :meth:`residual` of an acceleration iterate."""

    def __init__(self, n: int, length: float, steps: int) -> None:
        import flexmb as fm
        from flexmb.solvers.generalized_alpha import GeneralizedAlpha
        from flexmb.solvers.initial import relaxed_start

        self.model = model = link(fm, n, length)
        self.integ = integ = GeneralizedAlpha(model, rho_inf=pb.RHO_INF, rtol=1e-10)
        st, _ = relaxed_start(model)
        st, _ = integ.initial_acceleration(st)
        a = st.udot.copy()
        for _ in range(steps):
            st, a, _, _ = integ.step(st, a, DT)
        self.st, self.a = st, a
        c_a = (1 - integ.af) / (1 - integ.am)
        self.gp, self.bp = integ.gamma * DT * c_a, integ.beta * DT * DT * c_a
        self.free = integ.free
        self.diag = self.gp * integ.c_diag + self.bp * integ.k_diag

    def residual(self, udot1):
        """(eq. (1) on the free coordinates, the evaluation) at the step's iterate of accelerations udot1."""
        import numpy as np

        from flexmb.solvers.tree_step import _update

        integ, st, h = self.integ, self.st, DT
        n_u, t1 = st.u.size, st.t + h
        a1, hdq, u1 = np.empty(n_u), np.empty(n_u), np.empty(n_u)
        _update(st.udot, udot1, self.a, st.u, integ.am, integ.af, integ.gamma, integ.beta, h, a1, hdq, u1)
        st1 = integ._trial(st, hdq, u1, udot1, t1)
        st1.apply_drives(self.model, t1)
        ev = integ._evaluate(st1)
        return ev.residual(st1.udot)[self.free], ev


def corrections(n: int, length: float, steps: int, count: int = 5) -> dict:
    """max|dx| of ``count`` Newton corrections of one step after ``steps`` steps, per matrix choice
    (module docstring; flexmb internals, dense)."""
    import numpy as np

    step = _Step(n, length, steps)
    integ, st, free, gp, bp, diag, residual = step.integ, step.st, step.free, step.gp, step.bp, step.diag, step.residual

    def matrix(ev):
        S = integ.asm.iteration_matrix(ev, free, gp, bp, diag).toarray()
        return np.tril(S) + np.tril(S, -1).T  # the lower triangle holds S (the factors read only it)

    def run(refresh: bool, at_start: bool = False, refine: bool = False) -> list[float]:
        x, out, S = st.udot.copy(), [], None
        for it in range(count):
            r, ev = residual(x)
            if S is None or (refresh and it == 1):
                S = matrix(integ._evaluate(st) if at_start else ev)
            dx = np.linalg.solve(S, r)
            if refine:  # one step of refinement with the residual of the linear system in long double
                res = S.astype(np.longdouble) @ dx.astype(np.longdouble) - r.astype(np.longdouble)
                dx = (dx.astype(np.longdouble) - np.linalg.solve(S, res.astype(float))).astype(float)
            out.append(float(np.abs(dx).max()))
            x[free] -= dx
        return out

    return {"status": "finished", "t": float(st.t), "predictor": run(False), "refreshed": run(True),
            "start": run(False, at_start=True), "refined": run(False, refine=True)}


def lower_times_ld(S, x):
    """S x in np.longdouble for a symmetric S held by its lower triangle (sparse, as flexmb's factors
    read it): (L + Lᵀ - D) x with every product and sum in long double."""
    import numpy as np
    import scipy.sparse as sp

    L = sp.csr_matrix(sp.tril(S)).astype(np.longdouble)
    xl = np.asarray(x, dtype=np.longdouble)
    return L @ xl + L.T @ xl - L.diagonal() * xl


def large_corrections(n: int, length: float, steps: int, count: int = 3, gmres_rtol: float = 1e-9) -> dict:
    """Newton corrections of one step after ``steps`` steps on a large link with sparse CHOLMOD factors
    (module docstring, ``--large``; flexmb internals): max|dx| of ``count`` corrections per variant,
    flexmb's tolerance on them, and the relative forward error of one solve with the predictor's factor."""
    import numpy as np
    import scipy.sparse as sp
    import scipy.sparse.linalg as sla
    from sksparse.cholmod import cholesky

    step = _Step(n, length, steps)
    integ, st, free, gp, bp, diag, residual = step.integ, step.st, step.free, step.gp, step.bp, step.diag, step.residual
    dx_tol = integ.atol_udot + 0.1 * integ.rtol * (np.abs(st.udot[free]).max() + np.abs(st.u[free]).max() / DT)

    def factor(ev):
        L = sp.tril(integ.asm.iteration_matrix(ev, free, gp, bp, diag)).tocsc()  # S is its lower triangle
        return L, cholesky((L + sp.tril(L, -1).T).tocsc(), mode="auto")  # (the factors read only that)

    r0, ev0 = residual(st.udot.copy())
    S0, F0 = factor(ev0)
    x_true = F0(r0)
    b_ld = lower_times_ld(S0, x_true)
    forward = float(np.abs(F0(b_ld.astype(float)) - x_true).max() / np.abs(x_true).max())

    def refined(S, F, r):
        dx = F(r)
        return dx + F((np.asarray(r, dtype=np.longdouble) - lower_times_ld(S, dx)).astype(float))

    def run(variant: str) -> list[float]:
        x, out = st.udot.copy(), []
        S, F = S0, F0
        for it in range(count):
            r, ev = residual(x) if it else (r0, ev0)
            if variant in ("refreshed", "both") and it == 1:
                S, F = factor(ev)
            if variant == "exact" and it >= 1:  # Newton with the residual's own Jacobian: GMRES on
                x1, d1 = x.copy(), out[0]  # central differences of it, preconditioned by the predictor's factor

                def jv(v, x1=x1, d1=d1):
                    nv = float(np.abs(v).max())
                    if nv == 0.0:
                        return np.zeros_like(v)
                    eps = 0.1 * d1 / nv
                    xp, xm = x1.copy(), x1.copy()
                    xp[free] += eps * v
                    xm[free] -= eps * v
                    return (residual(xp)[0] - residual(xm)[0]) / (2 * eps)

                k = free.size
                dx, _ = sla.gmres(sla.LinearOperator((k, k), matvec=jv), r, x0=F0(r),
                                  M=sla.LinearOperator((k, k), matvec=F0), rtol=gmres_rtol, restart=20, maxiter=2)
            else:
                dx = refined(S, F, r) if variant in ("refined", "both") else F(r)
            out.append(float(np.abs(dx).max()))
            x[free] -= dx
        return out

    variants = ("predictor", "refreshed", "refined", "both", "exact")
    return {"status": "finished", "t": float(st.t), "dx_tol": float(dx_tol), "forward_error": forward,
            **{v: run(v) for v in variants}}


def _cases(text: str) -> list[tuple[int, float]]:
    return [(int(c.split(":")[0]), float(c.split(":")[1])) for c in text.split(",") if c.strip()]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", default=CASES, help="N:L pairs (elements : link length in m), comma-separated")
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--corrections", action="store_true", help="also the Newton corrections (flexmb internals)")
    p.add_argument("--correction-cases", default=CORRECTION_CASES)
    p.add_argument("--large", action="store_true",
                   help="also the corrections on large links with sparse factors and the exact Jacobian (flexmb internals)")
    p.add_argument("--large-cases", default=LARGE_CASES, help="N:L:step triples (the step after which one step is taken)")
    p.add_argument("--worker", choices=("iterations", "corrections", "large"), help=argparse.SUPPRESS)
    bl.common_options(p, repeats=1, max_minutes=10.0)
    args = p.parse_args(argv)
    if args.worker == "large":
        n, length, at = args.cases.split(":")
        bl.emit(large_corrections(int(n), float(length), int(at)))
        return 0
    if args.worker:
        (n, length), = _cases(args.cases)
        bl.emit(iterations(n, length, args.steps) if args.worker == "iterations" else
                corrections(n, length, min(args.steps, 30)))
        return 0

    env = bl.worker_env(args.blas, args.threads, args.numba_threads)
    budget = 60.0 * args.max_minutes
    depth = math.sqrt(12 * pb.INERTIA / pb.AREA)

    def worker(kind: str, n: int, length: float) -> dict:
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", kind, "--cases", f"{n}:{length!r}",
               "--steps", str(args.steps)]
        return bl.run_worker(cmd, env, budget)

    rows = []
    for n, length in _cases(args.cases):
        el = length / n
        kappa = 12 * pb.E * pb.INERTIA * DT * DT / (pb.RHO * pb.AREA * el ** 4)
        r = worker("iterations", n, length)
        rows.append([n, f"{length:g}", f"{el:.2g}", f"{depth / el:.0f}", f"{kappa:.1e}",
                     bl.fmt(r.get("it_per_step"), ".2f") if bl.ok(r) else r.get("status", "?")[:60],
                     bl.fmt(r.get("fac_per_step"), ".2f")])
    stamp = time.strftime("%Y-%m-%d %H:%M")
    text = [f"### Newton iterations per step against the element length, falling Zahariev link ({stamp})",
            "", f"h = {DT:g} s, ρ∞ = {pb.RHO_INF}, rtol = 1e-10, {args.steps} steps from rest, output at the ends only; "
            f"section depth sqrt(12 I / A) = {depth:.3g} m; κ = 12 E I h² / (ρ A l⁴).", "",
            f"Host: {bl.host_line()}", f"Command: `{bl.command_line()}`", "",
            bl.table(["N", "L m", "element length l m", "depth / l", "κ", "Newton it/step", "factorizations/step"], rows)]
    if args.corrections:
        crow = []
        for n, length in _cases(args.correction_cases):
            r = worker("corrections", n, length)
            if not bl.ok(r):
                crow.append([n, f"{length:g}", f"{length / n:.2g}", r.get("status", "?")[:60], "", "", ""])
                continue
            seq = {k: " → ".join(f"{v:.1e}" for v in r[k]) for k in ("predictor", "refreshed", "start", "refined")}
            crow.append([n, f"{length:g}", f"{length / n:.2g}", seq["predictor"], seq["refreshed"], seq["start"],
                         seq["refined"]])
        text += ["", f"Newton corrections max|dx| of one step at t = {min(args.steps, 30) * DT:g} s from the predictor "
                 "(dense solves; flexmb internals), by where the iteration matrix is formed:", "",
                 bl.table(["N", "L m", "l m", "(a) at the predictor (flexmb)", "(b) again at the 1st corrected iterate",
                           "(c) at the step's start", "(d) as (a), solves refined in long double"], crow)]
    if args.large:
        lrow = []
        for case in args.large_cases.split(","):
            n, length, at = case.split(":")
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", "large", "--cases", case]
            r = bl.run_worker(cmd, env, budget)
            if not bl.ok(r):
                lrow.append([n, length, at, r.get("status", "?")[:60]] + [""] * 7)
                continue
            seq = {k: " → ".join(f"{v:.1e}" for v in r[k]) for k in ("predictor", "refreshed", "refined", "both", "exact")}
            lrow.append([n, length, f"{r['t']:g}", f"{r['forward_error']:.1e}", f"{r['dx_tol']:.1e}", seq["predictor"],
                         seq["refreshed"], seq["refined"], seq["both"], seq["exact"]])
        text += ["", "Newton corrections max|dx| of one step on large links (sparse CHOLMOD factors, flexmb internals), "
                 "with the relative forward error of one solve with the predictor's factor (right-hand side formed in "
                 "long double) and flexmb's tolerance on the last correction:", "",
                 bl.table(["N", "L m", "step at t s", "solve's forward error", "tolerance", "(a) factor at the predictor "
                           "(flexmb)", "(b) refactorized at the 1st corrected iterate", "(c) as (a), solves refined in "
                           "long double", "(d) (b) and (c)", "(e) the residual's Jacobian (GMRES on central "
                           "differences, (a) as preconditioner)"], lrow)]
    out = "\n".join(text) + "\n"
    print(out)
    print("written to", bl.write_results("newton_element_length", out, args.results_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
