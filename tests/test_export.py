"""ParaView export (issue 4) of two seed mechanisms — Sharma & Saha's driven arm (rigid bodies)
and the four-bar with a beam coupler (beams, loop) — in every format:

* read back with meshio, every time step gives the written points, cells and every point and
  cell array bit for bit, and they are the result's own numbers (node positions, node axes,
  section forces);
* real ParaView (Debian's pvbatch running tests/paraview_probe.py) opens every export with
  the right time values, points, cells and arrays, and its sums over the data it read match
  ours. Skipped when pvbatch is absent, except with FLEXMB_REQUIRE_PARAVIEW=1 (CI), where
  that is a failure.
"""

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import meshio
import numpy as np
import pytest
from meshio.xdmf import TimeSeriesReader

from flexmb.app.casefile import load_case
from flexmb.elements.beam import SECTION_FORCES as FORCE_NAMES
from flexmb.elements.cut_family import CUT_OUTPUTS
from flexmb.elements.particle_body import ParticleBodyData
from flexmb.results.drawing import cell_kinds, drawing_of, frames, lines
from flexmb.results.paraview import write_pvd, write_xdmf
from flexmb.solvers.simulate import simulate

ROOT = Path(__file__).resolve().parents[1]
PROBE = Path(__file__).resolve().parent / "paraview_probe.py"
POINT_ARRAYS = {"displacement": 3, "velocity": 3, "angular_velocity": 3, "e1": 3, "e2": 3, "e3": 3}
# the cut forces of bushings and rigid cuts (zero-sized on models without cuts: zero on every cell)
CUT_ARRAYS = tuple(c for o in CUT_OUTPUTS for c in o.columns)
# the spring-dampers' length, rate and force (docs/spring_damper.md §5; zero on models without them)
SPRING_DAMPER_ARRAYS = ("spring_damper_length", "spring_damper_rate", "spring_damper_force")
# the rotational spring-dampers' angle, rate and torque (docs/rotational_spring_damper.md; zero without them)
ROTATIONAL_ARRAYS = ("rotational_spring_damper_angle", "rotational_spring_damper_rate", "rotational_spring_damper_torque")
CELL_ARRAYS = {**{k: 1 for k in FORCE_NAMES}, **{k: 1 for k in CUT_ARRAYS}, **{k: 1 for k in SPRING_DAMPER_ARRAYS},
               **{k: 1 for k in ROTATIONAL_ARRAYS}, "strain_energy": 1, "cell_kind": 1}
EVERY = 3


@pytest.fixture(scope="module")
def seeds():
    """Short runs of the two seed mechanisms (result, model)."""
    out = {}
    for name, path, t_end, dt in (("arm", ROOT / "cases" / "sharma_saha_arm.py", 0.05, 2e-3),
                                  ("four_bar", ROOT / "tests" / "cases" / "four_bar.py", 0.03, 2e-3)):
        case = load_case(path)
        model = case.build(case.defaults)
        res = simulate(model, t_end, dt, rho_inf=case.defaults["rho_inf"])
        assert res.status == "finished"
        out[name] = (res, model)
    return out


def test_drawing_of_the_seeds(seeds):
    """Cells: one per beam element (first, in element order), parent node -> joint point for
    joints with a body on the parent side, node -> centre of mass per body."""
    res, model = seeds["four_bar"]
    cells, kind, _ = lines(res.drawing)
    nb = len(model.elements["beam"].names)
    assert np.array_equal(cells[:nb], np.stack([model.elements["beam"].a, model.elements["beam"].b], 1))
    # beams, joints, bodies, particles, bushings, rigid cuts, spring-dampers, actuators, rotational spring-dampers,
    # shapes (triangles, not lines: none here)
    assert np.bincount(kind, minlength=len(cell_kinds())).tolist() == [4, 2, 2, 0, 0, 0, 0, 0, 0, 0]  # A, B joints; 2 bodies
    res, model = seeds["arm"]
    cells, kind, _ = lines(res.drawing)
    # joint2's point sits on the elbow node: shoulder -> joint point; the two bodies' centres
    assert np.bincount(kind, minlength=len(cell_kinds())).tolist() == [0, 1, 2, 0, 0, 0, 0, 0, 0, 0]


