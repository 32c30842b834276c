"""Equivalent particle models of rigid bodies (Attia 2005 §2–3; issue 5).

Every check compares with a closed form (uniform rod), an independent sum over the particles
written here (mass, centre of mass, inertia, resultant wrench), or the same mechanism built
with ordinary 6x6 rigid bodies and integrated with identical settings."""

import warnings

import numpy as np
import pytest

import flexmb as fm
from flexmb.elements import particles as pk
from flexmb.elements.loads import nodal_wrenches
from flexmb.engine.assembly import Assembler
from flexmb.engine.kinematics import TreePattern, forward_kinematics
from flexmb.rotations import expm
from flexmb.solvers.simulate import simulate
from flexmb.state import State

G = (0.0, -9.81, 0.0)
# negative particle masses are legitimate in several tests; the warning itself is checked in
# test_negative_particle_masses_warn_and_are_refused_where_they_make_mbar_indefinite
pytestmark = pytest.mark.filterwarnings("ignore::flexmb.elements.particles.NegativeParticleMassWarning")


def random_rotation(rng):
    return expm(rng.normal(size=3) * 2.0)


def random_inertia(rng, scale=1.0):
    """A physical inertia tensor: principal moments from random non-negative second moments."""
    e = rng.uniform(0.2, 1.0, 3) * scale  # principal second moments E_i >= 0
    Q = random_rotation(rng)
    E = Q @ np.diag(e) @ Q.T
    return np.trace(E) * np.eye(3) - E


def sums(masses, X):
    """Mass, centre of mass and inertia tensor about it of point masses (written out here)."""
    m = float(np.sum(masses))
    c = sum(mi * x for mi, x in zip(masses, X)) / m
    J = np.zeros((3, 3))
    for mi, x in zip(masses, X):
        d = x - c
        J += mi * (d @ d * np.eye(3) - np.outer(d, d))
    return m, c, J


def particle_positions(model, body):
    b = model.elements["particle_body"].names.index(body)
    nodes = np.array(model.elements["particle_body"].nodes[b])
    return np.array(model.elements["particle_body"].masses[b]), model.X0[nodes] + model.origin  # global (model frame + origin)


# ---------------------------------------------------------------------- 1. uniform rod
def test_uniform_rod_gives_one_sixth_one_sixth_two_thirds():
    m, L = 2.7, 1.3
    mb = fm.ModelBuilder()
    mb.add_node("a", (0.2, 0.1, 0.0))
    mb.add_node("b", (0.2 + L, 0.1, 0.0))
    mb.add_joint("pin", "revolute", "ground", "a", axis=(0, 0, 1))
    mb.add_joint("ab", "fixed", "a", "b")
    nodes = mb.add_particle_body("rod", "a", m, (L / 2, 0, 0), m * L * L / 12, ["a", "b"], kind="rod")
    model = mb.compile()
    masses = np.array(model.elements["particle_body"].masses[0])
    assert nodes == ("a", "b", "rod.m12")
    assert np.allclose(masses, [m / 6, m / 6, 2 * m / 3], rtol=1e-14, atol=0)
    assert np.allclose(model.X0[model.node_index("rod.m12")], (0.2 + L / 2, 0.1, 0.0))


def test_midpoint_particles_on_given_nodes_and_rod_inertia_from_a_tensor():
    mb = fm.ModelBuilder()
    mb.add_node("a", (0, 0, 0))
    mb.add_node("b", (2, 0, 0))
    mb.add_node("mid", (1, 0, 0))
    mb.add_joint("pin", "revolute", "ground", "a", axis=(0, 0, 1))
    mb.add_joint("ab", "fixed", "a", "b")
    mb.add_joint("am", "fixed", "a", "mid")
    with pytest.raises(fm.ModelError, match="midpoint node 'b'.*is not at the midpoint"):
        mb.add_particle_body("rod", "a", 1.0, (1, 0, 0), 1 / 3, ["a", "b"], kind="rod", midpoint_nodes=["b"])
    # a tensor: the transverse moment about the plane normal z (the axial moment is ignored)
    nodes = mb.add_particle_body("rod", "a", 1.0, (1, 0, 0), np.diag([0.05, 0.3, 1 / 3]), ["a", "b"], kind="rod",
                                 midpoint_nodes=["mid"], plane_normal=(0, 0, 1))
    model = mb.compile()
    assert nodes == ("a", "b", "mid") and "rod.m12" not in model.node_names
    assert np.allclose(model.elements["particle_body"].masses[0], [1 / 6, 1 / 6, 2 / 3], rtol=1e-14)


