"""URDF import (flexmb.from_urdf, issue 37) beyond the dynamics (tests/test_urdf_pinocchio.py): what
is left out is named in one warning with its lines, a malformed file is refused naming the tag and
the line, joint kinds map as the module docstring says (planar, floating, mimic, damping, limits),
and the import needs yourdfpy only when called."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("yourdfpy")

import flexmb as fm  # noqa: E402
from flexmb.engine.assembly import Assembler  # noqa: E402
from flexmb.engine.kinematics import TreePattern, forward_kinematics  # noqa: E402
from flexmb.errors import BackendError, URDFError, URDFWarning  # noqa: E402
from flexmb.rotations import expm  # noqa: E402

LINK = """  <link name="{name}">
    <inertial><origin xyz="0 0 0.1"/><mass value="1.0"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>
  </link>
"""


def robot(body: str) -> str:
    return f'<?xml version="1.0"?>\n<robot name="r">\n{LINK.format(name="base")}{body}</robot>\n'


def write(tmp_path: Path, text: str, name: str = "r.urdf") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def imported(path: Path, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mb = fm.from_urdf(path, **kw)
    return mb, [w for w in caught if issubclass(w.category, URDFWarning)]


UNSUPPORTED = robot(
    LINK.format(name="arm").replace("  </link>", """    <visual><geometry><box size="1 1 1"/></geometry></visual>
    <collision><geometry><sphere radius="0.1"/></geometry></collision>
  </link>""") + """  <joint name="j" type="revolute" colour="red">
    <parent link="base"/><child link="arm"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="5" velocity="1"/>
    <safety_controller k_velocity="1"/>
    <calibration rising="0.1"/>
    <dynamics damping="0.1" friction="0.5" stiction="2"/>
  </joint>
  <transmission name="t"><type>x</type></transmission>
  <gazebo reference="arm"><selfCollide>true</selfCollide></gazebo>
  <material name="blue"><color rgba="0 0 1 1"/></material>
  <sensor name="s"/>
""")


def test_everything_left_out_is_named_in_one_warning_with_its_line(tmp_path):
    path = write(tmp_path, UNSUPPORTED)
    lines = UNSUPPORTED.splitlines()
    mb, warned = imported(path)
    assert len(warned) == 1
    text = str(warned[0].message)

    def line_of(fragment: str) -> int:
        return next(i + 1 for i, s in enumerate(lines) if fragment in s)

    for tag in ("visual", "collision", "safety_controller", "calibration", "transmission", "gazebo", "material",
                "sensor"):
        assert f"<{tag}> (1×, first at line {line_of('<' + tag)})" in text, tag
    assert f"<joint> attribute 'colour' (1×, first at line {line_of('colour=')})" in text
    assert f"<dynamics> attribute 'stiction' (1×, first at line {line_of('stiction')})" in text
    assert "joint limits of ['j']" in text and "not enforced" in text
    assert "joint friction of ['j']" in text
    assert mb.robot.left_out and all(item in text for item in mb.robot.left_out)
    # what is kept: the limits and damping are read, the damping is a joint damper
    j = mb.robot.joints["j"]
    assert (j.lower, j.upper, j.effort, j.velocity, j.damping, j.friction) == (-1.0, 1.0, 5.0, 1.0, 0.1, 0.5)
    assert mb.springs[("j", 0)].stiffness == 0.0 and mb.springs[("j", 0)].damping == 0.1


def test_a_file_with_nothing_left_out_imports_without_warning(tmp_path):
    path = write(tmp_path, robot(LINK.format(name="arm") + """  <joint name="j" type="continuous">
    <parent link="base"/><child link="arm"/><origin xyz="0 0 0.2"/><axis xyz="0 1 0"/>
  </joint>
