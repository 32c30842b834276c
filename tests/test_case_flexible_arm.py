"""cases/flexible_arm.py (issue 37.4), shortened: a UR5 with a flexible upper arm on a point-to-point
move. The start is the static equilibrium (no move: the arm stays still); the first natural frequency
equals the cantilever estimate; the residual vibration rings at it and decays at the tube's damping;
the rigid twin's torques are those of the rigid UR5."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import load_case

pytest.importorskip("yourdfpy")

from flexmb.solvers.simulate import simulate  # noqa: E402

arm = load_case("flexible_arm")
SHORT = {"T_move": 0.3, "t_end": 0.6, "dt": 5e-4, "animation": False}  # the animation: tests/test_shapes.py


def test_the_arm_starts_at_rest_in_its_static_equilibrium():
    """Without a move the flexible arm does not move: its start holds gravity (the tool flange stays
    within 1e-9 m, a thousandth of a micrometre, while the sudden weight of an undeflected arm would make
    it swing by its static deflection, 0.07 mm)."""
    p = {**arm.DEFAULTS, **SHORT, "q_end": arm.DEFAULTS["q_start"]}
    model = arm.build(**p)
    res = simulate(model, 0.1, p["dt"])
    tip = res.node_position(arm.TIP)
    assert np.abs(tip - tip[0]).max() < 1e-9


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    p = {**arm.DEFAULTS, **SHORT}
    model = arm.build(**p)
    res = simulate(model, p["t_end"], p["dt"])
    assert res.status == "finished"
    return p, model, res, arm.postprocess(res, model, p, tmp_path_factory.mktemp("flexible_arm"))


def test_first_frequency_equals_the_cantilever_estimate_and_rings_after_the_stop(run):
    p, model, res, s = run
    assert 20 < s["first_natural_frequency_Hz"] < 50
    # the estimate (one cantilever, rigid tip body) and flexmb's 4-element model: within 0.1 %
    assert abs(s["estimate_vs_modal"]) < 1e-3
    # the residual vibration is the first mode's (zero crossings over 0.3 s, about 10 periods)
    assert s["residual_vibration_frequency_Hz"] == pytest.approx(s["first_natural_frequency_Hz"], rel=0.02)
    # and decays as the tube's stiffness-proportional damping gives the first mode: ζ = α ω / 2 (2 %)
    assert s["first_mode_damping_ratio"] == pytest.approx(p["alpha"] * np.pi * s["first_natural_frequency_Hz"])
    assert s["residual_vibration_damping_ratio"] == pytest.approx(s["first_mode_damping_ratio"], rel=0.05)


def test_deflections_and_torques_are_those_of_a_slightly_flexible_arm(run):
    p, model, res, s = run
    # the tube bends: the tool flange moves off the rigid arm's by a fraction of a millimetre
    assert 0.01 < s["tip_static_deflection_start_mm"] < s["tip_max_deflection_during_move_mm"] < 5.0
    assert s["residual_vibration_amplitude_last_100ms_mm"] < s["residual_vibration_amplitude_after_stop_mm"]
    # the torques differ from the rigid arm's by the beam's vibration only: little next to their peaks
    for j in arm.JOINTS[:3]:
        assert s["max_torque_difference_Nm"][j] < 0.2 * s["max_torque_rigid_Nm"][j]