# ---------------------------------------------------------------------- 2. random bodies
def test_random_planar_bodies_reproduce_mass_centre_and_polar_moment():
    rng = np.random.default_rng(1)
    for trial in range(20):
        Q = random_rotation(rng)  # the body's plane: span of Q e1, Q e2
        n = Q[:, 2]
        P2 = rng.uniform(-1, 1, (3, 2))
        P = np.array([Q[:, :2] @ p for p in P2]) + rng.normal(size=3)
        c = P.mean(axis=0) + Q[:, :2] @ rng.uniform(-0.3, 0.3, 2)
        m, J = rng.uniform(0.5, 5), rng.uniform(0.1, 1.0)
        mb = fm.ModelBuilder()
        R = random_rotation(rng)  # the reference node's axes: com is given in them
        mb.add_node("ref", P[0], R)
        mb.add_joint("pin", "revolute", "ground", "ref", axis=n)  # turns in its plane only
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pk.NegativeParticleMassWarning)
            mb.add_particle_body("b", "ref", m, R.T @ (c - P[0]), J, ["ref", P[1], P[2]], kind="planar")
        masses, X = particle_positions(mb.compile(), "b")
        assert np.allclose(X[3], (P[0] + P[2]) / 2)
        ms, cs, Js = sums(masses, X)
        assert abs(ms - m) <= 1e-12 * m
        assert np.linalg.norm(cs - c) <= 1e-12 * np.linalg.norm(P - c, axis=1).max()
        assert abs(n @ Js @ n - J) <= 1e-12 * J, trial


def test_random_spatial_bodies_reproduce_the_full_inertia_tensor():
    rng = np.random.default_rng(2)
    for trial in range(20):
        P = rng.normal(size=(4, 3))
        c = P.mean(axis=0) + 0.3 * rng.normal(size=3)
        m = rng.uniform(0.5, 5)
        J = random_inertia(rng, m)
        R = random_rotation(rng)
        mb = fm.ModelBuilder()
        mb.add_node("ref", P[0], R)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pk.NegativeParticleMassWarning)
            mb.add_particle_body("b", "ref", m, R.T @ (c - P[0]), R.T @ J @ R, ["ref", P[1], P[2], P[3]], kind="spatial")
        masses, X = particle_positions(mb.compile(), "b")
        mids = [(P[i] + P[j]) / 2 for i, j in ((0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3))]
        assert np.allclose(X, np.vstack([P, mids]), atol=1e-14)
        ms, cs, Js = sums(masses, X)
        assert abs(ms - m) <= 1e-12 * m
        assert np.linalg.norm(cs - c) <= 1e-12 * np.linalg.norm(P - c, axis=1).max()
        assert np.abs(Js - J).max() <= 1e-12 * np.abs(J).max(), trial