"""))
    mb, warned = imported(path)
    assert warned == [] and mb.robot.left_out == []
    assert mb.joints["j"].kind.name == "revolute"


MALFORMED = [
    # (what is wrong, the file's body after the base link, the message's tag and line, a phrase)
    ("not well-formed", '<joint name="j" type="fixed">\n<parent link="base"/>\n', None, "not well-formed XML"),
    ("no joint type", '<joint name="j">\n  <parent link="base"/><child link="base"/>\n</joint>\n', "<joint>",
     "has no type"),
    ("unknown joint type", LINK.format(name="a") + '<joint name="j" type="hinge">\n<parent link="base"/>'
     '<child link="a"/>\n</joint>\n', "<joint>", "unknown type 'hinge'"),
    ("missing child", LINK.format(name="a") + '<joint name="j" type="fixed">\n<parent link="base"/>\n</joint>\n',
     "<joint>", "has no <child>"),
    ("unknown link", '<joint name="j" type="fixed">\n<parent link="base"/><child link="nowhere"/>\n</joint>\n',
     "<joint>", "'nowhere' is not defined"),
    ("bad origin", LINK.format(name="a") + '<joint name="j" type="fixed">\n<parent link="base"/><child link="a"/>\n'
     '<origin xyz="0 0"/>\n</joint>\n', "<origin>", "xyz='0 0' is not 3 numbers"),
    ("zero axis", LINK.format(name="a") + '<joint name="j" type="revolute">\n<parent link="base"/><child link="a"/>\n'
     '<axis xyz="0 0 0"/>\n</joint>\n', "<axis>", "the axis is zero"),
    ("bad mass", '<link name="a">\n<inertial><mass value="heavy"/>\n<inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" '
     'izz="1"/></inertial>\n</link>\n', "<mass>", "value='heavy' is not a number"),
    ("negative mass", '<link name="a">\n<inertial><mass value="-1"/>\n<inertia ixx="1" ixy="0" ixz="0" iyy="1" '
     'iyz="0" izz="1"/></inertial>\n</link>\n', "<mass>", "is negative"),
    ("missing inertia entry", '<link name="a">\n<inertial><mass value="1"/>\n<inertia ixx="1" ixy="0" ixz="0" '
     'iyy="1" iyz="0"/></inertial>\n</link>\n', "<inertia>", "'izz' is missing"),
    ("unphysical inertia", LINK.format(name="a").replace('ixx="0.01"', 'ixx="0.5"') + '<joint name="j" type="fixed">'
     '\n<parent link="base"/><child link="a"/>\n</joint>\n', "<link>", "triangle inequality"),
    ("two parents", LINK.format(name="a") + '<joint name="j" type="fixed">\n<parent link="base"/><child link="a"/>\n'
     '</joint>\n<joint name="k" type="fixed">\n<parent link="base"/><child link="a"/>\n</joint>\n', "<joint>",
     "already the child of joint 'j'"),
    ("two roots", LINK.format(name="a"), "<robot>", "2 links (['base', 'a']) without a parent joint"),
    ("duplicate link", LINK.format(name="base"), "<link>", "a second link named 'base'"),
]


@pytest.mark.parametrize("what,body,tag,phrase", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_a_malformed_file_is_refused_naming_the_tag_and_line(tmp_path, what, body, tag, phrase):
    text = robot(body)
    path = write(tmp_path, text)
    with pytest.raises(URDFError) as err:
        fm.from_urdf(path)
    msg = str(err.value)
    assert phrase in msg, msg
    assert msg.startswith("URDF r.urdf, line "), msg
    line = int(msg.split("line ")[1].split(":")[0])
    if tag is not None:
        assert f"{tag}" in msg
        assert tag[:-1] in text.splitlines()[line - 1], (line, text.splitlines()[line - 1])  # the line holds the tag
    else:
        assert line == len(text.splitlines())  # the parser stops where the unclosed <joint> should have ended
    assert err.value.hint


def test_no_file_and_bad_arguments(tmp_path):
    with pytest.raises(URDFError, match="no such file"):
        fm.from_urdf(tmp_path / "missing.urdf")
    with pytest.raises(fm.ModelError, match="base = 'floating' must be 'fixed' or 'free'"):
        fm.from_urdf(write(tmp_path, robot("")), base="floating")
    with pytest.raises(URDFError, match="'j' the name is taken|the name is taken"):
        fm.from_urdf(write(tmp_path, robot(LINK.format(name="a") + '<joint name="j" type="fixed"><parent link="base"/>'
                                                  '<child link="a"/></joint>\n')), root_joint="j")


def test_without_yourdfpy_the_import_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "yourdfpy", None)  # import yourdfpy then raises ImportError
    with pytest.raises(BackendError, match="needs the URDF parser yourdfpy") as err:
        fm.from_urdf(write(tmp_path, robot("")))
    assert "pip install yourdfpy" in err.value.hint


PLANAR_FLOATING_MIMIC = robot(LINK.format(name="slider") + LINK.format(name="puck") + LINK.format(name="drone")
                              + LINK.format(name="twin") + """  <joint name="p" type="planar">
    <parent link="base"/><child link="puck"/><origin xyz="0.3 0 0.5" rpy="0.2 0.4 0"/><axis xyz="0 0 1"/>
  </joint>
  <joint name="s" type="prismatic">
    <parent link="base"/><child link="slider"/><axis xyz="1 0 0"/>
    <limit lower="-0.5" upper="0.5" effort="5" velocity="1"/><dynamics damping="2.0"/>
  </joint>
  <joint name="m" type="prismatic">
    <parent link="base"/><child link="twin"/><axis xyz="1 0 0"/>
    <limit lower="-0.5" upper="0.5" effort="5" velocity="1"/><mimic joint="s" multiplier="-1"/>
  </joint>
  <joint name="f" type="floating">
    <parent link="puck"/><child link="drone"/><origin xyz="0 0.2 0" rpy="0 0 0.3"/>
  </joint>
