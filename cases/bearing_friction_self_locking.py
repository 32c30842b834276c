"""Slider-crank near its dead centre pushed through the connecting rod: self-locks with bearing friction, moves without.

Source: Zahariev & Cuadrado (2011), §1 and §5 (friction in the bearings, self-locking
configurations; the
paper gives no example numbers, so the mechanism and its numbers are ours).

Mechanism (horizontal plane, gravity off). Crank O–A of length ``a`` pinned to ground at the
origin, connecting rod A–B of length ``b``, slider B on the x-axis (an in-line slider-crank).
The crank starts at rest at ``theta0_deg`` above the outer dead centre (θ = 0: crank and rod
collinear along +x, the singular configuration where a force on the slider gives no torque on
the crank). A constant force ``P`` pushes the slider towards O. Pins O, A, B have Coulomb
friction (flexmb.engine.friction: torque μ r |F_⊥| tanh(ω/ω_ε), F_⊥ the pin's reaction force, implicit
in the accelerations) with coefficient ``mu`` and pin radius ``pin_radius`` (friction circles of
radius ρ = μ r).

Self-locking (friction-circle construction). With the crank about to turn forwards (θ growing)
the rod turns backwards relative to the crank and to the slider, so the friction couples on the
rod at A and B add up: the rod force's line of action is turned from the centre line B → A by
δ = asin((ρ_A + ρ_B)/b) (tangent to both friction circles). The crank turns only if that force
has a moment about O larger than the friction couples at O and A: (A × n)_z > ρ_O + ρ_A, n the
turned direction; otherwise the mechanism locks for any P — the line of action passes inside
the friction circles. Near the dead centre the moment arm is ~ a θ (a + b)/b, so it locks below
θ* ≈ 4.6° with the defaults (:func:`locking_angle`) and moves above; without friction it moves
for any θ > 0. The pin reactions are large there (the transmission angle is poor): F ≈ P.

flexmb model. Tree ground → crank (O) → rod (A) → slider (B); the slider's guide closes the loop:
a stiff bushing ground–slider, free along x (``k_guide`` on the other five directions). The force
is a nodal load on the slider. Postprocess: the twin run (without friction if this has friction,
else with it), crank angle and pin friction torques over time, the summary with θ*, the
friction-circle numbers and how far each run turned.

Run:  flexmb run cases/bearing_friction_self_locking.py [--param theta0_deg=6]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import flexmb as fm

DEFAULTS = dict(
    a=0.1, b=0.3, m_crank=0.5, J_flywheel=0.05, m_rod=0.5, m_slider=1.0, P=20.0, theta0_deg=3.0,
    mu=0.2, pin_radius=0.02, omega_eps=1e-3, friction=True, k_guide=1e7,
    t_end=1.0, dt=1e-3, rho_inf=0.9, output_every=1,
)

PINS = ("O", "A", "B")


def points(p: dict) -> dict[str, np.ndarray]:
    """O, A, B (3-D) of the start configuration."""
    th = np.radians(p["theta0_deg"])
    A = p["a"] * np.array([np.cos(th), np.sin(th), 0.0])
    B = np.array([A[0] + np.sqrt(p["b"] ** 2 - A[1] ** 2), 0.0, 0.0])
    return dict(O=np.zeros(3), A=A, B=B)


def build(**params) -> fm.Model:
    """The slider-crank at rest at θ0, force P on the slider; pin friction if ``friction``."""
    p = {**DEFAULTS, **params}
    g = points(p)
    z = (0.0, 0.0, 1.0)
    rod = lambda m, L: np.diag([0.0, m * L * L / 12, m * L * L / 12])  # noqa: E731 (axis-free: only Izz matters)
    mb = fm.ModelBuilder()
    mb.add_node("crank", g["O"])
    mb.add_body("crank", "crank", p["m_crank"], g["A"] / 2, rod(p["m_crank"], p["a"]))
    mb.add_body("flywheel", "crank", 1.0, (0.0, 0.0, 0.0), np.diag([0.5, 0.5, 1.0]) * p["J_flywheel"])
    mb.add_node("rod", g["A"])
    mb.add_body("rod", "rod", p["m_rod"], (g["B"] - g["A"]) / 2, rod(p["m_rod"], p["b"]))
    mb.add_node("slider", g["B"])
    mb.add_body("slider", "slider", p["m_slider"], (0.0, 0.0, 0.0), np.eye(3) * 1e-3)
    mb.add_joint("O", "revolute", "ground", "crank", point=g["O"], axis=z)
    mb.add_joint("A", "revolute", "crank", "rod", point=g["A"], axis=z)
    mb.add_joint("B", "revolute", "rod", "slider", point=g["B"], axis=z)
    k = p["k_guide"]
    mb.add_bushing("guide", "ground", "slider", stiffness=[0.0, k, k, k, k, k], damping=[0.0] + [1e-3 * k] * 5,
                   point=g["B"])
    mb.add_load("P", "slider", force=(-p["P"], 0.0, 0.0))
    if p["friction"]:
        for pin in PINS:
            mb.add_joint_friction(pin, p["mu"], p["pin_radius"], omega_eps=p["omega_eps"])
    return mb.compile()


def friction_circle_margin(theta: float, p: dict) -> float:
    """(A × n)_z - (ρ_O + ρ_A) [m] at crank angle θ (module docstring): > 0 moves, < 0 locks."""
    a, b = p["a"], p["b"]
    rho = p["mu"] * p["pin_radius"]
    A = a * np.array([np.cos(theta), np.sin(theta)])
    B = np.array([A[0] + np.sqrt(b * b - A[1] ** 2), 0.0])
    e = (A - B) / b
    d = np.arcsin(2 * rho / b)
    n = np.array([np.cos(d) * e[0] - np.sin(d) * e[1], np.sin(d) * e[0] + np.cos(d) * e[1]])
    return float(A[0] * n[1] - A[1] * n[0] - 2 * rho)


def locking_angle(p: dict) -> float:
    """θ* [rad]: the crank angle below which the pushed mechanism locks (root of the margin)."""
    from scipy.optimize import brentq

    return float(brentq(friction_circle_margin, 1e-9, 0.5, args=(p,), xtol=1e-14))


def companions(params: dict) -> dict[str, dict]:
    """The twin run with friction switched (flexmb starts it on a spare core while this run runs)."""
    return {"twin": {"friction": not {**DEFAULTS, **params}["friction"]}}


def postprocess(result, model: fm.Model, params: dict, out_dir: Path, companions: dict | None = None) -> dict:
    """Twin run with/without friction (from ``companions`` when flexmb ran it, else run here);
    crank angle and friction torques; summary vs the hand rule."""
    from flexmb.results.plots import plt
    from flexmb.solvers.simulate import simulate

    p = {**DEFAULTS, **params}
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if companions and "twin" in companions:
        twin_m, twin_r = companions["twin"].model, companions["twin"].result
    else:
        twin_m = build(**{**p, "friction": not p["friction"]})
        twin_r = simulate(twin_m, p["t_end"], p["dt"], rho_inf=p["rho_inf"], output_every=p["output_every"])
    runs = {("with friction" if p["friction"] else "no friction"): result,
            ("no friction" if p["friction"] else "with friction"): twin_r}
    th_star = locking_angle(p)
    th0 = np.radians(p["theta0_deg"])
    summary: dict = {"locking_angle_deg": float(np.degrees(th_star)),
                     "theta0_deg": p["theta0_deg"],
                     "friction_circle_margin_at_theta0_mm": 1e3 * friction_circle_margin(th0, p),
                     "prediction_with_friction": "locks" if th0 < th_star else "moves"}
    fig, ax = plt.subplots(2, 1, figsize=(8, 6.5), sharex=True)
    for label, r in runs.items():
        turn = r.coordinate("O.q")
        ax[0].plot(r.t, np.degrees(turn), label=label)
        key = label.replace(" ", "_")
        summary[f"{key}.status"] = r.status
        summary[f"{key}.crank_turn_deg"] = float(np.degrees(turn[-1]))
        summary[f"{key}.energy_balance_drift_J"] = float(np.abs(r.total_energy - r.total_energy[0]).max())
        summary[f"{key}.dissipated_J"] = float(r.energy["dissipated"][-1])
        summary[f"{key}.load_work_J"] = float(r.energy["load_work"][-1])
        summary[f"{key}.pin_O_reaction_N"] = float(np.linalg.norm(r.reaction("O")[-1, :2]))
    fr = runs["with friction"]
    for pin in PINS:
        ax[1].plot(fr.t, fr.reaction(pin)[:, 5], label=f"pin {pin}")
    ax[0].set_ylabel("crank turn θ - θ0 [deg]")
    ax[0].set_title(f"slider-crank pushed at θ0 = {p['theta0_deg']:g}° (locking angle θ* = {np.degrees(th_star):.2f}°)")
    ax[0].legend()
    ax[1].set_ylabel("friction torque = axial\nreaction moment [N m]")
    ax[1].set_xlabel("t [s]")
    ax[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out_dir / "self_locking.png", dpi=120)
    plt.close(fig)
    locked = abs(fr.u[-1, 0]) < 10 * p["omega_eps"]  # only the regularisation's creep (flexmb/engine/friction.py)
    summary["with_friction.final_crank_speed_rad_s"] = float(fr.u[-1, 0])
    summary["outcome_with_friction"] = "locked" if locked else "moved"
    summary["vs_paper"] = (
        "Zahariev & Cuadrado (§1, §5) take bearing friction into account for self-locking configurations but give no "
        f"example numbers. Here the friction-circle rule predicts the mechanism {summary['prediction_with_friction']} "
        f"at θ0 = {p['theta0_deg']:g}° (θ* = {np.degrees(th_star):.2f}°); the run with friction "
        f"{'locked' if locked else 'moved'} (crank turned {summary['with_friction.crank_turn_deg']:.3g}° in "
        f"{p['t_end']:g} s), the run without friction turned {summary['no_friction.crank_turn_deg']:.3g}°."
    )
    return summary


if __name__ == "__main__":  # standalone: the same as `flexmb run <this file> [options]`
    import sys

    from flexmb.app.cli import main

    sys.exit(main(["run", __file__, *sys.argv[1:]]))