def test_general_particle_sets_are_solved_in_the_least_norm_sense():
    rng = np.random.default_rng(3)
    P = rng.normal(size=(13, 3))
    m, c, J = 2.0, P.mean(axis=0) + 0.1, random_inertia(rng, 2.0)
    mb = fm.ModelBuilder()
    mb.add_node("ref", (0, 0, 0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pk.NegativeParticleMassWarning)
        mb.add_particle_body("g", "ref", m, c, J, [tuple(p) for p in P], kind="general")
    masses, X = particle_positions(mb.compile(), "g")
    ms, cs, Js = sums(masses, X)
    assert abs(ms - m) < 1e-12 * m and np.abs(cs - c).max() < 1e-12 and np.abs(Js - J).max() < 1e-12 * np.abs(J).max()
    # least norm: no other solution is shorter; the independent check is the orthogonality of
    # the solution to the null space of the 10 x 13 condition matrix
    A = np.vstack([np.ones(13), X.T, X[:, 0] ** 2, X[:, 1] ** 2, X[:, 2] ** 2, X[:, 0] * X[:, 1], X[:, 1] * X[:, 2],
                   X[:, 2] * X[:, 0]])
    null = np.linalg.svd(A)[2][10:]
    assert np.abs(null @ masses).max() < 1e-10 * np.linalg.norm(masses)
    # planar general set: five particles in the plane z = 1, planar conditions
    Q = rng.uniform(-1, 1, (5, 2))
    pts = [(x, y, 1.0) for x, y in Q]
    mb = fm.ModelBuilder()
    mb.add_node("ref", (0, 0, 1.0))
    mb.add_joint("slide", "prismatic", "ground", "ref", axis=(1, 0, 0))
    mb.add_particle_body("h", "ref", 1.5, (0.1, -0.1, 0), 0.4, pts, kind="general", plane_normal=(0, 0, 1))
    masses, X = particle_positions(mb.compile(), "h")
    ms, cs, Js = sums(masses, X)
    assert abs(ms - 1.5) < 1e-12 and np.abs(cs - (0.1, -0.1, 1.0)).max() < 1e-12 and abs(Js[2, 2] - 0.4) < 1e-12


# ---------------------------------------------------------------------- 3. equivalence in motion
L1, L2, M1, M2 = 1.0, 0.8, 1.0, 1.5
COM2, J2 = np.array([L2 / 2, 0.1, 0.0]), 0.06


def double_pendulum(particles: bool):
    """Link 1: a uniform rod (rod particles); link 2: a plate with its centre of mass off the
    line of its joints (planar particles at the elbow, a point off the line, the tip)."""
    mb = fm.ModelBuilder(gravity=G)
    mb.add_node("a", (0, 0, 0))
    mb.add_node("b", (L1, 0, 0))
    mb.add_joint("j1", "revolute", "ground", "a", axis=(0, 0, 1), q0=-0.5, u0=0.3)
    mb.add_joint("j2", "revolute", "a", "b", axis=(0, 0, 1), q0=1.2)
    if particles:
        mb.add_node("c", (L1 + L2, 0, 0))
        mb.add_joint("tip", "fixed", "b", "c")
        mb.add_particle_body("link1", "a", M1, (L1 / 2, 0, 0), M1 * L1**2 / 12, ["a", "b"], kind="rod")
        mb.add_particle_body("link2", "b", M2, COM2, J2, ["b", (L1 + 0.5, 0.3, 0.0), "c"], kind="planar")
    else:
        mb.add_body("link1", "a", M1, (L1 / 2, 0, 0), np.diag([0, 1, 1]) * M1 * L1**2 / 12)
        mb.add_body("link2", "b", M2, COM2, np.diag([0.02, 0.04, J2]))
    return mb.compile()


def test_double_pendulum_with_particles_moves_like_the_rigid_one():
    rigid, part = double_pendulum(False), double_pendulum(True)
    assert len(part.elements["particle_body"].nodes[1]) == 4
    ra = simulate(rigid, 0.6, 2e-3, rho_inf=0.9)
    rb = simulate(part, 0.6, 2e-3, rho_inf=0.9)
    assert ra.status == rb.status == "finished"
    assert np.ptp(ra.coordinate("j2.q")) > 1.0  # it really swings (2.26 rad)
    for name in ("j1.q", "j2.q"):
        assert np.abs(ra.coordinate(name) - rb.coordinate(name)).max() < 1e-8
    assert np.abs(ra.energy["kinetic"] - rb.energy["kinetic"]).max() < 1e-8 * ra.energy["kinetic"].max()


def hanging_block(particles: bool):
    """A spatial block on the end of a horizontal cantilever beam, pushed sideways: the beam
    bends and twists in 3-D. The particle model puts a particle on the beam's end node."""
    sec = fm.BeamSection(E=2e9, G=0.8e9, A=1e-3, Iy=1e-7, Iz=2e-7, J=2e-7, rho=2000.0)
    mb = fm.ModelBuilder(gravity=G)
    nodes = mb.add_flexible_link("beam", (0, 0, 0), (1.0, 0, 0), 3, sec, damping=1e-3)
    mb.add_joint("clamp", "fixed", "ground", nodes[0])
    mb.add_load("push", nodes[-1], force=lambda t: np.array([0.0, 0.0, 3.0 * np.sin(20 * t)]))
    m, com = 2.0, np.array([0.1, -0.05, 0.02])
    J = np.array([[0.02, 0.003, -0.001], [0.003, 0.015, 0.002], [-0.001, 0.002, 0.025]])
    if particles:
        mb.add_particle_body("block", nodes[-1], m, com, J, [nodes[-1], (1.2, 0.0, 0.0), (1.0, -0.2, 0.0), (1.1, 0.0, 0.15)],
                             kind="spatial")
    else:
        mb.add_body("block", nodes[-1], m, com, J)
    return mb.compile()


def test_block_on_a_flexible_beam_moves_like_the_rigid_block():
    rigid, part = hanging_block(False), hanging_block(True)
    ra = simulate(rigid, 0.2, 1e-3, rho_inf=0.8)
    rb = simulate(part, 0.2, 1e-3, rho_inf=0.8)
    assert ra.status == rb.status == "finished"
    tip_a, tip_b = ra.node_position("beam.3"), rb.node_position("beam.3")
    assert np.ptp(tip_a[:, 1]) > 1e-3 and np.ptp(tip_a[:, 2]) > 1e-3  # bends both ways
    assert np.abs(tip_a - tip_b).max() < 1e-8
    assert np.abs(ra.R[:, -1] - rb.R[:, rb.node_names.index("beam.3")]).max() < 1e-8


# ---------------------------------------------------------------------- 4. shared joint nodes
def chain(particles: bool, n=3):
    """A hanging chain of spatial bodies joined by spherical joints; node k is the centre of
    joint k, the top particle of body k and the bottom particle of body k-1."""
    rng, rng_places = np.random.default_rng(7), np.random.default_rng(8)
    mb = fm.ModelBuilder(gravity=G)
    pts = [np.array([0.3 * k, -0.5 * k, 0.1 * k]) for k in range(n + 1)]
    for k in range(n + 1):
        mb.add_node(f"n{k}", pts[k])
    for k in range(n):
        parent = "ground" if k == 0 else f"n{k - 1}"
        mb.add_joint(f"s{k}", "spherical", parent, f"n{k}", q0=0.4 * rng.normal(size=3), u0=rng.normal(size=3))
    mb.add_joint("end", "fixed", f"n{n - 1}", f"n{n}")
    for k in range(n):
        m = rng.uniform(0.5, 2)
        com = 0.5 * (pts[k + 1] - pts[k]) + 0.05 * rng.normal(size=3)
        J = random_inertia(rng, 0.05 * m)
        if particles:
            extra = [tuple(pts[k] + rng_places.normal(size=3) * 0.2) for _ in range(2)]
            mb.add_particle_body(f"b{k}", f"n{k}", m, com, J, [f"n{k}", f"n{k + 1}", *extra], kind="spatial")
        else:
            mb.add_body(f"b{k}", f"n{k}", m, com, J)
    return mb.compile()


def test_chain_sharing_joint_nodes_moves_like_the_rigid_chain():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pk.NegativeParticleMassWarning)
        rigid, part = chain(False), chain(True)
    # joint node n1 carries particles of bodies b0 (bottom) and b1 (top)
    i1 = part.node_index("n1")
    assert i1 in part.elements["particle_body"].nodes[0] and i1 in part.elements["particle_body"].nodes[1]
    pb = part.elements["particle_body"]
    on_n1 = [m for nodes, ms in zip(pb.nodes, pb.masses) for n, m in zip(nodes, ms) if n == i1]
    asm = Assembler(part)
    ev = asm.evaluate(part.initial_state())
    assert len(on_n1) == 2 and ev.Mb[i1, 0, 0] == pytest.approx(sum(on_n1), rel=1e-12)
    # same generalized mass matrix at a random state (B^T M B, Attia eq. 6.3)
    rng = np.random.default_rng(0)
    balls = expm(rng.normal(size=(3, 3)))
    st = State(0.0, np.zeros(0), balls, rng.normal(size=9), np.zeros(9))
    Ma = Assembler(rigid).mbar(Assembler(rigid).evaluate(st)).toarray()
    Mb = asm.mbar(asm.evaluate(st)).toarray()
    assert np.abs(Ma - Mb).max() < 1e-12 * np.abs(Ma).max()
    ra = simulate(rigid, 0.6, 2e-3, rho_inf=0.9)
    rb = simulate(part, 0.6, 2e-3, rho_inf=0.9)
    assert ra.status == rb.status == "finished"
    for k in range(4):
        xa, xb = ra.node_position(f"n{k}"), rb.node_position(f"n{k}")
        assert np.abs(xa - xb).max() < 1e-8
    assert np.ptp(ra.node_position("n3")[:, 0]) > 0.1


