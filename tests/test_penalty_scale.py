"""The penalties of the rigid couplings and the prescribed-length actuators are scale-derived
(docs/coupling.md (C13), §6; docs/actuator.md (A6), §9): α = κ m_ref / β', m_ref the constraint's
effective mass at the start, so the penalty seen in the inertia's units, β'α W = κ, is the same at every
size. A mechanism copied at 1 cm and at 100 m, with the masses of the same density (m ~ s³, J ~ s⁵) and
the loads scaled to keep the motion (torques ~ s⁵, gravity ~ s), moves alike: the same angles to
round-off, the same Newton iterations on every step, and the closure the same fraction of its tolerance
(1e-10 rad, or 1e-10 times the model's size for lengths). With the penalty not scaled (α = κ / β' in SI
units, the m_ref left out; monkeypatched), the 100 m copy cannot close its constraint and the run fails
naming the element: the scaling is what these tests see, and a closure that does not converge is never
accepted silently.
"""

from __future__ import annotations

import numpy as np
import pytest

import flexmb as fm
from flexmb.elements import actuator as actuator_module
from flexmb.elements import coupling as coupling_module
from flexmb.elements.actuator_kernels import MREF as ACT_MREF
from flexmb.elements.coupling_kernels import MREF
from flexmb.elements.rigid_cut_kernels import SMAX, S
from flexmb.solvers.element_run import ElementRun

EPS = float(np.finfo(float).eps)
SCALES = (0.01, 1.0, 100.0)
A = np.array([0.5, -1.0, 0.0])  # the cylinder's ground point [m at s = 1]
B = np.array([1.5, 0.0, 0.0])  # its boom point at θ = 0
L0 = float(np.linalg.norm(B - A))


def gear_pair(s: float, rack: bool) -> fm.Model:
    """A wheel (j1) driven by a torque 2 s⁵ (1 + sin 5t), coupled rigidly to a second wheel (ratio 3) or to
    a rack (prismatic j2, ratio 0.1 s m/rad); lengths times s, masses s³, inertias s⁵."""
    mb = fm.ModelBuilder(gravity=(0, 0, 0))
    mb.add_node("g1", position=(0, 0, 0))
    mb.add_node("g2", position=(0.4 * s, 0, 0))
    mb.add_body("w1", "g1", mass=s**3, com=(0.05 * s, 0, 0), inertia=np.eye(3) * 0.5 * s**5)
    mb.add_body("w2", "g2", mass=s**3, inertia=np.eye(3) * 0.2 * s**5)
    mb.add_joint("j1", "revolute", "ground", "g1", axis=(0, 0, 1))
    if rack:
        mb.add_joint("j2", "prismatic", "ground", "g2", axis=(0, 1, 0))
    else:
        mb.add_joint("j2", "revolute", "ground", "g2", axis=(0, 0, 1))
    mb.add_coupling("mesh", "j1", "j2.q", ratio=0.1 * s if rack else 3.0)
    mb.add_joint_force("j1", lambda t: 2.0 * s**5 * (1.0 + np.sin(5.0 * t)))
    return mb.compile()


def boom(s: float) -> fm.Model:
    """A 10 s³ kg boom of length 2 s on a pivot, gravity 9.81 s, its cylinder's length s (L0 + 0.2 sin 3t)."""
    mb = fm.ModelBuilder(gravity=(0.0, -9.81 * s, 0.0))
    mb.add_node("boom", (0, 0, 0))
    mb.add_body("boom", "boom", 10 * s**3, (s, 0.0, 0.0), np.diag([1e-3, 40 / 12, 40 / 12]) * s**5)
    mb.add_joint("pivot", "revolute", "ground", "boom", axis=(0, 0, 1))
    mb.add_actuator("cyl", "ground", "boom", point_a=s * A, point_b=s * B,
                    length=lambda t: s * (L0 + 0.2 * np.sin(3.0 * t)))
    return mb.compile()