def test_particle_bodies_are_drawn_when_the_model_has_them(seeds):
    """A particle body (model.elements["particle_body"], its particles' nodes) is drawn as lines
    from its first particle node to each other one (cell_kind 3)."""
    _, model = seeds["four_bar"]
    plate = ParticleBodyData(names=("plate",), nodes=((2, 3, 5),), masses=((1.0, 1.0, 1.0),), reference=np.array([2]),
                             kinds=("planar",), planar=np.array([True]))
    with_particles = dataclasses.replace(model, elements={**model.elements, "particle_body": plate})
    cells, kind, _ = lines(drawing_of(with_particles))
    assert cells[kind == 3].tolist() == [[2, 3], [2, 5]]
    assert np.array_equal(lines(drawing_of(model))[0], cells[kind != 3])


def _check_frame(res, model, i, t, points, cells, pdata, cdata, expected):
    """One time step read back equals what flexmb meant to write, and that is the result."""
    _, et, epts, epd, ecd = expected
    assert t == et
    assert np.array_equal(points, epts)
    assert np.array_equal(cells, lines(res.drawing)[0])
    assert set(pdata) == set(POINT_ARRAYS) and set(cdata) == set(CELL_ARRAYS)
    for k in POINT_ARRAYS:
        assert np.array_equal(pdata[k], epd[k]), k
    for k in CELL_ARRAYS:
        assert np.array_equal(cdata[k], ecd[k]), k
    N, nb = model.n_nodes, len(model.elements["beam"].names)
    assert np.array_equal(points[:N], res.x[i]) and np.array_equal(points[N:N + model.n_joints], res.joint_points[i])
    assert np.array_equal(pdata["e2"][:N], res.R[i][:, :, 1])
    assert np.array_equal(pdata["angular_velocity"][:N], res.twists[i][:, 3:])
    for c, k in enumerate(FORCE_NAMES):
        assert np.array_equal(cdata[k][:nb], res.element_forces[i, :, c]) and not cdata[k][nb:].any()
    assert np.array_equal(cdata["strain_energy"][:nb], res.element_energy[i])


@pytest.mark.parametrize("seed", ["arm", "four_bar"])
def test_pvd_round_trip_with_meshio_bit_for_bit(seeds, seed, tmp_path):
    res, model = seeds[seed]
    pvd = write_pvd(res, None, tmp_path, seed, every=EVERY)
    expected = list(frames(res, res.drawing, EVERY))
    sets = ET.parse(pvd).getroot().find("Collection").findall("DataSet")
    assert len(sets) == len(expected) == len(range(0, len(res.t), EVERY)) + ((len(res.t) - 1) % EVERY != 0)
    for ds, exp in zip(sets, expected):
        m = meshio.read(tmp_path / ds.get("file"))
        assert [c.type for c in m.cells] == ["line"]
        i = exp[0]
        _check_frame(res, model, i, float(ds.get("timestep")), m.points, m.cells[0].data, m.point_data,
                     {k: v[0] for k, v in m.cell_data.items()}, exp)


@pytest.mark.parametrize("seed", ["arm", "four_bar"])
def test_xdmf_round_trip_with_meshio_bit_for_bit(seeds, seed, tmp_path, monkeypatch):
    res, model = seeds[seed]
    xdmf = write_xdmf(res, None, tmp_path / "x", seed, every=EVERY)
    monkeypatch.chdir(tmp_path)  # the .h5 is found beside the .xdmf, whatever the working directory
    expected = list(frames(res, res.drawing, EVERY))
    with TimeSeriesReader(xdmf) as reader:
        points0, cells = reader.read_points_cells()
        assert reader.num_steps == len(expected)
        assert [c.type for c in cells] == ["line"]
        for k, exp in enumerate(expected):
            t, pd, cd = reader.read_data(k)
            # meshio's time-series reader returns the first grid's geometry only; every grid
            # carries its own, read here with meshio's own data-item reader
            geo = next(c for c in reader.collection[k] if c.tag == "Geometry")
            points = reader._read_data_item(list(geo)[0])
            if k == 0:
                assert np.array_equal(points0, points)
            _check_frame(res, model, exp[0], t, points, cells[0].data, pd, {n: v[0] for n, v in cd.items()}, exp)