# ---------------------------------------------------------------------- 5. forces and couples
def wrench(forces, X, o):
    """Resultant force and moment about o of point forces (independent sum)."""
    return sum(forces), sum(np.cross(x - o, f) for x, f in zip(X, forces))


@pytest.mark.parametrize("k", [2, 3, 4])
def test_force_and_couple_distribution_keeps_the_resultant_wrench(k):
    rng = np.random.default_rng(k)
    for _ in range(10):
        X = rng.normal(size=(k, 3))
        if k == 2:  # rod: the point on the line, the couple normal to it
            P = X[0] + rng.uniform(-1, 2) * (X[1] - X[0])
            e = (X[1] - X[0]) / np.linalg.norm(X[1] - X[0])
            C = np.cross(e, rng.normal(size=3))
        elif k == 3:  # planar: the point in the plane
            P = X[0] + rng.normal() * (X[1] - X[0]) + rng.normal() * (X[2] - X[0])
            C = rng.normal(size=3)
        else:
            P, C = rng.normal(size=3), rng.normal(size=3)
        f = rng.normal(size=3)
        alpha, miss = pk.force_distribution(X[None], P[None])
        Gc, Pc = pk.couple_distribution(X[None])
        assert miss[0] < 1e-12 and np.abs(Pc[0] @ C - C).max() < 1e-12
        forces = [alpha[0, i] * f + Gc[0, i] @ C for i in range(k)]
        o = rng.normal(size=3) * 3
        F, Mo = wrench(forces, X, o)
        scale = np.linalg.norm(f) * (1 + np.linalg.norm(P - o)) + np.linalg.norm(C)
        assert np.abs(F - f).max() < 1e-12 * scale
        assert np.abs(Mo - (np.cross(P - o, f) + C)).max() < 1e-12 * scale


