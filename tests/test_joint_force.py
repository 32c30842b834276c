"""Applied joint forces (ModelBuilder.add_joint_force) against closed forms.

(a) A uniform rod on a revolute joint, no gravity, under a constant torque tau0 about the
    joint axis: theta(t) = tau0 t^2 / (2 J) with J = m L^2 / 3 about the pivot.
(b) The same rod under tau(t) = A sin(w t): theta(t) = A (t/w - sin(w t)/w^2) / J.
(c) A slider on a prismatic joint under gravity along the guide and a force F(t) = c t:
    x(t) = c t^3 / (6 m) - g t^2 / 2.
In all three the work of the joint force is booked as load work, so the recorded energy
balance T + V - W stays constant, and a force on a driven coordinate is subtracted from the
drive force. Bad input is refused with a message naming the joint.
"""

import numpy as np
import pytest

import flexmb as fm
from flexmb.solvers.simulate import simulate

M, L = 2.0, 1.5
J_PIVOT = M * L**2 / 3


def rod(force, gravity=(0.0, 0.0, 0.0), drive=None) -> fm.Model:
    mb = fm.ModelBuilder(gravity=gravity)
    mb.add_node("n", (0, 0, 0))
    mb.add_body("rod", "n", M, (L / 2, 0, 0), np.diag([0.0, M * L**2 / 12, M * L**2 / 12]))
    mb.add_joint("pin", "revolute", "ground", "n", point=(0, 0, 0), axis=(0, 0, 1))
    mb.add_joint_force("pin", force)
    if drive is not None:
        mb.add_drive("pin", drive)
    return mb.compile()


def test_constant_torque_on_a_rod():
    tau0 = 3.0
    res = simulate(rod(tau0), t_end=1.0, dt=5e-3, rho_inf=1.0)
    assert res.status == "finished"
    th = res.coordinate("pin.q")
    ref = tau0 * res.t**2 / (2 * J_PIVOT)
    # constant angular acceleration: generalized-α integrates a quadratic exactly
    assert np.abs(th - ref).max() <= 1e-10 * ref.max()
    # the torque's work tau0 * theta is booked as load work and equals the kinetic energy
    np.testing.assert_allclose(res.energy["load_work"][-1], tau0 * th[-1], rtol=1e-6)
    assert np.ptp(res.total_energy) <= 1e-6 * res.energy["kinetic"].max()


def test_sinusoidal_torque_on_a_rod():
    A, w = 2.0, 3.0
    h = 2e-3
    res = simulate(rod(lambda t: A * np.sin(w * t)), t_end=2.0, dt=h, rho_inf=1.0)
    th = res.coordinate("pin.q")
    ref = A * (res.t / w - np.sin(w * res.t) / w**2) / J_PIVOT
    # second-order (trapezoidal) step: relative error ~ (w h)^2 / 12 = 3e-6; allow twice that
    bound = (w * h) ** 2 / 6
    assert np.abs(th - ref).max() <= bound * np.abs(ref).max()
    # energy: the work is the trapezoidal quadrature of the power, also O((w h)^2)
    assert np.ptp(res.total_energy) <= bound * res.energy["kinetic"].max()


def test_time_dependent_force_on_a_slider_under_gravity():
    m, g, c = 1.7, 9.81, 30.0
    mb = fm.ModelBuilder(gravity=(0, 0, -g))
    mb.add_node("s", (0, 0, 0))
    mb.add_body("slider", "s", m)
    mb.add_joint("guide", "prismatic", "ground", "s", axis=(0, 0, 1))
    mb.add_joint_force("guide", lambda t: c * t)
    res = simulate(mb.compile(), t_end=1.0, dt=2e-3, rho_inf=1.0)
    x = res.coordinate("guide.q")
    ref = c * res.t**3 / (6 * m) - g * res.t**2 / 2
    # cubic in t: generalized-α (rho_inf = 1, trapezoidal) errs by O(h^2) on the jerk term
    assert np.abs(x - ref).max() <= 1e-5 * np.abs(ref).max()
    # the gravity potential is in V, the force's work in load_work: the balance is closed
    assert np.ptp(res.total_energy) <= 1e-5 * np.abs(res.energy["potential"]).max()


def test_joint_force_is_subtracted_from_the_drive_force():
    """A driven rod with a joint force: the actuator supplies only the rest, J theta'' - tau."""
    tau0, alpha = 1.2, 1.3
    res = simulate(rod(tau0, drive=lambda t: 0.5 * alpha * t**2), t_end=0.2, dt=1e-3, rho_inf=1.0)
    np.testing.assert_allclose(res.drive_forces[:, 0], J_PIVOT * alpha - tau0, rtol=1e-9)


def test_bad_joint_force_input_is_refused():
    mb = fm.ModelBuilder()
    mb.add_node("n", (0, 0, 0))
    mb.add_body("b", "n", 1.0)
    mb.add_joint("ball", "spherical", "ground", "n")
    with pytest.raises(fm.ModelError, match="ball"):
        mb.add_joint_force("ball", 1.0)  # ball rotations are not scalar coordinates
    with pytest.raises(fm.ModelError, match="nope"):
        mb.add_joint_force("nope", 1.0)
    mb2 = fm.ModelBuilder()
    mb2.add_node("n", (0, 0, 0))
    mb2.add_body("b", "n", 1.0)
    mb2.add_joint("pin", "revolute", "ground", "n", axis=(0, 0, 1))
    with pytest.raises(fm.ModelError, match="pin"):
        mb2.add_joint_force("pin", float("nan"))
    with pytest.raises(fm.ModelError, match="pin"):
        mb2.add_joint_force("pin", lambda t: [1.0, 2.0])
    mb2.add_joint_force("pin", 1.0)
    with pytest.raises(fm.ModelError, match="already"):
        mb2.add_joint_force("pin", 2.0)
