"""Zahariev & Cuadrado six-link mechanism (§4, Fig. 5, 7–10; cases/zahariev_six_link.py).

Checked independently of the case's own helpers (closure equations written here from the
model's assembly positions):
* every stated fact of the geometry: link lengths, the equilateral link 4, the initial angles,
  masses and sections, the two loops closed only through the beams of links 3 and 5;
* the initial configuration IS singular: the lines of links 2, 3 and 5 meet in one point, the
  2×2 rigid loop-closure Jacobian (w.r.t. link 2's and link 4's angles) has zero determinant,
  and flexmb.analysis.monitors' σ_min is zero there;
* the next singular configuration of the rigid mechanism is at t = 8 s: the loops close at
  t = 7.95 s and cannot close at 8.05 s (least squares from a grid of starts);
* a shortened run leaves the singular configuration (σ_min, concurrency gap grow), follows the
  rigid transfer functions, damping lowers the axial-force oscillation, the energy balance
  closes (damped) or only loses energy (undamped: numerical dissipation);
* the stop at the next singular configuration, on a twin with link 4 turned (θ4 = -2.316 rad)
  whose next singular configuration comes at t ≈ 1.01 s: the forces grow without bound there
  and the monitor ends the run with a status naming the configuration.
"""

import numpy as np
import pytest
from conftest import load_case
from scipy.optimize import least_squares

from flexmb.analysis.monitors import RigidClosure, SingularityMonitor
from flexmb.solvers.simulate import simulate

case = load_case("zahariev_six_link")
P = case.DEFAULTS
T_SHORT = 0.5


def pts(model):
    """Assembly points (2-D) read from the model's nodes."""
    n = P["n_elements"]
    X = np.asarray(model.X0)[:, :2]
    name = {"O1": "crank", "A": "link2", "B": "link4", "O3": "link3.0", "C": f"link3.{n}", "O5": "link5.0",
            "D": f"link5.{n}"}
    return {k: X[model.node_index(v)] for k, v in name.items()}


def cross2(a, b):
    return a[0] * b[1] - a[1] * b[0]


def rot(a):
    return np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])


def closure(g, q1, phi, psi):
    """Rigid loop closure: link 2 at angle phi, link 4 turned by psi from the start, crank at q1."""
    A = g["O1"] + np.linalg.norm(g["A"] - g["O1"]) * np.array([np.cos(q1), np.sin(q1)])
    B = A + np.linalg.norm(g["B"] - g["A"]) * np.array([np.cos(phi), np.sin(phi)])
    C, D = B + rot(psi) @ (g["C"] - g["B"]), B + rot(psi) @ (g["D"] - g["B"])
    return np.array([np.linalg.norm(C - g["O3"]) - 2.0, np.linalg.norm(D - g["O5"]) - 2.0]), (A, B, C, D)


def crank(t):
    return np.pi * np.cos(t / 4) if t <= 4 else np.pi * np.cos(1.0) - np.pi / 4 * np.sin(1.0) * (t - 4)


def closable(g, q1):
    """Smallest closure residual over a grid of starts (0 where the loops close)."""
    grid = np.linspace(-np.pi, np.pi, 7)[:-1]
    return min(np.abs(least_squares(lambda x: closure(g, q1, *x)[0], [a, b], xtol=1e-15, ftol=1e-15, gtol=1e-15).fun).max()
               for a in grid for b in grid)


def test_geometry_has_every_stated_fact():
    model = case.build()
    g = pts(model)
    L = lambda a, b: np.linalg.norm(g[b] - g[a])  # noqa: E731
    assert L("O1", "A") == pytest.approx(1.0) and L("A", "B") == pytest.approx(2.0)
    assert L("O3", "C") == pytest.approx(2.0) and L("O5", "D") == pytest.approx(2.0)
    for a, b in (("B", "C"), ("C", "D"), ("D", "B")):  # ternary link: equilateral, side 1
        assert L(a, b) == pytest.approx(1.0, abs=1e-12)
    ang = lambda a, b: np.arctan2(*(g[b] - g[a])[::-1])  # noqa: E731
    assert abs(np.angle(np.exp(1j * (ang("O1", "A") - np.pi)))) < 1e-12
    assert ang("O3", "C") == pytest.approx(-np.pi / 2, abs=1e-12)
    assert ang("O5", "D") == pytest.approx(5 * np.pi / 6, abs=1e-12)
    bodies = model.elements["body"]
    mass = dict(zip(bodies.names, bodies.mass))
    Jz = dict(zip(bodies.names, bodies.inertia[:, 2, 2]))
    assert (mass["crank"], mass["link2"], mass["link4"]) == (1.0, 2.0, 3.0)
    assert (Jz["crank"], Jz["link2"], Jz["link4"]) == (0.1, 0.2, 0.3)
    # the bodies' centres of mass: crank and link 2 midpoints, link 4 centroid
    com = {n: model.X0[bodies.node[i], :2] + bodies.com[i, :2] for i, n in enumerate(bodies.names)}
    np.testing.assert_allclose(com["link4"], (g["B"] + g["C"] + g["D"]) / 3, atol=1e-12)
    np.testing.assert_allclose(com["link2"], (g["A"] + g["B"]) / 2, atol=1e-12)
    # flexible links: 2 m of ρA = 1.2 kg/m, EA = 2.8e7 N, EIz = 1.4e4 N m²
    assert model.elements["beam"].mass.sum() == pytest.approx(2 * 3000 * 4e-4 * 2.0)
    n = P["n_elements"]
    Le = 2.0 / n
    assert model.elements["beam"].Kl[0, 0, 0] == pytest.approx(0.7e11 * 4e-4 / Le)
    # two loops, each closed only through a beam (link 3 or link 5)
    assert len(model.loops) == 2
    assert {lp.elements[0].split(".")[0] for lp in model.loops} == {"link3", "link5"}
    assert model.driven.tolist() == [model.coordinate_index("O1")]


