"""make_flexible (flexmb/builder/flexible.py, issue 37): a rigid link replaced by beam elements keeps
its mass and centre of mass exactly and its inertia where a beam can carry it; with a very stiff
section the robot moves as the rigid one.

The mass properties are checked independently of the module's own sums: the 6×6 spatial inertia of
the flexible link is assembled from the beam elements' consistent mass matrices as flexmb's beam
element forms them (elements/beam/exact.py: local_mass, global_mass) for rigid twists of their nodes,
plus the end bodies as stored in the builder, and compared with the rigid link's.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("yourdfpy")

import flexmb as fm  # noqa: E402
from flexmb.elements.beam.exact import global_mass, local_mass  # noqa: E402
from flexmb.errors import URDFWarning  # noqa: E402
from flexmb.solvers.simulate import simulate  # noqa: E402

UR5 = Path(__file__).resolve().parent.parent / "cases" / "robots" / "ur5" / "ur5_robot.urdf"
UR5_JOINTS = ("shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint",
              "wrist_3_joint")


def tube(D: float, t: float, E: float = 70e9, G: float = 26e9, rho: float = 2700.0) -> fm.BeamSection:
    ro, ri = D / 2, D / 2 - t
    A, I = np.pi * (ro**2 - ri**2), np.pi / 4 * (ro**4 - ri**4)
    return fm.BeamSection(E=E, G=G, A=A, Iy=I, Iz=I, J=2 * I, rho=rho)


def ur5() -> fm.ModelBuilder:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", URDFWarning)
        return fm.from_urdf(UR5)


def cross_matrix(p: np.ndarray) -> np.ndarray:
    return np.array([[0, -p[2], p[1]], [p[2], 0, -p[0]], [-p[1], p[0], 0]])


def body_inertia6(mb, name: str) -> np.ndarray:
    """Spatial inertia (twist = velocity of the point at the global origin, angular velocity) of a body."""
    b = mb.bodies[name]
    nd = mb.nodes[b.node]
    p = nd.position + nd.rotation @ b.com
    J = nd.rotation @ b.inertia @ nd.rotation.T
    P = cross_matrix(p)
    return np.block([[b.mass * np.eye(3), -b.mass * P], [b.mass * P, J - b.mass * P @ P]])


def beam_inertia6(mb, name: str) -> np.ndarray:
    """Spatial inertia of a beam element moving rigidly, from its 12×12 consistent mass: node i's
    velocity v + ω × x_i and angular velocity ω (the element's kinetic energy ½ Vᵀ M6 V)."""
    bm = mb.beams[name]
    s = bm.section
    M = global_mass(bm.frame[None], local_mass(bm.length, s.rho * s.A, s.rho * s.Iy, s.rho * s.Iz))[0]
    G = np.zeros((12, 6))
    for i, nd in enumerate((bm.node_a, bm.node_b)):
        G[6 * i:6 * i + 3, :3] = np.eye(3)
        G[6 * i:6 * i + 3, 3:] = -cross_matrix(mb.nodes[nd].position)
        G[6 * i + 3:6 * i + 6, 3:] = np.eye(3)
    return G.T @ M @ G


def test_mass_centre_of_mass_and_inertia_are_kept():
    mb = ur5()
    rigid = body_inertia6(mb, "upper_arm_link")
    rep = fm.make_flexible(mb, "upper_arm_link", 4, tube(0.09, 0.004), end=(0, 0, 0.425))
    flexible = sum(beam_inertia6(mb, e) for e in rep.elements) + sum(body_inertia6(mb, b) for b in rep.bodies)
    assert rep.bodies == ("upper_arm_link.a", "upper_arm_link.b") and "upper_arm_link" not in mb.bodies
    m = rigid[0, 0]
    assert abs(flexible[0, 0] - m) <= 1e-15 * m  # mass
    assert np.abs(flexible[:3, 3:] - rigid[:3, 3:]).max() <= 1e-15 * m  # m × centre of mass (m)
    assert np.abs(flexible - rigid).max() <= 1e-14 * np.abs(rigid).max()  # and the inertia
    assert not rep.inertia_projected and 0 < rep.kappa < 1
    assert rep.inertia_change < 1e-14
    assert rep.beam_mass == pytest.approx(2700 * np.pi * (0.045**2 - 0.041**2) * 0.425, rel=1e-14)
    assert rep.rehung == ("elbow_joint",) and mb.joints["elbow_joint"].parent == rep.nodes[-1]
    assert rep.nodes[0] == "upper_arm_link"  # the beam starts at the link's own node
    assert "inertia kept" in rep.text()
    mb.compile()


def test_a_projected_inertia_is_said():
    """The beam between the joint frames (the default: slanted, the elbow is 0.12 m aside) of a large
    tube: its own inertia exceeds what the link has in some direction, so the end bodies get the nearest
    physical inertia and the report says by how much; mass and centre of mass stay exact."""
    mb = ur5()
    rigid = body_inertia6(mb, "upper_arm_link")
    rep = fm.make_flexible(mb, "upper_arm_link", 3, tube(0.09, 0.004))
    flexible = sum(beam_inertia6(mb, e) for e in rep.elements) + sum(body_inertia6(mb, b) for b in rep.bodies)
    m = rigid[0, 0]
    assert abs(flexible[0, 0] - m) <= 1e-15 * m and np.abs(flexible[:3, 3:] - rigid[:3, 3:]).max() <= 1e-15 * m
    assert rep.inertia_projected and rep.kappa > 0.99  # the end masses pulled (almost) to the middle
    change = np.abs(flexible - rigid).max() / np.abs(rigid).max()
    assert change == pytest.approx(rep.inertia_change * np.abs(rep.inertia).max() / np.abs(rigid).max(), rel=1e-6)
    assert 1e-4 < rep.inertia_change < 1e-2 and "inertia changed by" in rep.text()
    mb.compile()


def test_a_beam_started_off_the_link_frame_hangs_on_a_fixed_joint():
    mb = ur5()
    rigid = body_inertia6(mb, "upper_arm_link")
    rep = fm.make_flexible(mb, "upper_arm_link", 3, tube(0.07, 0.003), start=(0, 0, 0.05), end=(0, 0, 0.425))
    flexible = sum(beam_inertia6(mb, e) for e in rep.elements) + sum(body_inertia6(mb, b) for b in rep.bodies)
    assert np.abs(flexible - rigid).max() <= 1e-14 * np.abs(rigid).max() and not rep.inertia_projected
    assert rep.nodes[0] == "upper_arm_link.0" and mb.joints["upper_arm_link.start"].kind.name == "fixed"
    assert mb.joints["upper_arm_link.start"].parent == "upper_arm_link"
    assert np.allclose(mb.nodes["upper_arm_link.0"].position,
                       mb.nodes["upper_arm_link"].position + mb.nodes["upper_arm_link"].rotation @ [0, 0, 0.05])
    mb.compile()


def test_refusals():
    mb = ur5()
    with pytest.raises(fm.ModelError, match="heavier than the rigid link"):
        fm.make_flexible(mb, "upper_arm_link", 2, tube(0.2, 0.02, rho=7850))
    with pytest.raises(fm.ModelError, match="has no body"):
        fm.make_flexible(mb, "tool0", 2, tube(0.05, 0.004), end=(0, 0, 0.1))
    with pytest.raises(fm.ModelError, match="2 joints hang on it"):
        fm.make_flexible(mb, "wrist_3_link", 2, tube(0.05, 0.004))
    with pytest.raises(fm.ModelError, match="unknown node"):
        fm.make_flexible(mb, "elbow", 2, tube(0.05, 0.004))


def falling_ur5(flexible: bool, dt: float):
    """The UR5 released from its zero pose (arm stretched out horizontally), no drives: it falls and
    turns about every joint for 1 s."""
    mb = ur5()
    if flexible:  # aluminium 10⁴ times stiffer: the link deflects by ~1e-8 of its length
        mb.make_flexible("upper_arm_link", 1, tube(0.09, 0.004, E=70e13, G=26e13), end=(0, 0, 0.425))
    res = simulate(mb.compile(), t_end=1.0, dt=dt, output_every=int(round(0.01 / dt)))
    assert res.status == "finished"
    return np.stack([res.coordinate(f"{j}.q") for j in UR5_JOINTS], axis=1)


def test_a_very_stiff_flexible_link_moves_as_the_rigid_one():
    """Joint angles over 1 s of the falling UR5 with its upper arm a very stiff beam, against the rigid
    UR5 (step 2.5e-5 s: within 4e-8 rad of its step-converged motion): within 1e-6 rad at every 10 ms.
    Measured: 8.2e-7 rad at the flexible run's step of 1e-4 s (the rigid model at that step: 6.4e-7)."""
    rigid = falling_ur5(False, 2.5e-5)
    assert np.abs(rigid[-1] - rigid[0]).max() > 0.5  # it moves
    flexible = falling_ur5(True, 1e-4)
    assert np.abs(flexible - rigid).max() <= 1e-6
