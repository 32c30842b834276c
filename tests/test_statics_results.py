"""Static equilibrium, result files and the ParaView export of a small mechanism."""

import meshio
import numpy as np
import pytest

import flexmb as fm
from flexmb.results.load import load
from flexmb.results.paraview import write_pvd
from flexmb.solvers.simulate import simulate
from flexmb.solvers.statics import static_equilibrium


def spring_pendulum(k=5.0, k2=3.0):
    mb = fm.ModelBuilder(gravity=(0, -9.81, 0))
    mb.add_node("a", (0, 0, 0))
    mb.add_node("b", (1, 0, 0))
    mb.add_body("rod1", "a", 1.0, (0.5, 0, 0), np.diag([0, 1, 1]) / 12)
    mb.add_body("rod2", "b", 0.5, (0.5, 0, 0), np.diag([0, 1, 1]) * 0.5 / 12)
    mb.add_joint("j1", "revolute", "ground", "a", axis=(0, 0, 1))
    mb.add_joint("j2", "revolute", "a", "b", axis=(0, 0, 1))
    mb.add_joint_spring("j1", k)
    mb.add_joint_spring("j2", k2)
    return mb.compile()


def test_static_equilibrium_satisfies_hand_written_balance():
    k1, k2, g = 5.0, 3.0, 9.81
    st = static_equilibrium(spring_pendulum(k1, k2)).state
    t1, t2 = st.q
    # moment balance of both links about their joints (written by hand)
    m2_arm = 0.5 * g * 0.5 * np.cos(t1 + t2)
    r2 = k2 * t2 + m2_arm
    r1 = k1 * t1 + 1.0 * g * 0.5 * np.cos(t1) + 0.5 * g * 1.0 * np.cos(t1) + m2_arm
    assert abs(r1) < 1e-9 and abs(r2) < 1e-9
    assert -np.pi / 2 < t1 < 0  # sags under gravity


def test_static_equilibrium_is_at_rest_in_dynamics():
    model = spring_pendulum()
    st = static_equilibrium(model).state
    res = simulate(model, 0.2, 1e-3, state=st)
    assert np.abs(res.u).max() < 1e-8


def test_automatic_load_steps_take_one_step_where_it_converges_and_report_it():
    """load_steps="auto" (the default) tries the whole load first: the stiffly sprung pendulum
    takes one step; the soft one (sagging by 1.07 rad) fails at the whole load, halves and takes
    two, to the equilibrium of ten fixed steps."""
    stiff = static_equilibrium(spring_pendulum(20.0, 20.0))
    assert np.array_equal(stiff.load_factors, [1.0]) and stiff.rejected == ()
    assert stiff.iterations.shape == (1,) and 2 <= stiff.iterations[0] <= 10
    model = spring_pendulum()
    res = static_equilibrium(model)
    assert res.rejected == (1.0,) and np.array_equal(res.load_factors, [0.5, 1.0])
    ten = static_equilibrium(model, load_steps=10)
    assert ten.iterations.shape == (10,) and np.array_equal(ten.load_factors, np.arange(1, 11) / 10)
    assert np.abs(res.state.q - ten.state.q).max() < 1e-9
    assert np.array_equal(res.node_position("b"), res.x[1])


def test_automatic_load_steps_give_up_with_the_reason():
    """A body on a vertical prismatic joint without a spring has no static equilibrium under
    gravity: every increment meets a singular tangent; the solver halves down to min_increment and
    says why it gave up."""
    mb = fm.ModelBuilder(gravity=(0, -9.81, 0))
    mb.add_node("slider", (0, 0, 0))
    mb.add_body("slider", "slider", 1.0)
    mb.add_joint("guide", "prismatic", "ground", "slider", axis=(0, 1, 0))
    with pytest.raises(fm.SolverError, match=r"singular tangent.*gave up at load factor 0: .*min_increment = 0\.001"):
        static_equilibrium(mb.compile(), min_increment=1e-3)
    with pytest.raises(ValueError, match="load_steps"):
        static_equilibrium(spring_pendulum(), load_steps=0)


def test_result_round_trip(tmp_path):
    model = spring_pendulum()
    res = simulate(model, 0.05, 1e-3)
    path = res.save(tmp_path / "r.npz")
    back = load(path)
    for name in ("t", "q", "u", "udot", "x", "R", "reactions", "drive_forces", "twists", "joint_points"):
        assert np.array_equal(getattr(back, name), getattr(res, name)), name
    for k in res.energy:
        assert np.array_equal(back.energy[k], res.energy[k])
    assert back.coordinate_names == res.coordinate_names and back.status == res.status
    with np.load(path, allow_pickle=False) as z:  # no pickled object arrays inside
        assert all(z[f].dtype != object for f in z.files)


def test_pvd_export_reads_back_with_meshio(tmp_path):
    model = spring_pendulum()
    res = simulate(model, 0.02, 1e-3)
    pvd = write_pvd(res, model, tmp_path / "pv", every=5)
    text = pvd.read_text()
    files = [line.split('file="')[1].split('"')[0] for line in text.splitlines() if "file=" in line]
    times = [float(line.split('timestep="')[1].split('"')[0]) for line in text.splitlines() if "timestep=" in line]
    assert times == pytest.approx([res.t[i] for i in (0, 5, 10, 15, 20)])
    last = meshio.read(tmp_path / "pv" / files[-1])
    # nodes first: positions equal the result's node positions, bit for bit
    assert np.array_equal(last.points[: model.n_nodes], res.x[-1])
    assert last.cells[0].type == "line"
    assert np.array_equal(last.point_data["e1"][: model.n_nodes], res.R[-1][:, :, 0])
    assert np.array_equal(last.point_data["displacement"][: model.n_nodes], res.x[-1] - res.x[0])
