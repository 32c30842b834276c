"""cases/four_bar_rigid_limit.py (issue 7 rigid-limit study): its closed-form rigid rocker angle
closes the loop, and the elastic coupler's rocker error falls like 1/EA (tenfold stiffer,
tenfold smaller error) while the mechanism stays on the rigid motion's branch."""

import numpy as np
from conftest import load_case

from flexmb.solvers.simulate import simulate

case = load_case("four_bar_rigid_limit")


def test_closed_form_rocker_angle_closes_the_rigid_loop():
    th2 = np.linspace(0, 2 * np.pi, 361)
    th4 = case.rigid_rocker_angle(th2)
    A = np.stack([case.A_ * np.cos(th2), case.A_ * np.sin(th2)], -1)
    B = np.stack([case.D_ + case.C_ * np.cos(th4), case.C_ * np.sin(th4)], -1)
    assert np.abs(np.linalg.norm(B - A, axis=1) - case.B_).max() < 1e-12  # the coupler keeps its length
    # one branch all the way round (Grashof crank-rocker): θ4 varies continuously
    assert np.abs(np.diff(th4)).max() < 0.05
    # the model is assembled on it: the coupler's far end sits at B(θ2 = 1 rad)
    m = case.build()
    th4_0 = case.rigid_rocker_angle(case.TH0)
    far_end = m.X0[m.node_names.index("coupler.4")]
    assert np.allclose(far_end, [case.D_ + case.C_ * np.cos(th4_0), case.C_ * np.sin(th4_0), 0], atol=1e-12)


def test_rocker_error_falls_like_one_over_EA():
    errors = []
    for ea in (1e6, 1e7):
        p = {**case.DEFAULTS, "EA": ea}
        res = simulate(case.build(EA=ea), 0.2, p["dt"], rho_inf=p["rho_inf"])
        assert res.status == "finished"
        errors.append(np.abs(case.rocker_error(res)).max())
    # the crank has turned: the comparison is over a real motion, not the assembly pose
    assert abs(res.coordinate("O2.q")[-1]) > 0.1
    assert 1e-7 < errors[1] < errors[0] < 1e-4
    assert 8 < errors[0] / errors[1] < 12  # compliance ~ 1/EA
