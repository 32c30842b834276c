"""The joint forces of the motion as a Result field (docs/motion_forces.md (M14)): ``Result.joint_forces``,
``Result.joint_force(name)`` and ``res.history("hinge.force")``: a sampled controller's held value equals
f at its samples, from the recorded state there, held between them, and its sample instants are visible
(``"hinge.sampled_at"``); a continuous force's value is f at every row; the field survives a save and load.
"""

from __future__ import annotations

import numpy as np
from test_motion_forces import KP, pd, pendulum

import flexmb as fm


def test_held_values_equal_f_at_the_samples_and_the_instants_are_visible() -> None:
    """period = 5 dt, output every step: at the rows t = k period the held value is pd(t, q, u) of that row
    (round-off of pd's arithmetic: it is the same call); between samples it is the last sample's value, and
    ``sampled_at`` is that sample's time, k period to round-off of t."""
    dt, period = 1e-2, 5e-2
    res = fm.simulate(pendulum(pd, period=period), 0.5, dt)
    assert res.joint_force_names == ("hinge",)
    held = res.history("hinge.force")
    at = res.history("hinge.sampled_at")
    np.testing.assert_array_equal(held, res.joint_force("hinge", "force"))
    k = np.rint(res.t / dt).astype(int)
    sample = k % 5 == 0
    assert np.array_equal(at[sample], res.t[sample])  # sampled at that row's state
    np.testing.assert_array_equal(held[sample], pd(res.t[sample], res.q[sample, 0], res.u[sample, 0]))
    last = np.flatnonzero(sample)[np.searchsorted(np.flatnonzero(sample), np.arange(res.t.size), side="right") - 1]
    np.testing.assert_array_equal(held, held[last])  # held between samples
    np.testing.assert_array_equal(at, res.t[last])
    assert np.abs(at - period * np.floor(res.t / period + 1e-9)).max() <= 1e-12 * res.t[-1]
    assert np.ptp(held) > 0.1 * KP * 0.1  # it does change at the samples (the rod swings ~0.1 rad)


def test_continuous_force_recorded_at_every_row_and_saved(tmp_path) -> None:
    """Without a period the recorded value is f at every row's state and ``sampled_at`` the row's time; the
    field and its names come back from a saved result."""
    res = fm.simulate(pendulum(pd), 0.2, 1e-2)
    np.testing.assert_array_equal(res.joint_force("hinge", "force"), pd(res.t, res.q[:, 0], res.u[:, 0]))
    np.testing.assert_array_equal(res.joint_force("hinge", "sampled_at"), res.t)
    path = tmp_path / "r.npz"
    res.save(path)
    back = fm.load(path)
    assert back.joint_force_names == ("hinge",)
    np.testing.assert_array_equal(back.joint_forces, res.joint_forces)
