"""The rigid coupling's penalty escalation and its "stuck" message (docs/coupling.md §6; the rigid cuts'
update (AL11), (AL13) of docs/rigid_cut.md, shared through elements/coupling_kernels.coupling_update).

The model: wheel a driven at a constant rate (q_a = ω t), wheel b coupled to it by q_b = r q_a and held
by a joint spring of stiffness K on its own joint (a stiff torsional load). Only q_b is unknown, so the
coupling's reference inertia is m_ref = J_b (C13) and its penalty α0 = κ J_b / β'. With the exact
iteration matrix each multiplier update (C11) multiplies the gap by (J_b / β' + K) / (J_b / β' + K + α):
for K = 16 α0 about 0.94, so that 30 iterates cannot close a gap of r ω h = 3e-3 rad to 1e-10 rad;
escalated to 100 α0 (AL11) the factor is 0.14 and the step converges. Asserted:

* with escalation the stiff case finishes without halving, the gap within (C14), and the coupling's
  force is the load's torque f = -K r ω t (b turns at a constant rate: no inertia) within K times the
  closure tolerance (the torque of a gap at the tolerance);
* without escalation (SMAX = S) the same step fails, naming the coupling;
* a coupling against a load 10⁶ times stiffer than any penalty the halved steps reach (a joint locked by
  a brake) ends the run with a message naming the coupling, its equation, its gap and what to do;
* the compiled Newton loop and the Python one give the same numbers, iterations and message bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest

import flexmb as fm
from flexmb.elements import coupling as coupling_module
from flexmb.elements.coupling_kernels import KAPPA, SMAX, S
from flexmb.solvers.element_step import ElementStep
from flexmb.solvers.generalized_alpha import GeneralizedAlpha

JA, JB, RATIO, OMEGA, DT = 0.5, 0.2, 3.0, 1.0, 1e-3


def geared_load(stiffness: float) -> fm.Model:
    """Wheel a driven at q_a = ω t, wheel b (inertia JB) coupled rigidly by q_b = 3 q_a and held by a joint
    spring of ``stiffness`` [N m/rad]."""
    mb = fm.ModelBuilder(gravity=(0, 0, 0))
    for n, x, J in (("a", 0.0, JA), ("b", 0.4, JB)):
        mb.add_node(n, position=(x, 0, 0))
        mb.add_body(n, n, mass=1.0, inertia=np.eye(3) * J)
        mb.add_joint("j" + n, "revolute", "ground", n, axis=(0, 0, 1))
    mb.add_drive("ja", lambda t: OMEGA * t, lambda t: OMEGA, lambda t: 0.0)
    mb.add_joint_spring("jb", stiffness)
    mb.add_coupling("mesh", "ja", "jb", ratio=RATIO)
    return mb.compile()


def base_penalty(dt: float) -> float:
    """α0 = κ m_ref / β' (C13) with m_ref = J_b (q_b the only unknown), β' of the integrator's defaults."""
    ga = GeneralizedAlpha(geared_load(1.0))
    return KAPPA * JB / (ga.beta * dt * dt * (1 - ga.af) / (1 - ga.am))


def run(model: fm.Model, python: bool, monkeypatch, **kw) -> fm.Result:
    """The run on the compiled Newton loop, or (``python``) on the Python one."""
    with monkeypatch.context() as mp:
        if python:
            mp.setattr(ElementStep, "applies", staticmethod(lambda model, asm, cholmod: False))
        return fm.simulate(model, **kw)


def without_escalation(monkeypatch) -> None:
    """Couplings.begin_step with the largest penalty of the step equal to its first (no (AL11))."""
    begin = coupling_module.Couplings.begin_step

    def fixed(self, model, data, prep, state, ctx):
        st = begin(self, model, data, prep, state, ctx)
        st[:, SMAX] = st[:, S]
        return st
    monkeypatch.setattr(coupling_module.Couplings, "begin_step", fixed)


def test_the_model_takes_the_compiled_loop() -> None:
    text = GeneralizedAlpha(geared_load(1e3)).describe_solver()
    assert "whole Newton loop in one compiled call" in text, text


@pytest.mark.parametrize("python", [False, True], ids=["compiled", "python"])
def test_escalation_lets_a_stiff_load_converge(monkeypatch, python) -> None:
    K = 16.0 * base_penalty(DT)
    res = run(geared_load(K), python, monkeypatch, t_end=5 * DT, dt=DT, max_halvings=0)
    assert res.status == "finished", res.status
    tol = 1e-10  # (C14), rad
    assert np.abs(res.coupling("mesh", "gap")).max() <= tol
    assert res.newton_iterations[1:].max() <= 30
    f = res.coupling("mesh", "force")
    np.testing.assert_allclose(f, -K * RATIO * OMEGA * res.t, rtol=0, atol=K * tol)
    without_escalation(monkeypatch)
    res = run(geared_load(K), python, monkeypatch, t_end=5 * DT, dt=DT, max_halvings=0)
    assert res.status.startswith("failed") and "coupling 'mesh' cannot hold jb.q = 3 ja.q + 0" in res.status


@pytest.mark.parametrize("python", [False, True], ids=["compiled", "python"])
def test_a_coupling_against_a_locked_joint_names_itself(monkeypatch, python) -> None:
    """K = 10⁶ × 4¹⁰ × 100 α0: even at dt / 2¹⁰ (α × 4¹⁰) and escalated (× 100), the penalty is 10⁻⁶ of the
    lock's stiffness, so the gap stays where the drive put it and every attempt ends with the message."""
    K = 1e6 * 4.0**10 * 100 * base_penalty(DT)
    res = run(geared_load(K), python, monkeypatch, t_end=5 * DT, dt=DT)
    msg = res.status
    assert msg.startswith("failed: t = ") and "coupling 'mesh' cannot hold jb.q = 3 ja.q + 0" in msg, msg
    assert "gap g stays at" in msg and "with the penalty at its largest" in msg
    assert "ModelBuilder.add_coupling('mesh', ..., stiffness=...)" in msg and "Remove the constraint" in msg


def test_compiled_and_python_are_the_same_bit_for_bit(monkeypatch) -> None:
    """The escalating step (penalties raised within it, the matrix refactorized) and the stuck one."""
    model = geared_load(16.0 * base_penalty(DT))
    fast = run(model, False, monkeypatch, t_end=5 * DT, dt=DT, max_halvings=0)
    slow = run(model, True, monkeypatch, t_end=5 * DT, dt=DT, max_halvings=0)
    assert fast.status == slow.status == "finished"
    for name in ("q", "u", "udot", "couplings", "newton_iterations"):
        np.testing.assert_array_equal(getattr(fast, name), getattr(slow, name), err_msg=name)
    for k in ("strain", "dissipated"):
        np.testing.assert_array_equal(fast.energy[k], slow.energy[k], err_msg=k)
    locked = geared_load(1e6 * 4.0**10 * 100 * base_penalty(DT))
    fast = run(locked, False, monkeypatch, t_end=2 * DT, dt=DT, max_halvings=2)
    slow = run(locked, True, monkeypatch, t_end=2 * DT, dt=DT, max_halvings=2)
    assert fast.status == slow.status and "coupling 'mesh'" in fast.status