def test_initial_configuration_is_singular():
    model = case.build()
    g = pts(model)
    # the lines of links 3 and 5 meet at P; P lies on the line of link 2
    d3, d5 = g["C"] - g["O3"], g["D"] - g["O5"]
    s = np.linalg.solve(np.column_stack([d3, -d5]), g["O5"] - g["O3"])
    Pm = g["O3"] + s[0] * d3
    d2 = g["B"] - g["A"]
    assert abs(cross2(d2, Pm - g["A"])) / np.linalg.norm(d2) < 1e-12
    # 2x2 closure Jacobian w.r.t. link 2's angle and link 4's rotation (crank held): singular
    perp = lambda v: np.array([-v[1], v[0]])  # noqa: E731
    dB = perp(g["B"] - g["A"])
    J = np.array([[(g["C"] - g["O3"]) @ dB, (g["C"] - g["O3"]) @ perp(g["C"] - g["B"])],
                  [(g["D"] - g["O5"]) @ dB, (g["D"] - g["O5"]) @ perp(g["D"] - g["B"])]])
    assert abs(np.linalg.det(J)) < 1e-12 * np.abs(J).max() ** 2
    # flexmb's rigid closure (links 3 and 5 as rigid two-force members) sees the same
    rc = RigidClosure(model)
    sv = rc.singular_values(model.initial_state())
    assert sv.size == 2 and sv[-1] < 1e-12 * sv[0]
    # and a turned link 4 (another configuration of the same links) is regular
    st = model.initial_state()
    st.q[model.u_to_q[model.coordinate_index("B")]] = 0.3
    assert rc.sigma_min(st) > 0.05


def test_next_rigid_singular_configuration_is_at_eight_seconds():
    g = pts(case.build())
    assert closable(g, crank(7.95)) < 1e-10
    assert closable(g, crank(8.05)) > 1e-4


@pytest.fixture(scope="module")
def short_runs():
    out = {}
    for alpha in (P["damping"], 0.0):
        model = case.build(damping=alpha)
        mon = SingularityMonitor(model)
        out[alpha] = (model, simulate(model, T_SHORT, P["dt"], rho_inf=P["rho_inf"], callback=mon), mon)
    return out


def test_run_leaves_the_singular_configuration_on_a_rigid_branch(short_runs):
    model, res, mon = short_runs[P["damping"]]
    assert res.status == "finished"
    sigma = np.array(mon.sigma)
    assert sigma[0] < 1e-4 and sigma[-1] > 0.1  # σ_min rises off zero
    g = pts(model)
    n = P["n_elements"]
    x = res.x[:, :, :2]
    X = {k: x[:, model.node_index(v)] for k, v in (("A", "link2"), ("B", "link4"), ("C", f"link3.{n}"),
                                                      ("D", f"link5.{n}"), ("O3", "link3.0"), ("O5", "link5.0"))}
    # the lines no longer meet: distance from line 2 to the crossing of lines 3 and 5
    d3, d5, d2 = X["C"][-1] - X["O3"][-1], X["D"][-1] - X["O5"][-1], X["B"][-1] - X["A"][-1]
    s = np.linalg.solve(np.column_stack([d3, -d5]), X["O5"][-1] - X["O3"][-1])
    Pm = X["O3"][-1] + s[0] * d3
    assert abs(cross2(d2, Pm - X["A"][-1])) / np.linalg.norm(d2) > 0.1
    # q3, q5 are the rigid mechanism's (transfer functions of q1), once the start transient is over
    for i in np.flatnonzero(res.t > 0.3)[::50]:
        phi = np.arctan2(*(X["B"][i] - X["A"][i])[::-1])
        psi = np.arctan2(*(X["C"][i] - X["B"][i])[::-1]) - np.arctan2(*(g["C"] - g["B"])[::-1])
        sol = least_squares(lambda v, i=i: closure(g, crank(res.t[i]), *v)[0], [phi, psi], xtol=1e-15, ftol=1e-15,
                            gtol=1e-15)
        assert np.abs(sol.fun).max() < 1e-10
        _, (_, _, C, D) = closure(g, crank(res.t[i]), *sol.x)
        q3 = np.arctan2(*(C - g["O3"])[::-1])
        q5 = np.arctan2(*(D - g["O5"])[::-1])
        assert abs(np.arctan2(*(X["C"][i] - X["O3"][i])[::-1]) - q3) < 1e-4
        assert abs(np.arctan2(*(X["D"][i] - X["O5"][i])[::-1]) - q5) < 1e-4
    assert np.arctan2(*(X["C"][-1] - X["O3"][-1])[::-1]) < -np.pi / 2 - 0.01  # link 3 has turned