""")


def test_planar_floating_and_mimic_joints(tmp_path):
    mb, warned = imported(write(tmp_path, PLANAR_FLOATING_MIMIC))
    text = str(warned[0].message)
    assert "mimic" not in text  # the mimic joint is a rigid coupling: nothing left out
    assert mb.robot.joints["m"].mimic == ("s", -1.0, 0.0)
    spec = mb.elements["coupling"]["m:mimic"]
    assert (spec.coordinate_a, spec.coordinate_b, spec.ratio, spec.offset, spec.stiffness) == ("s.q", "m.q", -1.0, 0.0, None)
    assert mb.robot.joints["p"].flexmb_joints == ("p:t1", "p:t2", "p")
    assert mb.robot.joints["f"].flexmb_joints == ("f",) and mb.joints["f"].kind.name == "free"
    assert mb.springs[("s", 0)].damping == 2.0
    model = mb.compile()  # the planar joint's massless nodes move the puck's mass: M̄ is positive definite
    # move the planar joint by (a, b, th): the puck's frame is the URDF's origin o, then a translation
    # a t1 + b t2 in o's plane and a turn th about the normal n (o's z), t1 x t2 = n
    st = model.initial_state()
    a, b, th = 0.3, -0.2, 0.7
    for name, val in (("p:t1.q", a), ("p:t2.q", b), ("p.q", th)):
        st.q[model.u_to_q[model.coordinate_names.index(name)]] = val
    kin = forward_kinematics(model, st, TreePattern(model))
    o = mb.robot.links["puck"]
    n = o.rotation[:, 2]
    t1 = mb.joints["p:t1"].axes[0]
    t2 = mb.joints["p:t2"].axes[0]
    assert abs(t1 @ n) < 1e-15 and abs(t2 @ n) < 1e-15 and np.allclose(np.cross(t1, t2), n, atol=1e-15)
    i = model.node_index("puck")
    assert np.allclose(kin.x[i] + model.origin, o.position + a * t1 + b * t2, rtol=0, atol=1e-15)
    assert np.allclose(kin.R[i], expm(th * n) @ o.rotation, rtol=0, atol=1e-15)
    # the floating joint carries the drone with the puck: at zero its frame is the puck's times the origin
    d = model.node_index("drone")
    Rz = expm(0.3 * np.array([0, 0, 1.0]))
    assert np.allclose(kin.R[d], kin.R[i] @ Rz, rtol=0, atol=1e-15)
    assert np.allclose(kin.x[d], kin.x[i] + kin.R[i] @ [0, 0.2, 0], rtol=0, atol=1e-15)
    # the planar joint's three coordinates are those of a free puck in its plane: M̄ on them is m, m and
    # the moment about the normal through the joint point (zero gravity, at rest)
    ev = Assembler(model).evaluate(model.initial_state())
    k = [model.coordinate_names.index(c) for c in ("p:t1.q", "p:t2.q", "p.q")]
    M = Assembler(model).mbar(ev).toarray()[np.ix_(k, k)]
    m_sub = 2.0  # puck and drone, 1 kg each
    assert np.allclose(np.diag(M)[:2], m_sub, rtol=1e-14) and abs(M[0, 1]) < 1e-14


def test_the_builder_extends_before_compile(tmp_path):
    """An imported builder is a ModelBuilder: drives and loads added, then compiled and run."""
    mb, _ = imported(write(tmp_path, PLANAR_FLOATING_MIMIC))
    assert isinstance(mb, fm.ModelBuilder)
    mb.add_drive("s", lambda t: 0.1 * t)  # the mimic joint follows through its coupling m:mimic
    mb.add_load("push", "puck", force=(1.0, 0, 0))
    model = mb.compile()
    res = fm.simulate(model, t_end=0.01, dt=0.005)
    assert res.status == "finished"
    # within the rigid coupling's tolerance, 1e-10 times the model's size for a translation (docs/coupling.md (C14))
    assert np.allclose(res.coordinate("m.q"), -res.coordinate("s.q"), rtol=0, atol=1e-10 * model.size)
    assert np.abs(res.coordinate("m.q")[-1]) > 1e-4