def test_particle_loads_act_like_the_wrench_in_any_position():
    """Force at a body point (fixed global direction) and a body-fixed couple, distributed as
    nodal loads on the particles: at a random state the nodal forces have the applied
    resultant, and the moment about any point is that of the force at the moved point plus
    the turned couple."""
    rng = np.random.default_rng(11)
    mb = fm.ModelBuilder()
    mb.add_node("ref", (0.1, 0.2, 0.3), random_rotation(rng))
    mb.add_node("j", (0.6, 0.2, 0.3))
    mb.add_joint("free", "free", "ground", "ref")
    mb.add_joint("pin", "spherical", "ref", "j")  # j's frame does not turn with the body
    J = random_inertia(rng)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pk.NegativeParticleMassWarning)
        mb.add_particle_body("b", "ref", 2.0, (0.1, 0, 0), J, ["ref", "j", (0.2, 0.7, 0.1), (0.3, 0.1, 0.9)], kind="spatial")
    point, f0, C0 = np.array([0.3, -0.2, 0.4]), np.array([1.0, -2.0, 0.5]), np.array([0.3, 0.7, -1.1])
    mb.add_particle_load("push", "b", force=lambda t: f0 * (1 + t), point=point, couple=lambda t: C0 * np.cos(t))
    model = mb.compile(require_mass=False)  # j's own rotation moves no mass: loads and kinematics only
    st = model.initial_state()
    st.q[:] = rng.normal(size=st.q.size)
    st.balls = expm(rng.normal(size=(2, 3)))
    t = 0.7
    kin = forward_kinematics(model, st, TreePattern(model))
    w = nodal_wrenches(model.loads, t, kin.R, model.n_nodes)
    assert np.abs(w[:, 3:]).max() == 0.0  # forces only (Attia: no rotational coordinates)
    r = model.node_index("ref")
    xr, Rr = kin.x[r], kin.R[r]
    xP = xr + Rr @ point
    o = rng.normal(size=3)
    F, Mo = wrench(w[:, :3], kin.x, o)
    f, C = f0 * (1 + t), Rr @ (C0 * np.cos(t))
    assert np.abs(F - f).max() < 1e-12 * 10
    assert np.abs(Mo - (np.cross(xP - o, f) + C)).max() < 1e-12 * 10


