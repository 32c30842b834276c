"""Change-point four-bar started from rest in its singular configuration, elastic coupler (Zahariev & Cuadrado Fig. 3, 5, 6).

Ground, crank, coupler and rocker all have length a (a change-point mechanism). The crank
(O2 at the origin) starts pointing along -x, so its pin A is at (-a, 0); the coupler runs from A
to B at the origin and the rocker from O4 = (a, 0) back to B: all links collinear, the folded
singular configuration. There the rigid loop-closure Jacobian with respect to the coupler and
rocker angles, a² sin(ψ - φ), vanishes: the rigid model cannot say which of its three branches
(parallelogram, anti-parallelogram, or B resting on O2 while the coupler turns with the crank)
the mechanism takes, and the force it needs to start along any of them grows like 1/t².

flexmb cuts the loop through the coupler, a beam of ``n_elements`` co-rotational elements with
the section of Zahariev's flexible links (E = 0.7e11 Pa, ρ = 3000 kg/m³, A = 4e-4 m²,
I = 2e-7 m⁴) and stiffness-proportional damping α (Zahariev eq. 13). Crank and rocker are rigid
uniform rods of 1 kg. The mechanism moves in a horizontal plane (gravity off: its weight is
carried by the bearings). The crank is driven from rest, θ(t) = W/2 (t - T/π sin(πt/T)) for
t < T, then at constant speed W, through the next singular configuration (crank pin A passing
over O4 at θ = π) and on.

Where the paper is silent (link lengths, masses, drive law, plane of motion) the choices above
are ours: equal links make the mechanism change-point, the smooth start gives θ̈(0) = 0.
With α = 1e-3 s the coupler's axial modes are overdamped and its first bending mode
(ω ≈ π² √(EI/ρA)/a² ≈ 1.1e3 rad/s) has damping ratio α ω / 2 ≈ 0.5.

This is the README's demo (scripts/demo.sh). The postprocess computes σ_min, the smallest
singular value of the rigid loop-closure Jacobian (flexmb.analysis.monitors.RigidClosure; here
a |sin(ψ - φ)|), at every output row, finds the singular configurations (each stretch where
σ_min is below 10 % of its largest value, at its smallest row) and says in the summary, for
each, when it was reached, σ_min there, the coupler's axial force there and its peak near it
against the physical bound of that phase (:func:`bounds`), and whether the run passed it; then
which rigid branch the motion took. Plots: ``cut_force.png`` (the coupler's axial force, the
loop's cut, against its bounds) and ``sigma_min.png``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

import flexmb as fm

DEFAULTS = dict(
    a=1.0, crank_mass=1.0, rocker_mass=1.0, E=0.7e11, rho=3000.0, A=4e-4, I=2e-7, n_elements=4, damping=1e-3,
    W=2.0, T=1.0, t_end=2.6, dt=2e-3, rho_inf=0.8,
)


def crank_angle(p: dict):
    """Crank angle increment θ(t): smooth start to speed W at T (θ̈(0) = 0), then constant speed."""
    W, T = p["W"], p["T"]

    def theta(t):
        if np.real(t) < T:
            return W / 2 * (t - T / np.pi * np.sin(np.pi * t / T))
        return W * (t - T / 2) + 0 * t

    return theta


def build(**params) -> fm.Model:
    """The four-bar in its folded singular configuration, coupler elastic, crank driven."""
    p = {**DEFAULTS, **params}
    a, z = p["a"], (0.0, 0.0, 1.0)
    rod = lambda m: np.diag([0.0, m * a * a / 12, m * a * a / 12])  # noqa: E731
    mb = fm.ModelBuilder()
    mb.add_node("crank", (0.0, 0.0, 0.0))
    mb.add_body("crank", "crank", p["crank_mass"], (-a / 2, 0.0, 0.0), rod(p["crank_mass"]))
    mb.add_node("rocker", (a, 0.0, 0.0))
    mb.add_body("rocker", "rocker", p["rocker_mass"], (-a / 2, 0.0, 0.0), rod(p["rocker_mass"]))
    mb.add_joint("O2", "revolute", "ground", "crank", point=(0.0, 0.0, 0.0), axis=z)
    mb.add_joint("O4", "revolute", "ground", "rocker", point=(a, 0.0, 0.0), axis=z)
    sec = fm.BeamSection(p["E"], p["E"] / 2.6, p["A"], p["I"], p["I"], 2 * p["I"], p["rho"])
    nodes = mb.add_flexible_link("coupler", (-a, 0.0, 0.0), (0.0, 0.0, 0.0), int(p["n_elements"]), sec,
                                 damping=p["damping"])
    mb.add_joint("A", "revolute", "crank", nodes[0], point=(-a, 0.0, 0.0), axis=z)
    mb.add_joint("B", "revolute", "rocker", nodes[-1], point=(0.0, 0.0, 0.0), axis=z)
    mb.add_drive("O2", crank_angle(p))
    return mb.compile()


def closure_jacobian_det(model: fm.Model, x: np.ndarray, a: float) -> float:
    """a² sin(ψ - φ): determinant of the rigid loop closure A + a e(ψ) = O4 + a e(φ) with respect to
    the coupler angle ψ and rocker angle φ, for node positions x (N,3) of one state."""
    A = x[model.node_index("coupler.0")]
    B = x[model.node_index(model.node_names[-1])]
    O4 = np.array([a, 0.0, 0.0])
    psi = np.arctan2(*(B - A)[1::-1])
    phi = np.arctan2(*(B - O4)[1::-1])
    return float(a * a * np.sin(psi - phi))


def bounds(p: dict) -> dict:
    """Physical bounds on the coupler's axial force (see tests/test_case_change_point_four_bar.py):
    at constant crank speed every point of the coupler, on any rigid branch, has acceleration at
    most a W², so the coupler carries at most its whole inertia force m_c a W²; during the start
    (rigid force unbounded) the link must stay elastic: strain below 0.2 % (aluminium's yield)."""
    m_c = p["rho"] * p["A"] * p["a"]
    return {"constant_speed_N": m_c * p["a"] * p["W"] ** 2, "elastic_limit_N": 2e-3 * p["E"] * p["A"]}


NEAR_SINGULAR = 0.1
"""A row is near a singular configuration where σ_min is below this fraction of its largest value along the run."""


def sigma_history(model: fm.Model, result) -> np.ndarray:
    """σ_min of the rigid loop-closure Jacobian (flexmb.analysis.monitors.RigidClosure: the
    coupler's distance condition over the undriven coordinates) at every output row; for this
    mechanism a |sin(ψ - φ)| (tests/test_monitors.py), zero at a singular configuration."""
    from flexmb.analysis.monitors import RigidClosure, state_from_result  # only the postprocess needs them

    rc = RigidClosure(model)
    return np.array([rc.sigma_min(state_from_result(model, result, i)) for i in range(result.t.size)])


def singular_passages(t: np.ndarray, sigma: np.ndarray, near: float = NEAR_SINGULAR) -> list[dict]:
    """The singular configurations along a run: one per stretch of rows where σ_min is below
    ``near`` × its largest value. Each: ``i0``, ``i1`` (first and last row of the stretch), ``i``
    (the row of the smallest σ_min in it), ``passed`` (σ_min rose above the threshold again
    before the last row)."""
    low = sigma < near * sigma.max()
    edges = np.flatnonzero(np.diff(np.concatenate([[0], low.astype(np.int8), [0]])))
    out = []
    for i0, i1 in zip(edges[::2], edges[1::2] - 1):
        i = int(i0 + np.argmin(sigma[i0:i1 + 1]))
        out.append({"i0": int(i0), "i1": int(i1), "i": i, "passed": bool(i1 < t.size - 1)})
    return out


def branch(theta: np.ndarray, phi: np.ndarray) -> str:
    """Which branch of the rigid rhombus the motion followed: for a crank angle θ the coupler of
    length a closes the loop with the rocker at φ = 0 (B rests on O2 and the coupler turns with
    the crank, folded on it) or at φ = θ (parallelogram)."""
    on_o2, para = float(np.abs(phi).max()), float(np.abs(phi - theta).max())
    if min(on_o2, para) > 0.05:
        return (f"neither rigid branch: the rocker left both φ = 0 (by up to {on_o2:.3g} rad) and φ = θ "
                f"(parallelogram, by up to {para:.3g} rad)")
    if on_o2 <= para:
        return (f"B stayed on O2 (rocker φ within {on_o2:.2g} rad of 0): the coupler turned with the crank, folded "
                "on it; the parallelogram branch (φ = θ) was not taken")
    return f"parallelogram: the rocker followed the crank (φ = θ within {para:.2g} rad)"


def postprocess(result, model, params: dict, out_dir: Path) -> dict:
    """What happened at each singular configuration (when, σ_min there, the coupler's axial
    force there against its physical bound, whether the run passed it), the branch taken, and
    two plots: ``cut_force.png`` (the coupler's axial force against its bounds) and
    ``sigma_min.png`` (σ_min of the rigid loop-closure Jacobian over time)."""
    from flexmb.results.plots import plt  # matplotlib (Agg) only for the plots

    p = {**DEFAULTS, **params}
    out_dir = Path(out_dir)
    t, theta, phi = result.t, result.coordinate("O2.q"), result.coordinate("O4.q")
    N = result.element_forces[:, :, 0]
    cut = np.abs(N).max(axis=1)  # the cut's axial force: largest magnitude over the coupler's elements
    b = bounds(p)
    start = t < p["T"] + 0.2
    bound = np.where(start, b["elastic_limit_N"], b["constant_speed_N"])
    sigma = sigma_history(model, result)
    passages = singular_passages(t, sigma)
    s: dict = {
        "rigid_closure_det_at_start": closure_jacobian_det(model, result.x[0], p["a"]),
        "crank_angle_reached_rad": float(theta[-1]),
        "max_axial_force_start_N": float(cut[start].max()),
        "elastic_limit_N": b["elastic_limit_N"],
        "max_axial_force_constant_speed_N": float(cut[~start].max(initial=0.0)),
        "constant_speed_bound_N": b["constant_speed_N"],
        "sigma_min_largest": float(sigma.max()),
        "singular_configurations": len(passages),
    }
    for k, ps in enumerate(passages, start=1):
        i, w = ps["i"], slice(ps["i0"], ps["i1"] + 1)
        j = ps["i0"] + int(np.argmax(cut[w] / bound[w]))  # the row where the force came closest to its bound
        where = ("the start, folded, all links on the x axis" if i == 0 else
                 "crank pin A over the rocker's pivot O4" if abs(theta[i] - np.pi) < 0.1 else "a folded configuration")
        what = "elastic limit: the rigid model's force is unbounded here" if start[j] else "m_c a W² at constant crank speed"
        after = (f"Passed: σ_min rose above {100 * NEAR_SINGULAR:g} % of its largest at t = {t[ps['i1'] + 1]:.3f} s"
                 if ps["passed"] else f"Not passed: the run ended at t = {t[-1]:.3f} s before σ_min rose again")
        s[f"singular_{k}"] = (
            f"t = {t[i]:.3f} s (crank θ = {theta[i]:.3f} rad): {where}. σ_min = {sigma[i]:.2g} (smallest at an output row; "
            f"its largest along the run: {sigma.max():.3g}). Coupler axial force {cut[i]:.3g} N there and at most "
            f"{cut[j]:.3g} N (t = {t[j]:.3f} s) while near it (σ_min < {100 * NEAR_SINGULAR:g} % of its largest): "
            f"{100 * cut[j] / bound[j]:.2g} % of its bound, {bound[j]:.3g} N ({what}). {after}.")
        s[f"singular_{k}_t_s"] = float(t[i])
        s[f"singular_{k}_crank_angle_rad"] = float(theta[i])
        s[f"singular_{k}_sigma_min"] = float(sigma[i])
        s[f"singular_{k}_peak_axial_force_N"] = float(cut[j])
        s[f"singular_{k}_force_bound_N"] = float(bound[j])
        s[f"singular_{k}_passed"] = ps["passed"] and not result.status.startswith(("failed", "interrupted"))
    s["branch"] = branch(theta, phi)
    s["outcome"] = (f"{result.status}: the crank turned {theta[-1]:.3f} rad in {t[-1]:.3g} s through "
                    f"{len(passages)} singular configuration(s) of the rigid mechanism, "
                    f"{sum(ps['passed'] for ps in passages)} passed")

    near = [(t[ps["i0"]], t[ps["i1"]]) for ps in passages]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.plot(t, cut, color="tab:blue", label="coupler axial force, largest |N| over its elements")
    ax.plot(t, bound, "k--", lw=1, label="physical bound")
    for lo, hi, text in ((t[0], t[start][-1], f"elastic limit 0.2 % EA = {b['elastic_limit_N']:.3g} N"),
                         (t[~start][0] if np.any(~start) else t[-1], t[-1], f"m_c a W² = {b['constant_speed_N']:.3g} N")):
        ax.annotate(text, ((lo + hi) / 2, bound[np.searchsorted(t, (lo + hi) / 2).clip(0, t.size - 1)]),
                    xytext=(0, 4), textcoords="offset points", ha="center", va="bottom", fontsize="small")
    for k, (t0, t1) in enumerate(near):
        ax.axvspan(t0, t1, color="tab:orange", alpha=0.2, lw=0, label="near a singular configuration" if k == 0 else None)
    ax.set_yscale("log")
    ax.set_ylim(1e-2, 5 * bound.max())
    ax.set_xlabel("time t [s]")
    ax.set_ylabel("axial force [N]")
    ax.set_title("the loop's cut: the elastic coupler's axial force")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small", loc="center right")
    fig.tight_layout()
    fig.savefig(out_dir / "cut_force.png", dpi=120)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.plot(t, sigma, color="tab:green", label="σ_min of the rigid loop-closure Jacobian")
    ax.axhline(NEAR_SINGULAR * sigma.max(), color="0.5", ls=":", lw=1, label=f"{100 * NEAR_SINGULAR:g} % of its largest")
    for k, ps in enumerate(passages, start=1):
        i = ps["i"]
        ax.axvspan(t[ps["i0"]], t[ps["i1"]], color="tab:orange", alpha=0.2, lw=0)
        ax.plot(t[i], sigma[i], "o", color="tab:red", label="singular configuration" if k == 1 else None)
        ax.annotate(f"{k}: t = {t[i]:.3f} s\nθ = {theta[i]:.3f} rad\nσ_min = {sigma[i]:.1g}", (t[i], sigma[i]),
                    xytext=(12 if t[i] < (t[0] + t[-1]) / 2 else -100, 40), textcoords="offset points", fontsize="small",
                    arrowprops=dict(arrowstyle="->", lw=0.8))
    ax.set_xlabel("time t [s]")
    ax.set_ylabel("σ_min [m]")
    ax.set_ylim(0, 1.15 * sigma.max())
    ax.set_title("where the rigid mechanism is singular: σ_min = 0")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small", loc="upper left")
    fig.tight_layout()
    fig.savefig(out_dir / "sigma_min.png", dpi=120)
    plt.close(fig)
    return s


if __name__ == "__main__":  # standalone: the same as `flexmb run <this file> [options]`
    import sys

    from flexmb.app.cli import main

    sys.exit(main(["run", __file__, *sys.argv[1:]]))
