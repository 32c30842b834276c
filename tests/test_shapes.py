"""Shapes (flexmb/builder/shapes.py, issue 37.3): meshes read by meshio placed on nodes, beams drawn
with their section, the URDF's geometries; stored once with the model, drawn at every output row by
their nodes' poses in the ParaView files (checked in real ParaView: the triangles' corners at the
last step are the node poses applied to the mesh) and in the animation."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import warnings
from pathlib import Path

import meshio
import numpy as np
import pytest

import flexmb as fm
from flexmb.builder.shapes import box_mesh, cylinder_mesh, read_mesh, sphere_mesh
from flexmb.errors import ResultFileError, URDFWarning
from flexmb.results.drawing import check_drawing, frames, triangles
from flexmb.results.paraview import write_pvd, write_xdmf
from flexmb.rotations import expm

HERE = Path(__file__).resolve().parent
UR5 = HERE.parent / "cases" / "robots" / "ur5" / "ur5_robot.urdf"
PROBE = HERE / "paraview_shapes_probe.py"
SEC = fm.BeamSection(E=7e10, G=2.7e10, A=4e-4, Iy=2e-8, Iz=2e-8, J=4e-8, rho=2700)


def faces(points: np.ndarray, tris: np.ndarray) -> set:
    """The triangles as sets of corner coordinates (rounded): comparable across point orders."""
    return {frozenset(tuple(np.round(points[i], 12)) for i in t) for t in tris}


@pytest.mark.parametrize("ext", ["stl", "obj", "vtk", "vtu", "ply"])
def test_meshes_read_by_meshio(tmp_path, ext):
    pts, tri = box_mesh((0.3, 0.2, 0.1))
    f = tmp_path / f"box.{ext}"
    meshio.write(f, meshio.Mesh(pts, [("triangle", tri)]))
    p2, t2 = read_mesh(f)
    assert faces(p2, t2) == faces(pts, tri) and len(t2) == 12


def test_quads_are_split_and_bad_files_named(tmp_path):
    f = tmp_path / "quad.obj"
    meshio.write(f, meshio.Mesh(np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0.0]]), [("quad", np.array([[0, 1, 2, 3]]))]))
    p, t = read_mesh(f)
    assert t.tolist() == [[0, 1, 2], [0, 2, 3]]
    with pytest.raises(fm.ModelError, match="no such file"):
        read_mesh(tmp_path / "none.stl")
    (tmp_path / "bad.stl").write_text("not a mesh")
    with pytest.raises(fm.ModelError, match="meshio cannot read it"):
        read_mesh(tmp_path / "bad.stl")


def test_primitive_meshes_are_closed_surfaces_of_their_size():
    for (pts, tri), volume in ((box_mesh((1, 2, 3)), 6.0), (cylinder_mesh(0.5, 2.0, 400), np.pi * 0.25 * 2),
                               (sphere_mesh(1.0, 60), 4 / 3 * np.pi)):
        edges = np.sort(np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [2, 0]]]), axis=1)
        assert (np.unique(edges, axis=0, return_counts=True)[1] == 2).all()  # closed: every edge in two triangles
        v = abs(np.einsum("ij,ij->i", pts[tri[:, 0]], np.cross(pts[tri[:, 1]], pts[tri[:, 2]])).sum()) / 6
        assert v == pytest.approx(volume, rel=2e-3)


def pendulum() -> tuple[fm.ModelBuilder, np.ndarray, np.ndarray]:
    """A body pendulum (a box shape, turned and shifted on its node) with a flexible rod (tube shapes)."""
    mb = fm.ModelBuilder(gravity=(0, -9.81, 0))
    mb.add_node("n1", (0, 0, 0), rotation=expm(np.array([0.0, 0.0, 0.3])))
    mb.add_body("rod", "n1", 1.0, (0.5, 0, 0), np.diag([0, 1, 1]) / 12)
    mb.add_joint("pin", "revolute", "ground", "n1", axis=(0.2, 0, 1), q0=-1.0)
    pts, tri = box_mesh((1.0, 0.05, 0.08))
    Rm = expm(np.array([0.1, 0.2, 0.0]))
    fm.add_visual(mb, "n1", (pts, tri), position=(0.5, 0.01, 0), rotation=Rm, scale=(1.0, 2.0, 1.0))
    mb.add_flexible_link("beam", (0, 0, 0), (-1, 0, 0), 3, SEC, node_a="n1")
    fm.add_beam_shapes(mb)
    local = (pts * [1.0, 2.0, 1.0]) @ Rm.T + [0.5, 0.01, 0]
    return mb, local, tri


def test_a_shape_is_stored_once_in_node_axes():
    mb, local, tri = pendulum()
    model = mb.compile()
    sd = model.elements["shape"]
    assert sd.names == ("n1.shape", "beam.e0.section", "beam.e1.section", "beam.e2.section")
    n = len(local)
    assert np.allclose(sd.points[:n], local, rtol=0, atol=1e-15) and (sd.point_node[:n] == 0).all()
    assert np.array_equal(sd.triangles[:12], tri)
    with pytest.raises(fm.ModelError, match="unknown node"):
        fm.add_visual(mb, "nowhere", box_mesh((1, 1, 1)))
    with pytest.raises(fm.ModelError, match="scale"):
        fm.add_visual(mb, "n1", box_mesh((1, 1, 1)), scale=-1.0)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    mb, local, tri = pendulum()
    model = mb.compile()
    out = tmp_path_factory.mktemp("shapes") / "run"
    res = fm.simulate(model, 0.4, 1e-3, output_every=40, out=out)
    assert res.status == "finished"
    return model, fm.load(out), local, tri


def expected_triangles(res, i: int) -> list[np.ndarray]:
    """Every shape triangle's corners at output row i, from the node poses and the stored local points."""
    d = res.drawing
    node, pts = d["shape_point_node"], d["shape_points"]
    g = np.einsum("pij,pj->pi", res.R[i][node], pts) + res.x[i][node]
    return [g[t] for t in d["shape_triangles"]]


