"""Bearing friction in revolute joints (flexmb/engine/friction.py, ModelBuilder.add_joint_friction):
torque -μ r |F_⊥| tanh(ω/ω_ε) with F_⊥ the pin's reaction force, implicit in the accelerations.

Closed forms:
* a rotor whose centre of mass is on its axis, axis horizontal, under gravity: the pin carries
  exactly its weight, so it decelerates uniformly at μ r m g / J and stops at ω0 J / (μ r m g);
* an eccentric rotor (centre of mass at distance e) spinning in a horizontal plane: the pin
  carries m e (ω², α) (centripetal and tangential), so J_O α = -k √(ω⁴ + α²), k = μ r m e:
  α = -k ω² / √(J_O² - k²) and ω(t) = ω0 / (1 + c ω0 t), c = k / √(J_O² - k²). Leaving the
  tangential part out (an explicit friction torque) would give c = k / J_O instead: the test
  sees the difference, so it checks that the friction is implicit in the accelerations;
* a rotor driven at constant speed under gravity: the drive supplies exactly μ r m g.
"""

import numpy as np
import pytest

import flexmb as fm
from flexmb.solvers.simulate import simulate

G = 9.81


def rotor(mu, r, m, J, w0=0.0, e=0.0, gravity=True, eps=1e-3, drive=None):
    mb = fm.ModelBuilder(gravity=(0.0, -G, 0.0) if gravity else (0.0, 0.0, 0.0))
    mb.add_node("rotor", (0.0, 0.0, 0.0))
    mb.add_body("rotor", "rotor", m, (e, 0.0, 0.0), np.diag([J / 2, J / 2, J]))
    mb.add_joint("pin", "revolute", "ground", "rotor", axis=(0.0, 0.0, 1.0), u0=w0)
    mb.add_joint_friction("pin", mu, r, omega_eps=eps)
    if drive is not None:
        mb.add_drive("pin", drive)
    return mb.compile()


def test_gravity_loaded_rotor_decelerates_at_mu_r_m_g_over_J_and_stops():
    mu, r, m, J, w0 = 0.3, 0.05, 2.0, 0.02, 5.0
    res = simulate(rotor(mu, r, m, J, w0), 0.6, 1e-3, rho_inf=0.9)
    assert res.status == "finished"
    decel = mu * r * m * G / J  # 14.715 rad/s²
    t_stop = w0 / decel
    w = res.u[:, 0]
    sliding = res.t < t_stop - 0.02  # tanh(ω/ω_ε) = 1 to round-off while ω > 0.3 rad/s
    np.testing.assert_allclose(w[sliding], w0 - decel * res.t[sliding], rtol=0, atol=1e-9 * w0)
    stopped = res.t > t_stop + 0.02
    assert np.abs(w[stopped]).max() < 1e-6  # and it stays at rest: no torque drives it
    # the pin's reaction is the weight, and its moment about the axis is the friction torque
    Fy = res.reaction("pin")[sliding, 1]
    np.testing.assert_allclose(Fy, m * G, rtol=1e-9)
    np.testing.assert_allclose(res.reaction("pin")[sliding, 5], -J * decel, rtol=1e-9)
    # friction work = kinetic energy lost: the balance closes
    assert res.energy["dissipated"][-1] == pytest.approx(0.5 * J * w0**2, rel=1e-5)
    E = res.total_energy
    assert np.abs(E - E[0]).max() < 1e-5 * 0.5 * J * w0**2


def test_eccentric_rotor_friction_is_implicit_in_the_tangential_acceleration():
    mu, r, m, e, Jc, w0 = 0.5, 0.5, 1.0, 1.0, 0.5, 4.0
    JO = Jc + m * e * e
    k = mu * r * m * e
    c_exact, c_explicit = k / np.sqrt(JO**2 - k**2), k / JO
    res = simulate(rotor(mu, r, m, Jc, w0, e=e, gravity=False), 2.0, 1e-3, rho_inf=0.9)
    assert res.status == "finished"
    w = res.u[:, 0]
    exact = w0 / (1 + c_exact * w0 * res.t)
    explicit = w0 / (1 + c_explicit * w0 * res.t)
    err = np.abs(w - exact).max()
    assert err < 1e-4 * w0
    assert np.abs(explicit - exact).max() > 100 * err  # the check can tell the two apart
    # Newton converges although the iteration matrix leaves the |F(udot)| dependence out
    assert res.stats["newton_iterations"] / res.stats["steps"] < 5
    # dissipated = kinetic energy lost (to the integrator's second-order error)
    T0 = 0.5 * JO * w0**2
    assert res.energy["dissipated"][-1] == pytest.approx(T0 - 0.5 * JO * w[-1] ** 2, rel=1e-4)
    assert np.abs(res.total_energy - res.total_energy[0]).max() < 2e-5 * T0


