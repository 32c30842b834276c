"""A torsion spring wound past half a turn keeps its torque (docs/rotational_spring_damper.md (R3), (R3a)): the
angle about the axis is taken within half a turn of the last accepted step's angle, kept in the element state,
so the turns are counted from step to step.

The model: a disk on a revolute joint about z driven smoothly through 2.5 turns, q(t) = 5π (3 s² - 2 s³),
s = t / T (at rest at both ends), a torsion spring-damper (k, c) about z between ground and disk, and a free
wheel at rest beside it (one unknown, so the Newton loop runs and the compiled element step is used). Asserted:

* the spring's angle is the joint's angle on every row (no jump of 2π), and at the end its torque is k 5π
  (the rate is zero there), to the round-off of k 5π;
* the energy balance (drive work = strain ½ k φ² + dissipated ∫ c φ'²) closes to the trapezoidal rule's
  O(h²) error of the drive work: halving the step divides it by 4 (3.9 to 4.1);
* the compiled element step and the Python Newton loop give the same numbers bit for bit.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import flexmb as fm
from flexmb.solvers.element_step import ElementStep
from flexmb.solvers.generalized_alpha import GeneralizedAlpha

K, C, J, T, TURNS = 50.0, 0.3, 0.2, 1.0, 2.5
A = 2 * math.pi * TURNS  # 5π


def wound() -> fm.Model:
    """The disk driven through TURNS turns with the torsion spring-damper to ground, and the free wheel."""
    mb = fm.ModelBuilder(gravity=(0, 0, 0))
    mb.add_node("d", (0.1, 0.2, 0.0))
    mb.add_body("d", "d", 1.0, (0.0, 0.0, 0.0), np.diag([0.1, 0.15, J]))
    mb.add_joint("O", "revolute", "ground", "d", axis=(0, 0, 1))
    mb.add_drive("O", lambda t: A * (3 * (t / T) ** 2 - 2 * (t / T) ** 3), lambda t: A * (6 * t / T**2 - 6 * t**2 / T**3),
                 lambda t: A * (6 / T**2 - 12 * t / T**3))
    mb.add_node("p", (1.0, 0.0, 0.0))
    mb.add_body("p", "p", 1.0, (0.0, 0.0, 0.0), np.eye(3) * 0.1)
    mb.add_joint("P", "revolute", "ground", "p", axis=(0, 0, 1))
    mb.add_rotational_spring_damper("rs", "ground", "d", axis=(0, 0, 1), stiffness=K, damping=C)
    return mb.compile()


def run(python: bool, dt: float, monkeypatch) -> fm.Result:
    with monkeypatch.context() as mp:
        if python:
            mp.setattr(ElementStep, "applies", staticmethod(lambda model, asm, cholmod: False))
        return fm.simulate(wound(), T, dt, output_every=10)


def test_the_model_takes_the_compiled_element_step() -> None:
    text = GeneralizedAlpha(wound()).describe_solver()
    assert "whole Newton loop in one compiled call" in text and "in Python" not in text.split(";")[1], text


@pytest.mark.parametrize("python", [False, True], ids=["compiled", "python"])
def test_a_spring_wound_two_and_a_half_turns_keeps_its_torque(monkeypatch, python) -> None:
    res = run(python, 1e-3, monkeypatch)
    assert res.status == "finished"
    phi, torque = res.spring_dampers[:, 0, 0], res.spring_dampers[:, 0, 2]
    q = res.coordinate("O.q")
    np.testing.assert_allclose(phi, q, rtol=0, atol=64 * np.finfo(float).eps * A)  # no jump of 2π on any row
    assert abs(torque[-1] - K * A) <= 16 * np.finfo(float).eps * K * A + C * abs(res.u[-1, 0])
    assert torque[-1] > 0.99 * K * A  # the old branch rule gave k (5π - 6π) = -k π here
    # the balance: drive work = strain + dissipated; the trapezoidal drive work errs as h²
    errs = []
    for dt in (1e-3, 5e-4):
        r = run(python, dt, monkeypatch)
        e = r.energy
        np.testing.assert_allclose(e["strain"][-1], 0.5 * K * A * A, rtol=1e-12)
        errs.append(abs(e["drive_work"][-1] - e["strain"][-1] - e["dissipated"][-1] - e["kinetic"][-1]))
    assert errs[1] < 1e-6 * 0.5 * K * A * A
    assert 3.9 < errs[0] / errs[1] < 4.1, errs


def test_compiled_and_python_are_the_same_bit_for_bit(monkeypatch) -> None:
    fast, slow = run(False, 1e-3, monkeypatch), run(True, 1e-3, monkeypatch)
    for name in ("q", "u", "udot", "spring_dampers", "newton_iterations"):
        np.testing.assert_array_equal(getattr(fast, name), getattr(slow, name), err_msg=name)
    for k in ("strain", "dissipated", "drive_work"):
        np.testing.assert_array_equal(fast.energy[k], slow.energy[k], err_msg=k)
