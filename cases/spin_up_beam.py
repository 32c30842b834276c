"""Spin-up of a flexible beam on a driven hub: geometric stiffening keeps it bounded, the linear model diverges.

The manoeuvre (Kane, Ryan & Banerjee 1987, "Dynamics of a cantilever beam attached to a moving
base", J. Guidance, Control, and Dynamics 10(2), 139–151; the same test in Simo & Vu-Quoc 1986,
"On the dynamics of flexible beams under large overall motions — the plane case, Part II",
J. Appl. Mech. 53, 855–863). A uniform cantilever is clamped to a hub that turns about a fixed
vertical axis z; the hub angle is prescribed,

    θ(t) = (Ωs/Ts) [t²/2 + (Ts/2π)² (cos(2πt/Ts) − 1)]   for t < Ts,
    θ(t) = Ωs (t − Ts/2)                                  for t ≥ Ts,

so θ̇ rises smoothly from 0 to Ωs in Ts and θ̈ = (Ωs/Ts)(1 − cos 2πt/Ts) peaks at 2Ωs/Ts at
t = Ts/2. There is no gravity: the beam moves in the horizontal x–y plane.

What was taken from where (from memory of the papers; no copy was available while writing):
* Kane et al. 1987: the hub-angle law above, the beam L = 10 m, E = 7e10 Pa, A = 4e-4 m²,
  I = 2e-7 m⁴, ρ = 3000 kg/m³ (ρA = 1.2 kg/m, EI = 1.4e4 N m², EA = 2.8e7 N), Ts = 15 s,
  Ωs = 6 rad/s, and the finding that the "conventional" linear model (small deformations with
  linear strain, in the rotating frame) diverges while their model, which keeps the stiffening,
  stays bounded with a small tip deflection. Simo & Vu-Quoc used the same beam (EA, EI, ρA, L)
  with Ωs = 4 rad/s and show the linear model's deflection growing without bound as well.
  Both spin-up speeds exceed the first bending frequency ω1 = 1.8751² √(EI/ρA L⁴) = 3.798 rad/s.
* The hub radius: taken as 0 (the beam's root on the axis); ``hub_radius`` changes it. I am not
  sure whether Kane's figure used a non-zero radius.
* Published tip-deflection values: I recall the nonlinear tip deflection of Kane's figure
  reaching about half a metre (lagging) near t ≈ Ts/2 and returning to a few millimetres after
  the spin-up, but I cannot confirm the number, so nothing here is compared with it. The checks
  are the physical bounds and the independent linear references below.
* The shear modulus G = 2.7e10 Pa and J = 2I, which the papers do not need (planar motion):
  chosen for aluminium.

flexmb model. Node ``hub`` at (r, 0, 0) (r = ``hub_radius``), turned about z through the
origin by the revolute joint ``hub`` whose angle is driven (position, velocity and acceleration
given in closed form); the beam is ``add_flexible_link`` with ``n_elements`` co-rotational
Euler–Bernoulli elements from the hub node to (r + L, 0, 0), its first node being the hub node
(clamped). Tip deflection = transverse displacement of the tip in the rotating hub frame,
w = −sin θ x_tip + cos θ y_tip (:func:`tip_deflection`); positive w leads the hub.

Independent reference, the linear floating-frame model (:func:`linear_reference`). In the hub
frame (e1 along the undeformed beam, e2 transverse in the plane), a section at x carries the
transverse deflection w(x, t); its acceleration's e2 component is ẅ + θ̈ (r + x + u) + 2θ̇u̇ − θ̇² w
(u: axial displacement, neglected: u/L ≈ ρAΩ²L²/3EA ≈ 5e-5 here). The "conventional linear"
model uses linear strain only:

    ρA ẅ + EI w'''' − ρA θ̇² w = −ρA θ̈ (r + x)                                          (1)

— the centrifugal softening −ρA θ̇² w is there, the stiffening is not, so once θ̇ > ω1 the first
mode has negative stiffness ω1² − θ̇² and grows like exp(√(θ̇² − ω1²) t). Keeping the axial force
of the centrifugal field, N(x) = ρA θ̇² [r (L − x) + (L² − x²)/2], adds the geometric stiffness
−(N w')' (Kane et al.'s correction, to first order in w):

    ρA ẅ + EI w'''' − (N w')' − ρA θ̇² w = −ρA θ̈ (r + x)                                (2)

Both are discretised with cubic Hermite elements (consistent mass M, bending stiffness K,
geometric stiffness θ̇² G with G = ∫ N/θ̇² φ_i' φ_j' dx, load f = ∫ ρA (r + x) φ_i dx, Gauss
quadrature), clamped at the root, reduced to the lowest ``n_modes`` modes of (K, M) and
integrated with scipy.integrate.solve_ivp (DOP853): M ẅ + (K + θ̇² (s G − M)) w = −θ̈ f with
s = 0 for (1), 1 for (2). For the first mode G's Rayleigh quotient divided by the modal mass
is Southwell's coefficient 1.193 (zero hub radius), so the net centrifugal effect in (2) is
+0.193 θ̇² on ω1² (in-plane bending), against −θ̈² in (1).

Physical bounds on the flexmb (nonlinear) tip deflection (:func:`bounds`): the spin-up's
inertial load −ρA θ̈ (r + x) is, at its peak θ̈ = 2Ωs/Ts, the distributed load of a cantilever
whose static tip deflection is w_qs = ρA (2Ωs/Ts) L⁴ (r/8 + 11 L/120)/EI (uniform part qL⁴/8EI,
triangular part 11 q0 L⁴/120EI). Each bending mode k is an undamped oscillator ω_k driven by
(1 − cos pt)/2 times its static share X_k (Σ X_k = w_qs), p = 2π/Ts; exactly solved, its
response never exceeds |X_k| ω_k²/(ω_k² − p²) and after Ts it vibrates freely with amplitude at
most |X_k| p²/(ω_k² − p²). Rotation only stiffens the beam in (2) (G − M is positive definite
for a clamped beam), which lowers the static shares and raises the ω_k, so the non-rotating
beam's values bound the rotating one (Σ over the modes of the reference model).

Settings: dt = 0.01 s, ρ∞ = 0.8, no physical damping. The bending modes that matter
(ω1 = 3.8, ω2 = 23.8 rad/s) get 165 and 26 steps per period; the axial modes (first one
π/2 √(E/ρ)/L = 759 rad/s, the element ones far higher) are not resolved and are damped by
ρ∞ < 1. Newton needs 2–3 iterations per step at rest and about 4 at Ωs = 6 rad/s with this dt;
the count grows with θ̇·dt (7 at dt = 0.02, 30+ and step halvings at dt = 0.04), because the
iteration matrix has no tangent of the beams' velocity-dependent inertia forces (Coriolis and
centrifugal terms of the co-rotated mass): larger steps do not pay.

Postprocess: runs the other meshes of ``meshes`` (same dt, ρ∞), integrates both linear models,
and writes ``tip_deflection.png``: tip deflection against time for every mesh, the conventional
linear model (1) and the stiffened linear model (2), with the bounds; a log panel shows (1)
growing without bound. The summary gives the peak and after-spin-up deflections per mesh, the
mesh differences, the bounds, the linear models and the growth rate of (1) against
√(Ωs² − ω1²).

Run:  flexmb run cases/spin_up_beam.py [--param Omega_s=4.0] [--param meshes=[2,4,8]]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp
from scipy.linalg import eigh

import flexmb as fm

BETA1 = 1.8751040687  # first root of cos βL cosh βL = -1 (cantilever)

DEFAULTS = dict(
    L=10.0, E=7e10, A=4e-4, I=2e-7, rho=3000.0, G=2.7e10, hub_radius=0.0,
    Omega_s=6.0, T_s=15.0, n_elements=8, damping=0.0, meshes=[2, 4, 8, 16],
    reference_elements=12, reference_modes=5,
    t_end=20.0, dt=0.01, rho_inf=0.8, output_every=1,
)


def hub_angle(t: float, Omega_s: float, T_s: float) -> tuple[float, float, float]:
    """Prescribed hub angle θ, rate θ̇ and acceleration θ̈ at time t (Kane et al. 1987)."""
    if t < T_s:
        p = 2 * np.pi / T_s
        c = Omega_s / T_s
        return (c * (t * t / 2 + (np.cos(p * t) - 1) / p**2), c * (t - np.sin(p * t) / p), c * (1 - np.cos(p * t)))
    return Omega_s * (t - T_s / 2), Omega_s, 0.0


def build(**params) -> fm.Model:
    """The hub (driven revolute joint about z through the origin) and the beam clamped to it."""
    p = {**DEFAULTS, **params}
    n = p["n_elements"]
    if not (isinstance(n, (int, np.integer)) and n >= 1):
        raise fm.ModelError(f"spin_up_beam: n_elements = {n!r} must be a positive integer.")
    if not p["T_s"] > 0:
        raise fm.ModelError(f"spin_up_beam: T_s = {p['T_s']!r} must be positive (the spin-up time).")
    mb = fm.ModelBuilder(gravity=(0, 0, 0))
    r, L = float(p["hub_radius"]), float(p["L"])
    mb.add_node("hub", (r, 0, 0))
    mb.add_joint("hub", "revolute", "ground", "hub", point=(0, 0, 0), axis=(0, 0, 1))
    Os, Ts = float(p["Omega_s"]), float(p["T_s"])
    mb.add_drive("hub", lambda t: hub_angle(t, Os, Ts)[0], lambda t: hub_angle(t, Os, Ts)[1],
                 lambda t: hub_angle(t, Os, Ts)[2])
    sec = fm.BeamSection(E=p["E"], G=p["G"], A=p["A"], Iy=p["I"], Iz=p["I"], J=2 * p["I"], rho=p["rho"])
    mb.add_flexible_link("beam", (r, 0, 0), (r + L, 0, 0), int(n), sec, node_a="hub", damping=p["damping"])
    return mb.compile()


def tip_deflection(result, model) -> np.ndarray:
    """Transverse displacement of the beam's tip in the rotating hub frame, over time [m]."""
    th = result.coordinate("hub.q")
    x = result.node_position(model.node_names[-1])
    return -np.sin(th) * x[:, 0] + np.cos(th) * x[:, 1]