def test_the_drawing_places_the_shapes_by_their_nodes(run):
    model, res, local, tri = run
    i = len(res.t) - 1
    pts = [f for f in frames(res, res.drawing) if f[0] == i][0][2]
    cells, kind = triangles(res.drawing)
    got = [pts[c] for c in cells]
    want = expected_triangles(res, i)
    assert len(got) == len(want) == 12 + 3 * 32
    assert max(np.abs(a - b).max() for a, b in zip(got, want)) < 1e-14
    # the box: its node's pose applied to the mesh; the tubes' end rings: each on its own node
    R, x = res.R[i][0], res.x[i][0]
    assert np.allclose(pts[cells[:12]], (local @ R.T + x)[tri], rtol=0, atol=1e-14)
    tubes = res.drawing["shape_point_node"][len(local):]
    assert set(tubes.tolist()) == {model.node_index(n) for n in ("n1", "beam.1", "beam.2", "beam.3")}


def test_a_damaged_shape_drawing_is_refused(run, tmp_path):
    model, res, _, _ = run
    d = dict(res.drawing)
    names = {"element_names": len(res.element_names), "cut_names": 0}
    assert check_drawing(d, len(res.node_names), len(res.joint_names), names) == ""
    d["shape_triangles"] = d["shape_triangles"] + 10_000
    assert "points at point" in check_drawing(d, len(res.node_names), len(res.joint_names), names)
    meta = json.loads((Path(res.source) / "meta.json").read_text())
    meta["drawing"]["shape_triangles"]["data"][0] = 10_000
    (Path(res.source) / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(ResultFileError, match="shape_triangles"):
        fm.load(res.source)


def _pvbatch(specs: list[str]) -> list[dict]:
    exe = shutil.which("pvbatch")
    if exe is None:
        if os.environ.get("FLEXMB_REQUIRE_PARAVIEW") == "1":
            pytest.fail("FLEXMB_REQUIRE_PARAVIEW=1 but pvbatch is not installed")
        pytest.skip("ParaView's pvbatch is not installed (apt-get install -y paraview xvfb xauth)")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    cmd = [exe, str(PROBE), *specs]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if proc.returncode != 0 and shutil.which("xvfb-run"):
        proc = subprocess.run(["xvfb-run", "-a", *cmd], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return [json.loads(line[7:]) for line in proc.stdout.splitlines() if line.startswith("SHAPES ")]


def test_paraview_reads_the_shapes_where_the_nodes_put_them(run, tmp_path):
    """pvbatch opens the .pvd (PVD reader) and the .xdmf (Xdmf3 reader, Mixed topology) at their last
    step: every triangle cell's corners equal the node poses applied to the stored mesh."""
    model, res, _, _ = run
    pvd = write_pvd(res, None, tmp_path / "pvd", "shapes")
    xdmf = write_xdmf(res, None, tmp_path / "xdmf", "shapes")
    probes = _pvbatch([f"{pvd}@PVDReader", f"{xdmf}@Xdmf3ReaderT"])
    want = expected_triangles(res, len(res.t) - 1)
    shape_kind = triangles(res.drawing)[1]
    assert len(probes) == 2
    for probe in probes:
        assert probe["time"] == pytest.approx(res.t[-1], abs=1e-15)
        got = np.array(probe["triangles"])
        assert got.shape == (len(want), 3, 3)
        assert np.abs(got - np.array(want)).max() < 1e-14, probe["file"]
        assert probe["kinds"] == [shape_kind]


def test_the_animation_draws_the_shapes(run, tmp_path):
    """A 3-D frame with shapes has shaded grey surfaces: many more grey pixels than the same frame of
    the model without them (its lines only)."""
    from PIL import Image

    from flexmb.results.animation import animate

    model, res, _, _ = run
    bare = dict(res.drawing)
    for k in ("shape_point_node", "shape_points", "shape_triangles", "shape_triangle_shape"):
        bare.pop(k)
    counts = []
    for name, drawing in (("with", res.drawing), ("without", bare)):
        r = res.window(res.t[0], res.t[-1])
        r.__dict__["drawing"] = drawing
        gif = animate(r, tmp_path / f"{name}.gif", view="3d", every=len(res.t))
        im = np.asarray(Image.open(gif).convert("RGB")).astype(int)
        grey = (np.abs(im - im.mean(axis=2, keepdims=True)).max(axis=2) < 12) & (im.mean(axis=2) > 60) & \
            (im.mean(axis=2) < 235)
        counts.append(int(grey.sum()))
    assert counts[0] > counts[1] + 500, counts


def test_the_raster_keeps_the_nearest_triangle_at_every_pixel():
    """flexmb/results/raster.py: two triangles over the same pixels, in either order, show the nearer
    one; the pixels each covers alone (by the edge functions, counted here independently) are filled."""
    from flexmb.results.raster import rasterize, shade

    xy = np.array([[2.0, 2.0], [30.0, 2.0], [2.0, 30.0], [10.0, 10.0], [40.0, 10.0], [10.0, 40.0]])
    depth = np.array([1.0, 1.0, 1.0, 2.0, 2.0, 2.0])  # the first triangle is nearer
    grey = np.array([0.4, 0.8])
    for tris in (np.array([[0, 1, 2], [3, 4, 5]]), np.array([[3, 4, 5], [0, 1, 2]])):
        g = grey if tris[0, 0] == 0 else grey[::-1]
        img = np.zeros((48, 64, 4), dtype=np.uint8)
        rasterize(xy, depth, tris, g, img, tint=(1.0, 1.0, 1.0))
        cx, cy = np.meshgrid(np.arange(64) + 0.5, np.arange(48) + 0.5)
        first = (cx >= 2) & (cy >= 2) & (cx + cy <= 32)
        second = (cx >= 10) & (cy >= 10) & (cx + cy <= 50)
        assert (img[..., 3][first | second] == 255).all() and (img[..., 3][~(first | second)] == 0).all()
        assert (img[..., 0][first] == int(255 * 0.4)).all()
        assert (img[..., 0][second & ~first] == int(255 * 0.8)).all()
    corners = np.array([[[0, 0, 0], [1, 0, 0], [0, 1, 0]]], dtype=float)  # normal +z
    assert shade(corners, np.array([0.0, 0.0, 1.0])) == pytest.approx([0.92])
    assert shade(corners, np.array([1.0, 0.0, 0.0])) == pytest.approx([0.3])


def test_a_plane_view_draws_the_shapes_as_silhouettes(run, tmp_path):
    from PIL import Image

    from flexmb.results.animation import animate

    model, res, _, _ = run
    gif = animate(res, tmp_path / "plane.gif", view="xy", every=len(res.t))
    im = np.asarray(Image.open(gif).convert("RGB")).astype(int)
    grey = (np.abs(im - im.mean(axis=2, keepdims=True)).max(axis=2) < 25) & (im.mean(axis=2) > 60) & \
        (im.mean(axis=2) < 235)
    assert grey.sum() > 500


def test_urdf_geometries_become_shapes(tmp_path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mb = fm.from_urdf(UR5, shapes="collision")
    text = str(next(w.message for w in caught if issubclass(w.category, URDFWarning)))
    assert "<collision>" not in text and "<visual> (7×" in text  # the collisions are imported now
    model = mb.compile()
    sd = model.elements["shape"]
    assert len(sd.names) == 8  # seven meshes and ee_link's box
    for link in ("base_link", "upper_arm_link", "wrist_3_link"):
        k = sd.names.index(f"{link}.collision0")
        mesh = {"base_link": "base", "upper_arm_link": "upperarm", "wrist_3_link": "wrist3"}[link]
        pts, tri = read_mesh(UR5.parent / "meshes" / "ur5" / "collision" / f"{mesh}.stl")
        on = sd.triangle_shape == k
        first = int(sd.triangles[on].min())
        assert np.array_equal(sd.points[first:first + len(pts)], pts)  # no origin: the link frame
        assert (sd.point_node[first:first + len(pts)] == model.node_index(link)).all()
    # ee_link's box, 1 cm, shifted by its origin
    k = sd.names.index("ee_link.collision0")
    box = sd.points[np.unique(sd.triangles[sd.triangle_shape == k])]
    assert np.allclose(box.min(0), [-0.015, -0.005, -0.005]) and np.allclose(box.max(0), [-0.005, 0.005, 0.005])
    # a mesh that is not there is named
    text = UR5.read_text().replace("collision/base.stl", "collision/nothing.stl")
    (tmp_path / "ur5.urdf").write_text(text)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fm.from_urdf(tmp_path / "ur5.urdf", shapes="collision", package_dirs={"example-robot-data": tmp_path})
    assert "collision/nothing.stl (not found)" in str(caught[0].message)


BAD_GEOMETRY = [
    # (what is wrong, the <visual> of link "a", the message's tag, a phrase)
    ("two geometries", '<geometry>\n<box size="1 1 1"/><sphere radius="1"/>\n</geometry>', "<geometry>",
     "exactly one of"),
    ("unknown geometry", '<geometry>\n<capsule radius="1" length="2"/>\n</geometry>', "<capsule>", "unknown geometry"),
    ("bad box", '<geometry>\n<box size="1 x 1"/>\n</geometry>', "<box>", "is not 3 numbers"),
    ("negative radius", '<geometry>\n<cylinder radius="-0.1" length="1"/>\n</geometry>', "<cylinder>",
     "radius must be positive"),
    ("mesh without file", '<geometry>\n<mesh scale="1 1 1"/>\n</geometry>', "<mesh>", "has no filename"),
    ("no geometry", '<origin xyz="0 0 0"/>', "<visual>", "has 0 <geometry> tags"),
]


@pytest.mark.parametrize("what,visual,tag,phrase", BAD_GEOMETRY, ids=[b[0] for b in BAD_GEOMETRY])
def test_a_malformed_geometry_is_refused_naming_the_tag_and_line(tmp_path, what, visual, tag, phrase):
    """Imported as shapes, a link's geometries are checked like the rest of the file (URDFError with
    the tag and its line); without shapes they are only listed as left out."""
    text = ('<?xml version="1.0"?>\n<robot name="r">\n<link name="a">\n'
            '<inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial>\n'
            f'<visual>\n{visual}\n</visual>\n</link>\n</robot>\n')
    path = tmp_path / "r.urdf"
    path.write_text(text)
    with pytest.raises(fm.URDFError) as err:
        fm.from_urdf(path, shapes="visual")
    msg = str(err.value)
    assert phrase in msg and tag in msg, msg
    line = int(msg.split("line ")[1].split(":")[0])
    assert tag[:-1] in text.splitlines()[line - 1], (line, text.splitlines()[line - 1])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fm.from_urdf(path)
    assert "<visual> (1×, first at line 5)" in str(caught[0].message)


def test_a_flexible_link_carries_its_shapes_on_the_beam_nodes():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", URDFWarning)
        mb = fm.from_urdf(UR5, shapes="collision")
    before = mb.compile()
    rep = fm.make_flexible(mb, "upper_arm_link", 4, fm.BeamSection(E=7e10, G=2.6e10, A=1e-3, Iy=1e-6, Iz=1e-6, J=2e-6,
                                                                    rho=2700), end=(0, 0, 0.425))
    after = mb.compile()

    def placed(model):
        sd = model.elements["shape"]
        k = sd.names.index("upper_arm_link.collision0")
        idx = np.unique(sd.triangles[sd.triangle_shape == k])
        n = sd.point_node[idx]
        return np.einsum("pij,pj->pi", model.R0[n], sd.points[idx]) + model.X0[n] + model.origin, n

    g0, n0 = placed(before)
    g1, n1 = placed(after)
    assert np.abs(g1 - g0).max() < 1e-15  # the same place at assembly
    on = {after.node_names[i] for i in n1}  # now on the beam nodes (the coarse mesh has no point near the middle one)
    assert on <= set(rep.nodes) and len(on) >= 3
    z = g0 @ mb.nodes["upper_arm_link"].rotation[:, 2]  # along the link: the node nearest along the beam
    assert after.node_names[n1[np.argmin(z)]] == "upper_arm_link" and after.node_names[n1[np.argmax(z)]] == rep.nodes[-1]
