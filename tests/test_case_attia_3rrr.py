"""Attia's 3-RRR platform (cases/attia_3rrr.py), shortened: the particle model with elastic
cuts converges to the rigid mechanism as the cut stiffness grows, and keeps its energy
balance.

The rigid reference is written here, independently of flexmb: Attia's closed-chain equations
(eq. 6.8) in his seven relative angles θ = [θ1, θ2,1, θ3,2, θ4,3, θ5,4, θ6,3, θ7,6], with
ordinary rigid bodies (mass and polar moment, no particles), cut-joint constraints
r_7 = c_1, r_9 = c_2 (Baumgarte-stabilised), integrated by scipy's DOP853 at 1e-11."""

import numpy as np
from conftest import load_case
from scipy.integrate import solve_ivp

from flexmb.solvers.simulate import simulate

case = load_case("attia_3rrr")


def rigid_platform_centre(p: dict, times: np.ndarray) -> np.ndarray:
    """Platform-centre trajectory of the rigid 3-RRR (Attia eq. 6.8), relative angles."""
    X = {k: v[:2] for k, v in case.geometry(p).items()}
    # every point is P1 plus a sum of vectors fixed in bodies; body angles are sums of θ's
    path = {"rod1": [0], "rod2": [0, 1], "plat": [0, 1, 2], "rod4": [0, 1, 2, 3], "rod5": [0, 1, 2, 3, 4],
            "rod6": [0, 1, 2, 5], "rod7": [0, 1, 2, 5, 6]}
    A = {b: np.isin(np.arange(7), idx).astype(float) for b, idx in path.items()}

    def vec(a, b):
        return X[b] - X[a]

    legA = [("rod1", vec("1", "2")), ("rod2", vec("2", "3"))]
    pts = {"G1": [("rod1", vec("1", "2") / 2)], "G2": legA[:1] + [("rod2", vec("2", "3") / 2)],
           "c": legA + [("plat", vec("3", "c"))]}
    for leg, (v, e, tip, r1, r2) in {"B": ("4", "6", "7", "rod4", "rod5"), "C": ("5", "8", "9", "rod6", "rod7")}.items():
        base = legA + [("plat", vec("3", v))]
        pts[f"G{leg}1"] = base + [(r1, vec(v, e) / 2)]
        pts[f"G{leg}2"] = base + [(r1, vec(v, e)), (r2, vec(e, tip) / 2)]
        pts[tip] = base + [(r1, vec(v, e)), (r2, vec(e, tip))]
    com = {"rod1": "G1", "rod2": "G2", "plat": "c", "rod4": "GB1", "rod5": "GB2", "rod6": "GC1", "rod7": "GC2"}
    mass = {b: p["platform_mass"] if b == "plat" else p["rod_mass"] for b in path}
    inertia = {b: p["platform_inertia"] if b == "plat" else p["rod_inertia"] for b in path}
    g, F = np.array([0.0, -p["g"]]), np.array([p["force"], 0.0])

    def point(name, th, thd):
        """Position, Jacobian d x / d θ (2x7) and acceleration for θ'' = 0 (centripetal)."""
        x, J, acc = X["1"].copy(), np.zeros((2, 7)), np.zeros(2)
        for body, v in pts[name]:
            a, w = A[body] @ th, A[body] @ thd
            rv = np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]]) @ v
            x += rv
            J += np.outer([-rv[1], rv[0]], A[body])
            acc -= w * w * rv
        return x, J, acc

    def rhs(t, y, alpha=20.0):
        th, thd = y[:7], y[7:]
        M, f = np.zeros((7, 7)), np.zeros(7)
        for b in path:
            _, J, a = point(com[b], th, thd)
            M += mass[b] * J.T @ J + inertia[b] * np.outer(A[b], A[b])
            f += J.T @ (mass[b] * (g - a))
        f += point("c", th, thd)[1].T @ F
        (x7, C7, a7), (x9, C9, a9) = point("7", th, thd), point("9", th, thd)
        C = np.vstack([C7, C9])
        gamma = -np.concatenate([a7, a9]) - 2 * alpha * C @ thd - alpha**2 * np.concatenate([x7 - X["7"], x9 - X["9"]])
        K = np.block([[M, -C.T], [C, np.zeros((4, 4))]])
        return np.concatenate([thd, np.linalg.solve(K, np.concatenate([f, gamma]))[:7]])

    sol = solve_ivp(rhs, (0.0, times[-1]), np.zeros(14), method="DOP853", t_eval=times, rtol=1e-11, atol=1e-12)
    assert sol.success
    return np.array([point("c", sol.y[:7, i], sol.y[7:, i])[0] for i in range(len(times))])


