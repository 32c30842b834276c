"""cases/quarter_car.py (issue 34 item 8): the quarter-car double wishbone over a road bump.

(a) The case runs from the CLI (shortened to the bump and what follows) with its postprocess: the
    run directory holds the ParaView files, the plots, the animation and a summary whose checks
    hold: no motion before the bump (the case starts in its static equilibrium), the energy
    balance closed to (ω_hop h)² of the energy moved (the error scale of a second-order step at the
    fastest mode the bump excites, the wheel hop).
(b) At a small bump the wheel travel and the damper force agree with a **linearised 2-DOF
    quarter car** built here independently of the case's code, from its hard points and numbers:
    coordinates q = (z_s, θ), the chassis heave and the lower arm's angle; the linkage solved here by
    root finding (the case uses circle intersections); the mass matrix from the bodies' velocity
    Jacobians (finite differences of the linkage: chassis, arms as uniform rods, upright), so the
    arms' inertia is in it; the stiffness the Hessian of the potential (gravity, spring, tyre) with
    the preloads that make the design position an equilibrium (solved here from ∇V = 0), which holds
    the wheel rate k_spring · MR² (MR, the motion ratio, by finite differences of the linkage) plus
    the preloads' geometric stiffness; the damping c_damper ∇l ∇lᵀ + c_tyre ∇ℓ ∇ℓᵀ (the damper's
    slope at rest). The tie rod is left out: its line passes through the arms' instant centre, so
    its length does not change to first order. The ODE is integrated by scipy (DOP853, rtol 1e-10).
    The tolerance is the sum of what the linear model leaves out, each taken from the run itself:
    the damper's nonlinearity r · max|l'| / v_r, the linkage's (|second derivative| / |first|
    times the largest arm turn) and the step's phase error (ω_hop h)² ω_hop t / 12, times the
    quantity's peak. The arms' inertia is in the 2-DOF mass matrix (left out, it would be an error
    of its share of the unsprung mass, about 2 of 37 kg, printed). Measured (bump 0.2 mm, dt 0.5 ms,
    wheel travel peak 0.19 mm, damper force peak 24 N): with the case's 3:1 damper the relative
    errors are 2.0e-2 (travel) and 2.1e-2 (damper force) against a tolerance of 3.6e-2, 3.0e-2 of it the
    damper's asymmetry; with a linear damper 1.2e-4 and 2.0e-4 against 6.1e-3 (falling as h²:
    4.8e-4, 1.2e-4, 3.7e-5 at dt = 1, 0.5, 0.25 ms), so the 2-DOF model and the multibody model agree
    to the step's error.
(c) The textbook 2-DOF quarter car (sprung and unsprung masses, wheel rate k_spring MR², wheel
    damping c_damper MR², tyre rate) against the same run with a linear damper: it leaves out the
    arms' inertia and the preloads' geometric stiffness, and agrees within their relative sizes.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import CASES, load_case
from scipy.integrate import solve_ivp
from scipy.optimize import brentq

from flexmb.app.cli import main
from flexmb.app.cli_common import EXIT_OK
from flexmb.errors import ModelError
from flexmb.solvers.simulate import simulate

case = load_case("quarter_car")
P = case.DEFAULTS
DT_TEST = 5e-4


# ----------------------------------------------------------------------------- (a) the CLI run
def test_case_runs_from_the_cli_with_its_checks(tmp_path):
    out = tmp_path / "qc"
    assert main(["run", str(CASES / "quarter_car.py"), "--t-end", "0.35", "--out", str(out), "-q"]) == EXIT_OK
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "finished"
    for f in ("paraview/quarter_car.pvd", "quarter_car.png", "animation.gif", "energy.png"):
        assert (out / f).exists(), f
    assert summary["still_before_bump_m"] < 1e-9  # the static start: 1e-9 of the 0.04 m bump would be visible
    w_hop = np.sqrt((P["k_tyre"] + summary["wheel_rate_N_per_m"]) / P["m_upright"])
    assert summary["energy_balance_relative"] < (w_hop * P["dt"]) ** 2
    assert 0.5 < summary["motion_ratio"] < 0.9 and summary["wheel_travel_max_mm"] > 20
    assert summary["damper_force_rebound_max_N"] > summary["damper_force_bump_max_N"] > 0  # the 3:1 characteristic


def test_bad_parameters_are_refused_by_name():
    with pytest.raises(ModelError, match=r"k_spring = -1.0 must be positive"):
        case.build(k_spring=-1.0)
    with pytest.raises(ModelError, match=r"damper_asymmetry = 1.5 must be in \[0, 1\)"):
        case.build(damper_asymmetry=1.5)


# ----------------------------------------------------------------------------- (b) the 2-DOF model
def _rot(phi: float) -> np.ndarray:
    c, s = np.cos(phi), np.sin(phi)
    return np.array([[c, -s], [s, c]])


def _angle(v: np.ndarray) -> float:
    return float(np.arctan2(v[1], v[0]))


def solve_linkage(theta: float) -> dict:
    """Lower arm turned by θ about x (chassis fixed): the upper arm's angle ψ by root finding on
    the upright's ball-to-ball distance, then the upright's points and rotation φ."""
    bl = case.PIVOT_LOWER + _rot(theta) @ (case.BALL_LOWER - case.PIVOT_LOWER)
    d = np.linalg.norm(case.BALL_UPPER - case.BALL_LOWER)
    psi = brentq(lambda s: np.linalg.norm(case.PIVOT_UPPER + _rot(s) @ (case.BALL_UPPER - case.PIVOT_UPPER) - bl) - d,
                 -0.2, 0.2, xtol=1e-15)
    bu = case.PIVOT_UPPER + _rot(psi) @ (case.BALL_UPPER - case.PIVOT_UPPER)
    phi = _angle(bu - bl) - _angle(case.BALL_UPPER - case.BALL_LOWER)
    return dict(theta=theta, psi=psi, phi=phi, ball_lower=bl, ball_upper=bu,
                wheel=bl + _rot(phi) @ (case.WHEEL - case.BALL_LOWER),
                spring=np.linalg.norm(case.SPRING_UPPER - case.PIVOT_LOWER
                                      - _rot(theta) @ (case.SPRING_LOWER - case.PIVOT_LOWER)))


def bodies(q: np.ndarray) -> list[tuple[float, float, np.ndarray, float]]:
    """(mass, inertia about x, centre of mass (y, z), angle about x) of each body at q = (z_s, θ)."""
    z = np.array([0.0, q[0]])
    k = solve_linkage(q[1])
    rod = [(P["m_lower_arm"], case.PIVOT_LOWER, k["ball_lower"], k["theta"]),
           (P["m_upper_arm"], case.PIVOT_UPPER, k["ball_upper"], k["psi"])]
    out = [(P["m_sprung"], 0.0, case.CHASSIS + z, 0.0), (P["m_upright"], 0.8, k["wheel"] + z, k["phi"])]
    out += [(m, m * np.sum((b - a) ** 2) / 12, 0.5 * (a + b) + z, ang) for m, a, b, ang in rod]
    return out


def tyre_length(q: np.ndarray) -> float:
    return float(np.linalg.norm(solve_linkage(q[1])["wheel"] + [0.0, q[0]] - [case.WHEEL[0], 0.0]))


def _grad(f, q: np.ndarray, h: float = 1e-6) -> np.ndarray:
    e = np.eye(len(q)) * h
    return np.array([(f(q + e[i]) - f(q - e[i])) / (2 * h) for i in range(len(q))])


def two_dof_model() -> dict:
    """M, C, K of the linearised quarter car at the design position, the tyre's and spring's
    gradients, and the preload tensions that hold it (module docstring (b))."""
    q0, g = np.zeros(2), P["g"]
    h = 1e-6
    M = np.zeros((2, 2))
    b0 = bodies(q0)
    plus, minus = [bodies(q0 + [0, h]), bodies(q0 - [0, h])]
    for i, (m, inertia, _, _) in enumerate(b0):
        Jp = np.column_stack([[0.0, 1.0], (plus[i][2] - minus[i][2]) / (2 * h)])
        Jr = np.array([0.0, (plus[i][3] - minus[i][3]) / (2 * h)])
        M += m * Jp.T @ Jp + inertia * np.outer(Jr, Jr)
    gravity = lambda q: g * sum(m * c[1] for m, _, c, _ in bodies(q))  # noqa: E731
    spring = lambda q: solve_linkage(q[1])["spring"]  # noqa: E731
    dV, dl, dt_ = _grad(gravity, q0), _grad(spring, q0), _grad(tyre_length, q0)
    # ∇V = ∇V_gravity + F_spring ∇l + F_tyre ∇ℓ = 0 (tensions F, negative: both push)
    F_spring, F_tyre = np.linalg.solve(np.column_stack([dl, dt_]), -dV)
    L_spring = spring(q0) - F_spring / P["k_spring"]
    L_tyre = tyre_length(q0) - F_tyre / P["k_tyre"]

    def V(q):
        return gravity(q) + 0.5 * P["k_spring"] * (spring(q) - L_spring) ** 2 + 0.5 * P["k_tyre"] * (tyre_length(q) - L_tyre) ** 2

    hk = 1e-4
    E = np.eye(2) * hk
    K = np.array([[(V(E[i] + E[j]) - V(E[i] - E[j]) - V(-E[i] + E[j]) + V(-E[i] - E[j])) / (4 * hk**2) for j in range(2)]
                  for i in range(2)])
    C = P["c_damper"] * np.outer(dl, dl) + P["c_tyre"] * np.outer(dt_, dt_)
    dwheel = (solve_linkage(h)["wheel"][1] - solve_linkage(-h)["wheel"][1]) / (2 * h)
    curv = max(abs((f(1e-3) - 2 * f(0.0) + f(-1e-3)) / 1e-6 / ((f(1e-3) - f(-1e-3)) / 2e-3))
               for f in (lambda t: solve_linkage(t)["spring"], lambda t: solve_linkage(t)["wheel"][1]))
    return dict(M=M, C=C, K=K, dl=dl, dtyre=dt_, F_spring=F_spring, F_tyre=F_tyre, dwheel=dwheel, curvature=curv,
                motion_ratio=-dl[1] / dwheel, gradient=_grad(V, q0))


def road(t: float, h: float) -> tuple[float, float]:
    """Cosine bump of height h and length bump_length met at speed from bump_start."""
    s = (t - P["bump_start"]) * P["speed"] / P["bump_length"]
    if not 0 < s < 1:
        return 0.0, 0.0
    return 0.5 * h * (1 - np.cos(2 * np.pi * s)), 0.5 * h * 2 * np.pi * P["speed"] / P["bump_length"] * np.sin(2 * np.pi * s)


@pytest.fixture(scope="module")
def model2():
    return two_dof_model()


def test_the_case_starts_in_the_equilibrium_found_here(model2):
    # the case's preloads (virtual work over its own linkage) against ∇V = 0 here: a compression
    # spring (tension < 0) and the tyre carrying the whole weight
    spring, tyre = case.static_preloads(P)
    assert -model2["F_spring"] == pytest.approx(spring, rel=1e-6)
    assert -model2["F_tyre"] == pytest.approx(tyre, rel=1e-9)
    assert model2["motion_ratio"] == pytest.approx(case.motion_ratio(), rel=1e-6)
    # the wheel rate k MR² and the full stiffness about the wheel travel differ by the preloads'
    # geometric stiffness: printed, as the linear model below uses the full Hessian
    K, dw = model2["K"], model2["dwheel"]
    k_wheel = (K[1, 1] - P["k_tyre"] * model2["dtyre"][1] ** 2) / dw**2
    print(f"motion ratio {model2['motion_ratio']:.4f}; wheel rate k MR² = {P['k_spring'] * model2['motion_ratio'] ** 2:.0f} N/m, "
          f"with the preloads' geometric stiffness and the tyre taken out: {k_wheel:.0f} N/m; "
          f"unsprung mass at the wheel centre M_θθ / (dz_w/dθ)² = {model2['M'][1, 1] / dw**2:.2f} kg "
          f"(upright {P['m_upright']:.0f} kg, the rest the arms' inertia)")
    # the arms' share of the unsprung mass is what a 2-DOF model without them would miss: of the
    # order of their masses (a rod turning about one end moves a third of its mass with its tip)
    arms = model2["M"][1, 1] / dw**2 - P["m_upright"]
    assert 0.1 * (P["m_lower_arm"] + P["m_upper_arm"]) < arms < P["m_lower_arm"] + P["m_upper_arm"]


H_BUMP, T_END = 2e-4, 0.6
_RUNS: dict = {}


def small_bump_run(asymmetry: float):
    """The case over a 0.2 mm bump (once per damper asymmetry)."""
    if asymmetry not in _RUNS:
        _RUNS[asymmetry] = simulate(case.build(bump_height=H_BUMP, damper_asymmetry=asymmetry), T_END, DT_TEST,
                                    rho_inf=P["rho_inf"])
    assert _RUNS[asymmetry].status == "finished"
    return _RUNS[asymmetry]


def integrate(rhs, t: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """The linear ODE y' = rhs(t, y) from rest, by scipy (DOP853, rtol 1e-10), at the times ``t``;
    piecewise, as the bump's acceleration jumps at its ends."""
    kinks = [0.0, P["bump_start"], P["bump_start"] + P["bump_length"] / P["speed"], t[-1]]
    y, pieces = np.zeros(4), []
    for t0, t1 in zip(kinks[:-1], kinks[1:]):
        sol = solve_ivp(rhs, (t0, t1), y, method="DOP853", dense_output=True, rtol=1e-10, atol=1e-14 * scale)
        pieces.append(sol.sol)
        y = sol.y[:, -1]
    which = np.clip(np.searchsorted(kinks, t, side="right") - 1, 0, len(pieces) - 1)
    return np.array([pieces[k](ti) for k, ti in zip(which, t)])