def step_by_step(monkeypatch) -> None:
    """The run's steps one by one, each begun by the family's Python begin_step (the one monkeypatched here): the
    whole-run call begins its steps with compiled copies of it, the same numbers bit for bit
    (tests/test_actuator_compiled.py, tests/test_coupling_run.py), which a monkeypatch does not reach."""
    monkeypatch.setattr(ElementRun, "applies", staticmethod(lambda integ, callback: False))


def coupling_run(s: float, rack: bool) -> tuple[fm.Result, float]:
    """The run and its largest gap as a fraction of the coupling's tolerance (C14)."""
    model = gear_pair(s, rack)
    res = fm.simulate(model, 0.3, 1e-3)
    return res, float(np.abs(res.coupling("mesh", "gap")).max() / model.elements["coupling"].tol[0])


def actuator_run(s: float) -> tuple[fm.Result, float]:
    """The run and its largest |l - L| as a fraction of the actuator's tolerance."""
    model = boom(s)
    res = fm.simulate(model, 0.3, 1e-3)
    target = s * (L0 + 0.2 * np.sin(3.0 * res.t))
    return res, float(np.abs(res.actuator("cyl", "length") - target).max() / model.elements["actuator"].tol[0])


def assert_alike(runs: dict) -> None:
    """The same angles to round-off, the same iterations on every step, closures within tolerance and the
    same fraction of it (round-off of the gap: its rounding differs with the scaled numbers, a factor 4)."""
    ref, ref_closure = runs[1.0]
    for s, (res, closure) in runs.items():
        assert res.status == "finished", (s, res.status)
        assert np.array_equal(res.newton_iterations, ref.newton_iterations), s
        assert np.abs(res.q[:, 0] - ref.q[:, 0]).max() <= 1e3 * EPS * np.abs(ref.q[:, 0]).max(), s
        assert closure <= 1.0
        assert ref_closure / 4 <= closure <= 4 * ref_closure, (s, closure, ref_closure)


@pytest.mark.parametrize("rack", [False, True], ids=["gears", "rack"])
def test_a_rigid_coupling_closes_alike_at_every_size(rack: bool) -> None:
    assert_alike({s: coupling_run(s, rack) for s in SCALES})


def test_a_prescribed_length_closes_alike_at_every_size() -> None:
    assert_alike({s: actuator_run(s) for s in SCALES})


def test_an_unscaled_coupling_penalty_fails_at_100_m(monkeypatch) -> None:
    """α = κ / β' (no m_ref): at 100 m the penalty is 1e-10 of the inertia's scale (J ~ 1e10 kg m²), the
    multiplier iteration cannot close g even at the largest (escalated, AL11) penalty, and the run fails
    naming the coupling."""
    begin = coupling_module.Couplings.begin_step

    def unscaled(self, model, data, prep, state, ctx):
        st = begin(self, model, data, prep, state, ctx)
        st[:, S] = np.where(data.rigid, st[:, S] / st[:, MREF], 0.0)
        st[:, SMAX] = np.where(data.rigid, st[:, SMAX] / st[:, MREF], 0.0)
        return st
    monkeypatch.setattr(coupling_module.Couplings, "begin_step", unscaled)
    step_by_step(monkeypatch)
    res, _ = coupling_run(100.0, rack=False)
    assert res.status.startswith("failed") and "coupling 'mesh'" in res.status


def test_an_unscaled_actuator_penalty_fails_at_100_m(monkeypatch) -> None:
    """The same for the actuator: its closure stagnates at the largest (escalated, AL11) unscaled penalty and
    the run stops naming the actuator."""
    begin = actuator_module.Actuators.begin_step

    def unscaled(self, model, data, prep, state, ctx):
        st = begin(self, model, data, prep, state, ctx)
        st[:, S] /= st[:, ACT_MREF]
        st[:, SMAX] /= st[:, ACT_MREF]
        return st
    monkeypatch.setattr(actuator_module.Actuators, "begin_step", unscaled)
    step_by_step(monkeypatch)
    res, _ = actuator_run(100.0)
    assert res.status.startswith("failed") and "actuator 'cyl'" in res.status