def test_drive_torque_includes_the_bearing_friction():
    mu, r, m, J, W = 0.2, 0.03, 3.0, 0.05, 2.0
    res = simulate(rotor(mu, r, m, J, w0=W, drive=lambda t: W * t, eps=1e-3), 0.2, 1e-3, rho_inf=0.9)
    assert res.status == "finished"
    np.testing.assert_allclose(res.drive_forces[1:, 0], mu * r * m * G, rtol=1e-9)
    # the drive's work is what the bearing dissipates
    assert res.energy["drive_work"][-1] == pytest.approx(res.energy["dissipated"][-1], rel=1e-9)


def test_a_pin_that_friction_holds_creeps_at_the_regularised_speed():
    """A weight hanging eccentrically on a pin whose friction can hold it: tanh(ω/ω_ε) makes it
    creep at the speed where the regularised torque balances gravity (flexmb/engine/friction.py):
    μ r m g tanh(ω/ω_ε) = m g e, ω = ω_ε atanh(e / (μ r))."""
    mu, r, e, eps = 0.3, 0.02, 0.002, 1e-3
    mb = fm.ModelBuilder(gravity=(0.0, -G, 0.0))
    mb.add_node("arm", (0.0, 0.0, 0.0))
    mb.add_body("arm", "arm", 1.0, (e, 0.0, 0.0), np.diag([0.005, 0.005, 0.01]))
    mb.add_joint("pin", "revolute", "ground", "arm", axis=(0.0, 0.0, 1.0))
    mb.add_joint_friction("pin", mu, r, omega_eps=eps)
    res = simulate(mb.compile(), 0.2, 1e-3, rho_inf=0.9)
    assert res.status == "finished"
    creep = eps * np.arctanh(e / (mu * r))
    assert res.u[-1, 0] == pytest.approx(-creep, rel=1e-6)
    assert np.abs(res.u[:, 0]).max() < 2 * creep


def test_bad_friction_input_is_refused():
    mb = fm.ModelBuilder()
    mb.add_node("n", (0.0, 0.0, 0.0))
    mb.add_body("b", "n", 1.0)
    mb.add_joint("slide", "prismatic", "ground", "n", axis=(1.0, 0.0, 0.0))
    with pytest.raises(fm.ModelError, match="only revolute"):
        mb.add_joint_friction("slide", 0.1, 0.01)
    with pytest.raises(fm.ModelError, match="unknown joint 'nope'"):
        mb.add_joint_friction("nope", 0.1, 0.01)
    mb2 = fm.ModelBuilder()
    mb2.add_node("n", (0.0, 0.0, 0.0))
    mb2.add_body("b", "n", 1.0, inertia=np.eye(3))
    mb2.add_joint("pin", "revolute", "ground", "n", axis=(0.0, 0.0, 1.0))
    for kw, what in ((dict(mu=-0.1, pin_radius=0.01), "mu"), (dict(mu=0.1, pin_radius=0.0), "pin_radius"),
                     (dict(mu=0.1, pin_radius=0.01, omega_eps=float("nan")), "omega_eps")):
        with pytest.raises(fm.ModelError, match=what):
            mb2.add_joint_friction("pin", **kw)
    mb2.add_joint_friction("pin", 0.1, 0.01)
    with pytest.raises(fm.ModelError, match="already has friction"):
        mb2.add_joint_friction("pin", 0.1, 0.01)
    m = mb2.compile()
    assert m.friction_joint.tolist() == [0] and m.friction_mu.tolist() == [0.1]