def _pvbatch() -> list[str] | None:
    exe = shutil.which("pvbatch")
    if exe is None:
        if os.environ.get("FLEXMB_REQUIRE_PARAVIEW") == "1":
            pytest.fail("FLEXMB_REQUIRE_PARAVIEW=1 but pvbatch is not installed (scripts/setup-paraview.sh installs it)")
        pytest.skip("ParaView's pvbatch is not installed (apt-get install -y paraview xvfb xauth)")
    return [exe]


def _run_probe(specs: list[str]) -> list[dict]:
    """Run the probe in pvbatch (under xvfb-run if it cannot start without a display)."""
    cmd = _pvbatch() + [str(PROBE), *specs]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if proc.returncode != 0 and shutil.which("xvfb-run"):
        proc = subprocess.run(["xvfb-run", "-a"] + cmd, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    found = [json.loads(line[6:]) for line in proc.stdout.splitlines() if line.startswith("PROBE ")]
    assert len(found) == len(specs), proc.stdout[-2000:] + proc.stderr[-2000:]
    return found


def test_paraview_opens_every_export_with_the_right_counts(seeds, tmp_path):
    specs, expect = [], []
    for seed, (res, _) in seeds.items():
        exp = list(frames(res, res.drawing, EVERY))
        pvd = write_pvd(res, None, tmp_path / seed / "pvd", seed, every=EVERY)
        xdmf = write_xdmf(res, None, tmp_path / seed / "xdmf", seed, every=EVERY)
        for spec in (str(pvd), f"{pvd}@PVDReader", str(xdmf), f"{xdmf}@Xdmf3ReaderT", f"{xdmf}@Xdmf3ReaderS",
                     f"{xdmf}@XDMFReader"):
            specs.append(spec)
            expect.append(exp)
    probes = _run_probe(specs)
    report = []
    for spec, probe, exp in zip(specs, probes, expect):
        times = [e[1] for e in exp]
        assert probe["times"] == pytest.approx(times, rel=0, abs=1e-15), spec
        assert len(probe["steps"]) == len(exp), spec
        for step, (_, t, pts, pd, cd) in zip(probe["steps"], exp):
            assert step["time"] == pytest.approx(t, rel=0, abs=1e-15), spec
            assert step["points"] == len(pts) and step["cells"] == len(cd["cell_kind"]), spec
            assert {k: v[0] for k, v in step["point_arrays"].items()} == POINT_ARRAYS, spec
            assert {k: v[0] for k, v in step["cell_arrays"].items()} == CELL_ARRAYS, spec
            # sums over what ParaView read equal ours (summation order differs: round-off only)
            assert step["point_sum"] == pytest.approx(float(pts.sum()), rel=1e-12, abs=1e-12), spec
            for k, (_, s) in step["point_arrays"].items():
                assert s == pytest.approx(float(pd[k].sum()), rel=1e-12, abs=1e-9), (spec, k)
            for k, (_, s) in step["cell_arrays"].items():
                assert s == pytest.approx(float(cd[k].sum()), rel=1e-12, abs=1e-9), (spec, k)
        report.append(f"{Path(spec.split('@')[0]).name} [{probe['reader']}]: {len(probe['times'])} steps, "
                      f"{probe['steps'][-1]['points']} points, {probe['steps'][-1]['cells']} cells")
    print("\n".join(report))


def test_export_needs_a_drawing_or_the_model(seeds, tmp_path):
    res, model = seeds["arm"]
    from dataclasses import replace

    from flexmb.errors import ResultFileError

    old = replace(res, drawing={})
    with pytest.raises(ResultFileError, match="no drawing"):
        write_pvd(old, None, tmp_path)
    assert write_pvd(old, model, tmp_path, "arm").exists()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