def test_free_body_under_particle_loads_moves_like_the_rigid_body_under_the_wrench():
    """End to end: a free spatial body pushed by a force at a body point and a body-fixed
    couple, once as particles with distributed loads, once as a rigid body with the force on
    a node at the point and the moment on the body node."""
    m, com, J = 1.5, np.array([0.1, 0.05, 0.0]), np.diag([0.05, 0.04, 0.07])
    point = np.array([0.2, 0.3, -0.1])
    force = lambda t: np.array([np.sin(3 * t), 1.0, 0.5 * t])  # noqa: E731
    couple = lambda t: np.array([0.2, -0.1 * t, 0.3])  # noqa: E731
    out = []
    for particles in (False, True):
        mb = fm.ModelBuilder()
        mb.add_node("ref", (0, 0, 0))
        mb.add_joint("fly", "free", "ground", "ref", u0=[0.1, 0, 0, 0.5, -0.3, 1.0])
        if particles:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", pk.NegativeParticleMassWarning)
                mb.add_particle_body("b", "ref", m, com, J, ["ref", (0.4, 0, 0), (0, 0.4, 0), (0, 0, 0.4)], kind="spatial")
            mb.add_particle_load("w", "b", force=force, point=point, couple=couple)
        else:
            mb.add_body("b", "ref", m, com, J)
            mb.add_node("P", point)
            mb.add_joint("att", "fixed", "ref", "P")
            mb.add_load("f", "P", force=force)
            mb.add_load("c", "ref", moment=couple, follower=True)
        res = simulate(mb.compile(), 0.4, 2e-3, rho_inf=0.9)
        assert res.status == "finished"
        out.append((res.node_position("ref"), res.R[:, 0]))
    assert np.abs(out[0][0]).max() > 0.05
    assert np.abs(out[0][0] - out[1][0]).max() < 1e-8 and np.abs(out[0][1] - out[1][1]).max() < 1e-8


# ---------------------------------------------------------------------- 6. bad input
def builder_with(*points):
    mb = fm.ModelBuilder()
    for i, p in enumerate(points):
        mb.add_node(f"n{i}", p)
        if i:
            mb.add_joint(f"f{i}", "fixed", "n0", f"n{i}")
    return mb


def test_collinear_planar_primaries_are_refused_naming_the_particle_to_move():
    mb = builder_with((0, 0, 0), (1, 0, 0), (2, 0, 0))
    with pytest.raises(fm.ModelError, match=r"particle body 'plate'.*collinear.*move particle 2 \(node 'n1'\)|"
                                            r"particle body 'plate'.*collinear.*move particle 2"):
        mb.add_particle_body("plate", "n0", 1.0, (1, 0, 0), 0.1, ["n0", "n1", "n2"])
    with pytest.raises(fm.ModelError, match="'plate'.*coincide.*move particle 3"):
        mb.add_particle_body("plate", "n0", 1.0, (0, 0, 0), 0.1, ["n0", "n1", "n0"])
    assert "plate.m13" not in mb.nodes  # nothing half-built