@pytest.mark.parametrize("asymmetry", [P["damper_asymmetry"], 0.0])
def test_small_bump_agrees_with_the_linear_two_dof_model(model2, asymmetry):
    """With the case's damper (its asymmetry then dominates the tolerance) and with a linear one."""
    h_bump, t_end, dt = H_BUMP, T_END, DT_TEST
    res = small_bump_run(asymmetry)
    M, C, K, gt = model2["M"], model2["C"], model2["K"], model2["dtyre"]
    Minv = np.linalg.inv(M)

    def rhs(t, y):
        zr, zr_dot = road(t, h_bump)
        f = (P["k_tyre"] * zr + P["c_tyre"] * zr_dot) * gt - C @ y[2:] - K @ y[:2]
        return np.concatenate([y[2:], Minv @ f])

    y_lin = integrate(rhs, res.t, np.array([1, 1, 1e2, 1e2]))
    travel_lin = model2["dwheel"] * y_lin[:, 1]
    damper_lin = P["c_damper"] * (y_lin[:, 2:] @ model2["dl"])
    travel, damper = case.wheel_travel(res), res.history("damper.force")
    assert np.array_equal(res.history("upper_ball.fz"), res.cut_force("upper_ball")[:, 2])  # the ball's load by name

    # what the linear model leaves out, each from the run itself
    r, v_r = asymmetry, P["damper_knee"]
    e_damper = r * np.abs(res.history("damper.rate")).max() / v_r
    e_geometry = model2["curvature"] * np.abs(res.coordinate("lower_pivot")).max()
    w_hop = np.sqrt(np.linalg.eigvals(Minv @ K).real.max())
    e_time = (w_hop * dt) ** 2 * w_hop * t_end / 12
    tol = e_damper + e_geometry + e_time
    err_travel = np.abs(travel - travel_lin).max() / np.abs(travel_lin).max()
    err_damper = np.abs(damper - damper_lin).max() / np.abs(damper_lin).max()
    print(f"wheel travel peak {1e3 * np.abs(travel_lin).max():.4f} mm, damper force peak {np.abs(damper_lin).max():.2f} N; "
          f"relative errors: travel {err_travel:.2e}, damper {err_damper:.2e}; tolerance {tol:.2e} = damper "
          f"{e_damper:.1e} + geometry {e_geometry:.1e} + step {e_time:.1e}; hop {w_hop / 2 / np.pi:.2f} Hz")
    assert err_travel < tol
    assert err_damper < tol
    # and the response is a real one: the wheel moved by a fair part of the bump
    assert np.abs(travel_lin).max() > 0.3 * h_bump