def test_damping_lowers_the_axial_force_oscillation_and_energy_balances(short_runs):
    m_d, damped, _ = short_runs[P["damping"]]
    m_u, undamped, _ = short_runs[0.0]
    late = damped.t > 0.35  # after the start transient
    Fd = case.axial_forces(m_d, damped)["link3"][late]
    Fu = case.axial_forces(m_u, undamped)["link3"][late]
    assert np.ptp(Fu) > 30 * np.ptp(Fd)
    assert np.abs(Fu).max() > 1e3 > 10 * np.abs(Fd).max()  # kN oscillation (Fig. 9) vs admissible (Fig. 10)
    # energy: T + U + D - W constant with damping (the beams' dissipation is counted; what is left
    # is the integrator's numerical dissipation in the start transient, < 1 % of the drive work) ...
    E, W = damped.total_energy, damped.energy["drive_work"]
    assert damped.energy["dissipated"][-1] > 0.5 * np.abs(W).max() > 0.5
    assert np.abs(E - E[0]).max() < 0.01 * np.abs(W).max()
    # ... and without it the integrator only removes energy (numerical dissipation, ρ∞ < 1)
    Eu = undamped.total_energy
    assert (Eu - Eu[0]).max() < 1e-6 * np.abs(undamped.energy["drive_work"]).max()


def test_stops_with_a_report_at_the_next_singular_configuration():
    """Twin geometry (link 4 turned to θ4 = -2.316 rad; the lines still meet at the start): its
    next singular configuration comes after ~0.1 rad of crank motion, at t ≈ 1.01 s."""
    p = {**P, "theta4": -2.316, "yield_strain": 5e-4}
    model = case.build(**p)
    g = pts(model)
    # where the rigid loops stop closing, computed here: follow the rigid configuration from the
    # start (warm-started least squares in time steps of 0.01 s), then bisect
    def solve(t, x0):
        r = least_squares(lambda v: closure(g, crank(t), *v)[0], x0, xtol=1e-15, ftol=1e-15, gtol=1e-15)
        return np.abs(r.fun).max() < 1e-10, r.x

    x = np.array([np.arctan2(*(g["B"] - g["A"])[::-1]), 0.0])
    a = 0.0
    while True:
        ok, xn = solve(a + 0.01, x)
        if not ok:
            break
        a, x = a + 0.01, xn
    b = a + 0.01
    while b - a > 1e-4:
        mid = 0.5 * (a + b)
        ok, xn = solve(mid, x)
        a, b, x = (mid, b, xn) if ok else (a, mid, x)
    t_fold = 0.5 * (a + b)
    assert 0.9 < t_fold < 1.1
    mon = case.monitor(model, p)
    res = simulate(model, 1.5, 2e-3, rho_inf=P["rho_inf"], callback=mon)
    assert res.status.startswith("stopped:") and "lines of links 2, 3 and 5 meet" in res.status
    assert t_fold < res.t[-1] < t_fold + 0.3
    t_sing, s_sing = mon.next_singular()
    assert abs(t_sing - t_fold) < 0.05 and s_sing < 0.05 * max(mon.sigma)
    F = np.abs(res.element_forces[:, :, 0]).max(axis=1)
    limit = case.force_limit(p)
    assert F[-1] > limit  # the stop: the stiff forces passed the elastic limit ...
    before = (res.t > 0.5) & (res.t < t_fold - 0.1)
    assert F[-1] > 20 * F[before].max()  # ... growing from small values as the crank drives on


def test_the_crank_rates_are_the_derivatives_of_the_crank_angle():
    """The drive's given velocity and acceleration (case.crank_rates) against central differences of
    the angle on both branches (cosine start up to T, constant speed after), and continuous velocity at T."""
    p = {**case.DEFAULTS}
    q, (v, a) = case.crank_angle(p), case.crank_rates(p)
    T = p["T_drive"]
    h = 1e-4
    for t in (0.0, 0.3 * T, 0.9 * T, 1.2 * T, 1.5 * T + 2.0):
        dq = (q(t + h) - q(t - h)) / (2 * h)
        ddq = (q(t + h) - 2 * q(t) + q(t - h)) / h**2
        assert v(t) == pytest.approx(dq, rel=1e-6, abs=1e-9)
        assert a(t) == pytest.approx(ddq, rel=1e-4, abs=1e-6)
    assert v(T) == pytest.approx(v(T * (1 + 1e-12)), rel=1e-9)
    assert a(0.5 * T) != 0.0 and a(2.0 * T) == 0.0