def test_coplanar_spatial_primaries_are_refused_naming_the_particle_to_move():
    mb = builder_with((0, 0, 0), (1, 0, 0), (0, 1, 0), (1, 1, 0))
    with pytest.raises(fm.ModelError, match="'blk'.*coplanar.*move particle 4 out of the plane of particles 1, 2 and 3"):
        mb.add_particle_body("blk", "n0", 1.0, (0.5, 0.5, 0), np.eye(3) * 0.1, ["n0", "n1", "n2", "n3"], kind="spatial")
    with pytest.raises(fm.ModelError, match="'blk'.*collinear.*move particle 3"):
        mb.add_particle_body("blk", "n0", 1.0, (0.5, 0.5, 0), np.eye(3) * 0.1, ["n0", "n1", (2, 0, 0), (0, 0, 1)],
                             kind="spatial")


def test_particle_on_a_node_that_does_not_move_with_the_body_is_refused():
    sec = fm.BeamSection(E=1e9, G=4e8, A=1e-3, Iy=1e-7, Iz=1e-7, J=2e-7, rho=1000.0)
    mb = fm.ModelBuilder(gravity=G)
    nodes = mb.add_flexible_link("beam", (0, 0, 0), (1, 0, 0), 2, sec)
    mb.add_joint("clamp", "fixed", "ground", nodes[0])
    # the plate sits on the beam's end node, but one particle is on the beam's middle node
    mb.add_particle_body("plate", nodes[-1], 1.0, (0.1, 0.1, 0), 0.05, [nodes[-1], nodes[1], (1.0, 0.4, 0)])
    with pytest.raises(fm.ModelError, match=r"particle body 'plate': particle 2 is on node 'beam.1', which does not move"):
        mb.compile()


def test_joint_centre_nodes_move_with_the_body_other_joint_children_do_not():
    def build(kind, point):
        mb = fm.ModelBuilder()
        mb.add_node("a", (0, 0, 0))
        mb.add_node("b", (1, 0, 0))
        mb.add_joint("pin", "revolute", "ground", "a", axis=(0, 0, 1))
        mb.add_joint("ab", kind, "a", "b", point=point, axis=None if kind == "spherical" else (0, 0, 1))
        mb.add_particle_body("rod", "a", 1.0, (0.5, 0, 0), 1 / 12, ["a", "b"], kind="rod")
        return mb.compile(require_mass=False)  # b's own rotation moves no mass: the placement check only

    build("revolute", (1, 0, 0))  # joint centre at b: b is a point of the rod
    build("spherical", (1, 0, 0))
    with pytest.raises(fm.ModelError, match="particle 2 is on node 'b'.*coordinate 'ab.q'"):
        build("revolute", (0.5, 0, 0))  # b swings about another point of the rod
    with pytest.raises(fm.ModelError, match="particle 2 is on node 'b', which does not move"):
        build("prismatic", None)


@pytest.mark.parametrize("inertia,kind,word", [
    (np.diag([1.0, 1.0, 3.0]), "spatial", "triangle inequality"),
    (np.diag([1.0, -0.1, 1.0]), "spatial", "not positive semi-definite"),
    (np.array([[1.0, 0.5, 0], [0.1, 1, 0], [0, 0, 1]]), "spatial", "not symmetric"),
    (-0.2, "planar", "must be a finite number >= 0"),
    (0.3, "spatial", "full 3x3 inertia tensor"),
    (np.diag([0.0, 0.0, 3.0]), "planar", "triangle inequality"),
])
def test_non_physical_inertia_is_refused_naming_the_body(inertia, kind, word):
    mb = builder_with((0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1))
    prim = ["n0", "n1", "n2", "n3"] if kind == "spatial" else ["n0", "n1", "n2"]
    with pytest.raises(fm.ModelError, match=f"particle body 'lump'.*{word}"):
        mb.add_particle_body("lump", "n0", 1.0, (0.2, 0.2, 0.0), inertia, prim, kind=kind)