# ---------------------------------------------------------------------------------------------
# the linear floating-frame reference, eq. (1) and (2) of the module docstring
def _hermite(xi: np.ndarray, h: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cubic Hermite shape functions on an element of length h at ξ ∈ [0, 1] and their first and
    second x-derivatives (dofs: w, w' at both ends)."""
    N = np.stack([1 - 3 * xi**2 + 2 * xi**3, h * (xi - 2 * xi**2 + xi**3), 3 * xi**2 - 2 * xi**3, h * (xi**3 - xi**2)], -1)
    dN = np.stack([(6 * xi**2 - 6 * xi) / h, 1 - 4 * xi + 3 * xi**2, (6 * xi - 6 * xi**2) / h, 3 * xi**2 - 2 * xi], -1)
    d2N = np.stack([(12 * xi - 6) / h**2, (6 * xi - 4) / h, (6 - 12 * xi) / h**2, (6 * xi - 2) / h], -1)
    return N, dN, d2N


def reference_matrices(params: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """M, K, G (geometric stiffness per unit θ̇²) and f (load per unit θ̈) of the Hermite model of
    eq. (1)–(2), clamped root dofs removed; ``reference_elements`` elements."""
    p = {**DEFAULTS, **params}
    L, r, n = float(p["L"]), float(p["hub_radius"]), int(p["reference_elements"])
    rhoA, EI = p["rho"] * p["A"], p["E"] * p["I"]
    h = L / n
    g, wg = np.polynomial.legendre.leggauss(5)  # exact for the degree-6 integrands
    xi, wq = (g + 1) / 2, wg * h / 2
    N, dN, d2N = _hermite(xi, h)
    x = (np.arange(n)[:, None] + xi[None, :]) * h  # (element, Gauss point)
    Nax = rhoA * (r * (L - x) + (L**2 - x**2) / 2)
    Me = rhoA * np.einsum("q,qi,qj->ij", wq, N, N)
    Ke = EI * np.einsum("q,qi,qj->ij", wq, d2N, d2N)
    Ge = np.einsum("q,eq,qi,qj->eij", wq, Nax, dN, dN)
    fe = rhoA * np.einsum("q,eq,qi->ei", wq, r + x, N)
    nd = 2 * (n + 1)
    M, K, G, f = np.zeros((nd, nd)), np.zeros((nd, nd)), np.zeros((nd, nd)), np.zeros(nd)
    for e in range(n):  # assembly of a reference model, once (not a time-step loop)
        s = slice(2 * e, 2 * e + 4)
        M[s, s] += Me
        K[s, s] += Ke
        G[s, s] += Ge[e]
        f[s] += fe[e]
    return M[2:, 2:], K[2:, 2:], G[2:, 2:], f[2:]


def reference_modes(params: dict) -> dict:
    """Modes of the non-rotating reference beam: ω (rad/s), mass-normalised shapes Φ, the tip
    row of Φ, modal geometric stiffness Φᵀ G Φ and modal load Φᵀ f (lowest ``reference_modes``)."""
    p = {**DEFAULTS, **params}
    M, K, G, f = reference_matrices(p)
    lam, Phi = eigh(K, M)
    k = int(p["reference_modes"])
    Phi = Phi[:, :k]
    return {"omega": np.sqrt(lam[:k]), "Phi": Phi, "tip": Phi[-2], "G": Phi.T @ G @ Phi, "f": Phi.T @ f}


def linear_reference(t: np.ndarray, params: dict, stiffening: bool = False) -> np.ndarray:
    """Tip deflection at times ``t`` of the linear floating-frame model: eq. (1) (``stiffening``
    False: the conventional linear model) or eq. (2) (True: with the centrifugal geometric
    stiffness), modal form of the Hermite model, solve_ivp DOP853 (rtol 1e-9)."""
    p = {**DEFAULTS, **params}
    md = reference_modes(p)
    Om2, Gm, fm_, k = md["omega"] ** 2, md["G"] * (1.0 if stiffening else 0.0), md["f"], md["omega"].size
    Os, Ts = float(p["Omega_s"]), float(p["T_s"])

    def rhs(tt: float, y: np.ndarray) -> np.ndarray:
        _, td, tdd = hub_angle(tt, Os, Ts)
        q, v = y[:k], y[k:]
        return np.concatenate([v, -tdd * fm_ - Om2 * q - td * td * (Gm @ q - q)])

    t = np.asarray(t, dtype=float)
    sol = solve_ivp(rhs, (0.0, float(t[-1])), np.zeros(2 * k), method="DOP853", t_eval=t, rtol=1e-9,
                    atol=1e-12 * float(p["L"]))
    if not sol.success:
        raise RuntimeError(f"linear reference: solve_ivp failed: {sol.message}")
    return md["tip"] @ sol.y[:k]


def bounds(params: dict) -> dict:
    """Physical bounds on the tip deflection (module docstring): static tip deflection w_qs under
    the peak spin-up load (closed form), the peak bound Σ|X_k| ω_k²/(ω_k² − p²) and the
    after-spin-up bound Σ|X_k| p²/(ω_k² − p²) (X_k: modal static shares of the reference model),
    and the analytic first bending frequency."""
    p = {**DEFAULTS, **params}
    rhoA, EI, L, r = p["rho"] * p["A"], p["E"] * p["I"], float(p["L"]), float(p["hub_radius"])
    amax = 2 * p["Omega_s"] / p["T_s"]
    w_qs = rhoA * amax * L**4 * (r / 8 + 11 * L / 120) / EI
    md = reference_modes(p)
    om, pf = md["omega"], 2 * np.pi / p["T_s"]
    if pf >= om[0]:
        raise ValueError(f"spin-up too fast for the bound: 2π/Ts = {pf:.3g} rad/s is not below ω1 = {om[0]:.3g} rad/s")
    X = -md["tip"] * md["f"] * amax / om**2  # modal static shares of the tip deflection (load −θ̈ f)
    return {
        "omega1": BETA1**2 * np.sqrt(EI / (rhoA * L**4)),
        "w_qs": w_qs,
        "w_qs_modal_sum": float(X.sum()),
        "peak": float(np.sum(np.abs(X) * om**2 / (om**2 - pf**2))),
        "after_spin_up": float(np.sum(np.abs(X) * pf**2 / (om**2 - pf**2))),
    }


# ---------------------------------------------------------------------------------------------
def _other_meshes(p: dict) -> list[int]:
    return sorted(set(int(m) for m in p["meshes"]) - {int(p["n_elements"])})


def companions(params: dict) -> dict[str, dict]:
    """The other meshes (flexmb starts them on a spare core while this run runs)."""
    return {f"n{n}": {"n_elements": n} for n in _other_meshes({**DEFAULTS, **params})}


def postprocess(result, model, params: dict, out_dir: Path, companions: dict | None = None) -> dict:
    """The other meshes (from ``companions`` when flexmb ran them, else run here), the two linear
    models; plot tip deflection vs time; summary."""
    from flexmb.results.plots import plt
    from flexmb.solvers.simulate import simulate

    p = {**DEFAULTS, **params}
    out_dir = Path(out_dir)
    Ts = float(p["T_s"])
    n_main = int(p["n_elements"])
    runs = {n_main: (result.t, tip_deflection(result, model), result.stats.get("wall_time", float("nan")))}
    for n in _other_meshes(p):
        if companions and f"n{n}" in companions:
            m, res = companions[f"n{n}"].model, companions[f"n{n}"].result
        else:
            m = build(**{**p, "n_elements": n})
            res = simulate(m, p["t_end"], p["dt"], rho_inf=p["rho_inf"], output_every=p["output_every"])
        if res.status != "finished":
            raise RuntimeError(f"mesh n = {n}: the run did not finish ({res.status})")
        runs[n] = (res.t, tip_deflection(res, m), res.stats.get("wall_time", float("nan")))
    t = result.t
    w_lin = linear_reference(t, p, stiffening=False)
    w_stf = linear_reference(t, p, stiffening=True)
    b = bounds(p)
    after = t > Ts

    fig, (ax, axl) = plt.subplots(2, 1, figsize=(8, 8), sharex=True)
    ns = sorted(runs)
    for n in ns:
        tn, wn, _ = runs[n]
        ax.plot(tn, wn, lw=1.2, label=f"flexmb, {n} elements")
    ax.plot(t, w_stf, "k--", lw=1, label="linear + geometric stiffening, eq. (2)")
    ax.plot(t, w_lin, "r-", lw=1.5, label="conventional linear, eq. (1)")
    for s in (-1, 1):
        ax.axhline(s * b["peak"], color="grey", ls=":", lw=1, label="bound on the peak" if s < 0 else None)
    for a_ in (ax, axl):
        a_.axvline(Ts, color="k", lw=0.8, alpha=0.5)
    ax.annotate("end of spin-up Ts", (Ts, 0), xytext=(4, 4), textcoords="offset points", fontsize="small")
    wmax = max(np.abs(runs[n][1]).max() for n in ns)
    ax.set_ylim(-1.6 * wmax, 1.6 * wmax)
    ax.set_ylabel("tip deflection in the hub frame w [m]")
    ax.set_title(f"spin-up to Ωs = {p['Omega_s']:g} rad/s in Ts = {Ts:g} s (ω1 = {b['omega1']:.3g} rad/s)")
    ax.legend(fontsize="small", loc="upper right")
    ax.grid(True, alpha=0.3)
    axl.semilogy(t, np.abs(w_lin) + 1e-12, "r-", label="conventional linear |w|, eq. (1)")
    axl.semilogy(runs[ns[-1]][0], np.abs(runs[ns[-1]][1]) + 1e-12, label=f"flexmb |w|, {ns[-1]} elements")
    axl.axhline(p["L"], color="k", ls="-.", lw=1, label="beam length L")
    axl.axhline(b["peak"], color="grey", ls=":", lw=1, label="bound on the peak")
    axl.set_ylim(1e-4, None)
    axl.set_xlabel("time t [s]")
    axl.set_ylabel("|w| [m]")
    axl.legend(fontsize="small")
    axl.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(out_dir / "tip_deflection.png", dpi=120)
    plt.close(fig)

    out: dict = {"omega1_rad_s": b["omega1"], "bound_peak_m": b["peak"], "bound_after_spin_up_m": b["after_spin_up"],
                 "static_tip_deflection_at_peak_load_m": b["w_qs"]}
    for n in ns:
        tn, wn, wall = runs[n]
        out[f"n{n}_peak_tip_deflection_m"] = float(wn.min() if -wn.min() > wn.max() else wn.max())
        out[f"n{n}_after_spin_up_max_abs_m"] = float(np.abs(wn[tn > Ts]).max()) if np.any(tn > Ts) else float("nan")
        out[f"n{n}_wall_time_s"] = float(wall)
    for a, c in zip(ns[:-1], ns[1:]):
        if runs[a][0].shape == runs[c][0].shape:
            out[f"mesh_difference_n{a}_n{c}_m"] = float(np.abs(runs[a][1] - runs[c][1]).max())
    out["stiffened_linear_peak_m"] = float(w_stf[np.argmax(np.abs(w_stf))])
    out[f"flexmb_n{n_main}_vs_stiffened_linear_max_diff_m"] = float(np.abs(runs[n_main][1] - w_stf).max())
    out["conventional_linear_max_abs_m"] = float(np.abs(w_lin).max())
    if p["Omega_s"] > b["omega1"] and after.sum() > 10:
        late = after & (t > Ts + 0.5)
        rate = np.polyfit(t[late], np.log(np.abs(w_lin[late]) + 1e-300), 1)[0]
        out["conventional_linear_growth_rate_1_s"] = float(rate)
        out["expected_growth_rate_sqrt_Os2_minus_w1_2"] = float(np.sqrt(p["Omega_s"] ** 2 - reference_modes(p)["omega"][0] ** 2))
    return out


if __name__ == "__main__":
    from flexmb.app.cli import main

    sys.exit(main(["run", __file__, *sys.argv[1:]]))