def test_textbook_two_dof_quarter_car(model2):
    """The textbook quarter car in (z_s, z_u): sprung mass m_sprung, unsprung m_upright, wheel rate
    k_spring MR², wheel damping c_damper MR², the tyre; against the case with a linear damper. It
    leaves out the arms' inertia and the preloads' geometric stiffness, which the model of (b) has:
    the tolerance is their relative sizes, read from that model's M and K in (z_s, z_u), plus the
    linkage's and the step's errors as above. Measured: 3.0e-2 (travel), 4.5e-2 (damper force)
    against 8.2e-2, 7.2e-2 of it the masses (the arms' share of the unsprung mass alone 5.8e-2)."""
    res = small_bump_run(0.0)
    mr = model2["motion_ratio"]
    ms, mu, kw, cw = P["m_sprung"], P["m_upright"], P["k_spring"] * mr**2, P["c_damper"] * mr**2

    def rhs(t, y):
        zr, zr_dot = road(t, H_BUMP)
        f = kw * (y[1] - y[0]) + cw * (y[3] - y[2])  # the coil-over's push on the chassis, at the wheel
        return [y[2], y[3], f / ms, (-f - P["k_tyre"] * (y[1] - zr) - P["c_tyre"] * (y[3] - zr_dot)) / mu]

    y = integrate(rhs, res.t, np.ones(4))
    travel_tb, damper_tb = y[:, 1] - y[:, 0], -P["c_damper"] * mr * (y[:, 3] - y[:, 2])  # l' = -MR (z_u' - z_s')
    dw = model2["dwheel"]
    T = np.array([[1.0, 0.0], [-1 / dw, 1 / dw]])  # (z_s, θ) from (z_s, z_u)
    M, K = T.T @ model2["M"] @ T, T.T @ model2["K"] @ T
    e_mass = (abs(M[0, 0] - ms) / ms + abs(M[1, 1] - mu) / mu + abs(M[0, 1]) / np.sqrt(ms * mu))
    e_stiffness = abs(-K[0, 1] - kw) / kw
    w_hop = np.sqrt((P["k_tyre"] + kw) / mu)
    e_time = (w_hop * DT_TEST) ** 2 * w_hop * T_END / 12
    e_geometry = model2["curvature"] * np.abs(res.coordinate("lower_pivot")).max()
    tol = e_mass + e_stiffness + e_time + e_geometry
    err_travel = np.abs(case.wheel_travel(res) - travel_tb).max() / np.abs(travel_tb).max()
    err_damper = np.abs(res.history("damper.force") - damper_tb).max() / np.abs(damper_tb).max()
    print(f"textbook 2-DOF: relative errors travel {err_travel:.2e}, damper {err_damper:.2e}; tolerance {tol:.2e} = "
          f"masses {e_mass:.1e} + preloads' stiffness {e_stiffness:.1e} + step {e_time:.1e} + geometry {e_geometry:.1e}")
    assert err_travel < tol
    assert err_damper < tol