def test_planar_and_rod_centre_of_mass_must_lie_in_the_model_plane_or_line():
    mb = builder_with((0, 0, 0), (1, 0, 0), (0, 1, 0))
    with pytest.raises(fm.ModelError, match="'p'.*centre of mass is 0.2 out of the particles' plane"):
        mb.add_particle_body("p", "n0", 1.0, (0.2, 0.2, 0.2), 0.1, ["n0", "n1", "n2"])
    with pytest.raises(fm.ModelError, match="'r'.*centre of mass is 0.2 off the line"):
        mb.add_particle_body("r", "n0", 1.0, (0.5, 0.2, 0.0), 0.1, ["n0", "n1"], kind="rod")
    with pytest.raises(fm.ModelError, match="'g'.*no particle masses.*reproduce"):
        mb.add_particle_body("g", "n0", 1.0, (0.2, 0.2, 0.0), np.eye(3) * 0.1, ["n0", "n1", "n2"], kind="general")


def negative_plate(joint):
    """Primaries far from a compact body (J = 0.01, centre of mass 0.3 towards particle 2):
    Attia's 4x4 system gives m1 = m3 = -0.1, m2 = 0.3, m4 = 0.9; the particles' inertia about
    the in-plane axis e2 is then -0.2 (Σ m x² over particles 1 and 3)."""
    mb = fm.ModelBuilder(gravity=G)
    mb.add_node("c", (0, 0, 0))
    mb.add_joint("hold", joint, "ground", "c", axis=None if joint == "spherical" else (0, 0, 1))
    with pytest.warns(pk.NegativeParticleMassWarning, match=r"'plate': negative particle masses \(particle 1.*-0.1 kg.*"
                                                             r"still dynamically equivalent"):
        mb.add_particle_body("plate", "c", 1.0, (0, 0.3, 0), 0.01, [(-1, 0, 0), (0, 1, 0), (1, 0, 0)])
    return mb


def test_negative_particle_masses_warn_and_are_refused_where_they_make_mbar_indefinite():
    model = negative_plate("revolute").compile()  # turns only about the plane normal: fine
    assert np.allclose(model.elements["particle_body"].masses[0], [-0.1, 0.3, -0.1, 0.9], atol=1e-14)
    mbar = Assembler(model).mbar(Assembler(model).evaluate(model.initial_state())).toarray()
    # M̄ of the pin is the rigid plate's moment about the pin: J + m |c|^2
    assert mbar[0, 0] == pytest.approx(0.01 + 0.09, rel=1e-12)
    mb = negative_plate("spherical")
    with pytest.raises(fm.ModelError, match=r"particle body 'plate'.*negative particle masses at nodes 'plate.1' \(-0.1 kg\)"
                                            r".*generalized mass matrix is indefinite"):
        with pytest.warns(UserWarning, match="can rotate out of its plane"):
            mb.compile()


def test_loads_that_the_particles_cannot_carry_are_refused():
    mb = builder_with((0, 0, 0), (1, 0, 0), (0, 1, 0))
    mb.add_particle_body("p", "n0", 1.0, (0.3, 0.3, 0), 0.1, ["n0", "n1", "n2"])
    mb.add_particle_body("r", "n0", 1.0, (0.5, 0, 0), 0.1, ["n0", "n1"], kind="rod")
    with pytest.raises(fm.ModelError, match="'off'.*not in the plane of the primary particles"):
        mb.add_particle_load("off", "p", force=(1, 0, 0), point=(0.2, 0.2, 0.5))
    with pytest.raises(fm.ModelError, match="'twist'.*couple about the rod's axis"):
        mb.add_particle_load("twist", "r", couple=(1.0, 0, 0))
    with pytest.raises(fm.ModelError, match="unknown particle body 'q'"):
        mb.add_particle_load("x", "q", force=(1, 0, 0))