def test_particle_model_has_attias_particles_and_tree():
    model = case.build()
    assert model.n_u == 7 and len(model.loops) == 2 and len(model.elements["bushing"].names) == 2
    pb = model.elements["particle_body"]
    rods = [np.array(m) for n, m in zip(pb.names, pb.masses) if n.startswith("rod")]
    assert len(rods) == 6 and all(np.allclose(m, [1 / 6, 1 / 6, 2 / 3], rtol=1e-5) for m in rods)
    plat = np.array(pb.masses[pb.names.index("platform")])
    # equilateral plate, particles at the vertices 3, 4, 5 and the midpoint of 3-5: by the
    # symmetry of Attia's 4x4 system m3 = m5, m4 = m3 + m_mid/2; with m = 3, J = 1, side 2:
    # m_mid = (m d^2 - J) / (3/4 d^2) = 3 (d^2 = 4/3), m3 = m5 = -0.5, m4 = 1
    assert np.allclose(plat, [-0.5, 1.0, -0.5, 3.0], atol=1e-12)
    # joint node 3 carries the platform's particle and rod 2's end particle
    i3 = model.node_index("n3")
    assert sum(i3 in nodes for nodes in model.elements["particle_body"].nodes) == 2


def test_trajectory_converges_to_the_rigid_mechanism_as_the_cuts_stiffen():
    p = dict(case.DEFAULTS)
    t_end, dt = 0.3, 1e-3
    errors = []
    for k in (1e4, 1e5, 1e6):
        res = simulate(case.build(cut_stiffness=k), t_end, dt, rho_inf=p["rho_inf"])
        assert res.status == "finished"
        ref = rigid_platform_centre(p, res.t)
        errors.append(np.linalg.norm(case.platform_centre(res) - ref, axis=1).max())
        # energy balance (kinetic + potential of the point masses, negative ones included,
        # + bushing strain + dissipation - work of the distributed 10 N force): what is left
        # is generalized-alpha's O(h^2) numerical dissipation (3.3e-6 of the peak kinetic
        # energy measured at this step; 1.3e-5 at twice the step)
        E = res.total_energy
        assert np.ptp(E) < 1e-5 * res.energy["kinetic"].max()
    assert np.ptp(ref[:, 1]) > 0.2  # the platform really falls (0.28 m in 0.3 s)
    # compliance error ~ cut force / k: each tenfold stiffer cut gives a ~tenfold smaller error
    # (measured 1.2e-4, 9.8e-6, 1.25e-6 m), down to the time-discretization error (< 1e-6 m)
    assert errors[1] < 0.2 * errors[0] and errors[2] < 0.2 * errors[1]
    assert errors[2] < 3e-6


def test_postprocess_writes_the_trajectory_plot_and_the_convergence_summary(tmp_path):
    p = {**case.DEFAULTS, "t_end": 0.06, "dt": 2e-3, "study_decades": 2, "cut_stiffness": 1e6}
    model = case.build(**p)
    res = simulate(model, p["t_end"], p["dt"], rho_inf=p["rho_inf"])
    summary = case.postprocess(res, model, p, tmp_path)
    assert (tmp_path / "platform_trajectory.png").stat().st_size > 10_000
    d1, d2 = summary["deviation_k=1e+05_m"], summary["deviation_k=1e+04_m"]
    assert 0 < d1 < d2 and summary["deviation_ratio_k=1e+04_to_k=1e+05"] == d2 / d1
    assert case.__doc__.splitlines()[0] and set(case.DEFAULTS) >= {"t_end", "dt", "rho_inf"}
