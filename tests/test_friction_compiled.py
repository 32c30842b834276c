"""Bearing friction in the compiled Newton step (flexmb/engine/friction.py: friction_loads, friction_secant,
friction_diag; flexmb/solvers/element_step.py): the kernel against the closed form of eq. (1) and an
independent numpy evaluation of it, the secant slope against eq. (1) and its tangent, and whole runs
with friction on the compiled step against the Python step bit for bit (the friction case of cases/ and
a beam on a pin with friction), on the dense, band and CHOLMOD factors, and their fixed-step runs through the
whole-run call (flexmb/solvers/element_run.py) against the step-by-step runs."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import load_case
from test_element_run import _assert_same as assert_same_run
from test_element_run import _both as both_runs
from test_element_step import SECTION, _both
from test_tree_run import _assert_same

import flexmb as fm
from flexmb.engine.assembly import Assembler
from flexmb.engine.friction import friction_secant, friction_torques
from flexmb.solvers.element_run import ElementRun
from flexmb.solvers.element_step import ElementStep
from flexmb.solvers.generalized_alpha import GeneralizedAlpha

case = load_case("bearing_friction_self_locking")


def beam_on_a_rough_pin() -> fm.Model:
    """A steel strip on a pin with bearing friction, started turning at 3 rad/s under gravity, with a
    tip mass: beams, a rigid body and friction (the strip's axial force loads the pin)."""
    mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    nodes = mb.add_flexible_link("link", (0.0, 0.0, 0.0), (0.5, 0.0, 0.0), 4, SECTION)
    mb.add_joint("pin", "revolute", "ground", nodes[0], axis=(0.0, 0.0, 1.0), u0=3.0)
    mb.add_joint_friction("pin", mu=0.3, pin_radius=0.02, omega_eps=1e-2)
    mb.add_node("tip", position=(0.5, 0.0, 0.0))
    mb.add_body("tip_body", node="tip", mass=0.5, com=(0.0, 0.0, 0.0), inertia=np.eye(3) * 1e-4)
    mb.add_joint("weld", "fixed", parent=nodes[-1], child="tip", point=(0.5, 0.0, 0.0))
    return mb.compile()


def _evaluated(model: fm.Model, seed: int):
    """The model's initial state with random velocities and accelerations (seeded), evaluated."""
    rng = np.random.default_rng(seed)
    st = model.initial_state()
    st.u[:] = rng.normal(size=st.u.size)
    st.udot[:] = rng.normal(size=st.u.size) * 10.0
    return st, Assembler(model).evaluate(st)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_kernel_is_eq_1_of_the_reactions(seed) -> None:
    """friction_loads (through JointFriction.torques) against friction_torques, eq. (1) in numpy
    (einsum, norm, numpy's tanh) on the reactions of Assembler.reactions-style subtree sums, for the
    slider-crank's three pins at a random state: equal to round-off of the torques' own size."""
    model = case.build(theta0_deg=10.0)
    st, ev = _evaluated(model, seed)
    fr = ev.friction
    w = ev.node_wrenches(st.udot)
    tau = fr.torques(w)
    F = fr.reaction_forces(w)
    ref, load = friction_torques(F, fr.axis, fr.rate, model.friction_mu, model.friction_radius,
                                 model.friction_omega_eps)
    scale = np.abs(model.friction_mu * model.friction_radius * np.linalg.norm(F, axis=1)).max()
    assert scale > 0.0
    np.testing.assert_allclose(tau, ref, rtol=0, atol=64 * np.finfo(float).eps * scale)
    np.testing.assert_allclose(fr.load, load, rtol=1e-13)
    # the load is the reaction's part normal to the axis: |F|² = |F_⊥|² + (F·g)²
    np.testing.assert_allclose(fr.load ** 2 + np.einsum("ni,ni->n", F, fr.axis) ** 2, np.einsum("ni,ni->n", F, F),
                               rtol=1e-12)


def test_the_secant_slope_times_the_rate_is_the_torque() -> None:
    """friction_secant: c u = μ r |F_⊥| tanh(u/ω_ε) (eq. 1 as τ = -c u) over eight decades of the rate,
    c ≥ the tangent slope μ r |F_⊥| sech²(u/ω_ε)/ω_ε, and c → μ r |F_⊥|/ω_ε at rest (the series branch
    below |u/ω_ε| = 1e-6 meets the closed form there to round-off)."""
    eps, mu, r, load = 1e-3, 0.2, 0.02, 37.0
    u = np.concatenate([-np.logspace(-12, 1, 60), [0.0], np.logspace(-12, 1, 60)])
    n = u.size
    c = np.empty(n)
    friction_secant(u, np.arange(n), np.full(n, mu), np.full(n, r), np.full(n, eps), np.full(n, load), c)
    torque = mu * r * load * np.tanh(u / eps)
    np.testing.assert_allclose(c * u, torque, rtol=1e-14, atol=0)
    assert (c > 0).all()
    tangent = mu * r * load / eps / np.cosh(u / eps) ** 2
    assert (c >= tangent * (1 - 1e-15)).all()
    np.testing.assert_allclose(c[np.abs(u) < 1e-9], mu * r * load / eps, rtol=1e-12)
    # both branches at the switch |x| = 1e-6: the series 1 - x²/3 and tanh(x)/x agree to round-off
    x = np.array([0.999999e-6, 1.000001e-6]) * eps
    cx = np.empty(2)
    friction_secant(x, np.arange(2), np.full(2, mu), np.full(2, r), np.full(2, eps), np.full(2, load), cx)
    assert abs(cx[0] - cx[1]) <= 4 * np.finfo(float).eps * cx[0]


def test_models_with_friction_take_the_compiled_step() -> None:
    """The friction case and the beam on a rough pin take the compiled element step, their whole Newton
    loop in one call on the dense factor, and their fixed-step runs the whole-run call (`flexmb info`)."""
    for model in (case.build(), beam_on_a_rough_pin()):
        integ = GeneralizedAlpha(model)
        assert ElementStep.applies(model, integ.asm, True)
        assert ElementRun.applies(integ, None)
        text = integ.describe_solver(fixed_steps=True, callback=False)
        assert "each step's whole Newton loop in one compiled call" in text and "Python" not in text
        assert "whole runs compiled between output rows" in text


@pytest.mark.parametrize("build, theta0", [(case.build, 3.0), (case.build, 8.0), (beam_on_a_rough_pin, None)],
                         ids=["locking", "moving", "beam_on_a_rough_pin"])
def test_the_whole_run_with_friction_is_the_step_by_step_run_bit_for_bit(monkeypatch, build, theta0) -> None:
    """0.15 s with a row every 7 steps through the whole-run call (flexmb/solvers/element_run.py: the friction's
    power of the last iterate's torques) and step by step: the same rows, energies, steps and counters."""
    model = build(theta0_deg=theta0) if theta0 is not None else build()
    fast, slow, calls = both_runs(monkeypatch, model, 0.15, 1e-3, output_every=7, rho_inf=case.DEFAULTS["rho_inf"])
    assert_same_run(fast, slow)
    # every step but the last in the compiled calls, but those whose Newton failed at dt (the beam's pin sticks and
    # slips): each stops its call and is repeated, halved, by the Python step
    failed = int(fast.stats["failed_steps"])
    assert fast.status == "finished" and 149 - failed <= sum(calls) <= 149 and max(calls) == 7
    assert fast.energy["dissipated"][-1] > 0.0


@pytest.mark.parametrize("solver", ["dense", "band", "cholmod"])
@pytest.mark.parametrize("build, theta0", [(case.build, 3.0), (case.build, 8.0), (beam_on_a_rough_pin, None)],
                         ids=["locking", "moving", "beam_on_a_rough_pin"])
def test_the_compiled_step_with_friction_is_the_python_step_bit_for_bit(monkeypatch, solver, build, theta0) -> None:
    """0.15 s of the slider-crank below (locks) and above (moves) its locking angle, and of the beam on a
    rough pin: every row, energy, step and counter the same as the Python step's; the friction did
    work (dissipated > 0) and the energy balance of the rows holds to the size of the energies."""
    model = build(theta0_deg=theta0) if theta0 is not None else build()
    fast, slow, count = _both(monkeypatch, model, 0.15, 1e-3, output_every=1, linear_solver=solver,
                              rho_inf=case.DEFAULTS["rho_inf"])
    _assert_same(fast, slow)
    assert fast.status == "finished"
    if solver == "cholmod":
        assert count["iterate"] >= fast.stats["newton_iterations"] and count["newton"] == 0
    else:
        assert count["newton"] >= fast.stats["steps"]
    e = fast.energy
    assert e["dissipated"][-1] > 0.0
    size = np.abs(e["kinetic"]).max() + np.abs(e["potential"]).max() + np.abs(e["load_work"]).max() + e["dissipated"][-1]
    total = fast.total_energy
    assert np.abs(total - total[0]).max() < 1e-2 * size
