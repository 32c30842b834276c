"""A new element kind is one module plus ``register`` (issue 13, flexmb.elements): a linear
point-to-point spring–damper written here, in the tests only, touching no engine file. The
model builder stores its records (``add_element``), the compiler, the assembly, the iteration
matrix, the drawing and ``flexmb info`` pick it up from the registry, and a mass on the spring
moves as the closed form says (frequency, damping ratio, energy balance)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from PIL import Image

import flexmb as fm
from flexmb.elements import FAMILIES, register, unregister
from flexmb.elements.family import (
    GROUND,
    ElementData,
    ElementFamily,
    FamilyEvaluation,
    NodeTable,
    Output,
    frozen_arrays,
    listing,
)
from flexmb.engine.assembly import Assembler
from flexmb.results.animation import _style, animate
from flexmb.results.drawing import cell_kinds, check_drawing, drawing_of, lines


# ---------------------------------------------------------------------------- the new kind
@dataclass(frozen=True)
class SpringSpec:
    """A spring–damper from the origin of ``node_a`` (or the point ``anchor`` on ground) to the
    origin of ``node_b``: force k (l - L0) + c l' along the line between them."""

    name: str
    node_a: str
    node_b: str
    stiffness: float
    damping: float
    anchor: tuple[float, float, float] = (0.0, 0.0, 0.0)


@dataclass(frozen=True, eq=False)
class SpringData(ElementData):
    a: np.ndarray  # node index of end a, -1 = ground                                    (n_el)
    b: np.ndarray  # node index of end b                                                 (n_el)
    anchor: np.ndarray  # end a's point when it is on ground, global                      (n_el x 3)
    k: np.ndarray  # stiffness [N/m]                                                    (n_el)
    c: np.ndarray  # damping [N s/m]                                                     (n_el)
    L0: np.ndarray  # rest length: the distance at assembly [m]                          (n_el)


@dataclass
class SpringEvaluation(FamilyEvaluation):
    e: np.ndarray | None = None  # unit vectors a -> b (n_el, 3)
    length: np.ndarray | None = None
    elastic: np.ndarray | None = None  # k (l - L0) (n_el,)
    force: np.ndarray | None = None  # k (l - L0) + c l' (n_el,)


class Springs(ElementFamily):
    name = "spring"
    label = "spring"
    plural = "springs"
    has_blocks = True
    outputs = (Output("force", (), "axial force k (l - L0) + c l' [N], tension positive"),)
    cell_kind = "spring"
    drawing_keys = ("spring_a", "spring_b")

    def compile(self, records: Sequence[SpringSpec], nodes: NodeTable) -> SpringData:
        a = np.array([nodes.index(r.node_a, f"spring '{r.name}'", ground=True) for r in records], dtype=int)
        b = np.array([nodes.index(r.node_b, f"spring '{r.name}'") for r in records], dtype=int)
        anchor = np.array([r.anchor for r in records], dtype=float).reshape(-1, 3)
        xa = np.where((a == GROUND)[:, None], anchor, nodes.X0[a])
        return SpringData(**frozen_arrays(dict(
            names=tuple(r.name for r in records), a=a, b=b, anchor=anchor,
            k=np.array([r.stiffness for r in records], dtype=float), c=np.array([r.damping for r in records], dtype=float),
            L0=np.linalg.norm(nodes.X0[b] - xa, axis=1))))

    def loop_edges(self, data: SpringData) -> list[tuple[str, str, int, int]]:
        return [(n, f"spring '{n}'", int(a), int(b)) for n, a, b in zip(data.names, data.a, data.b)]

    def element_nodes(self, data: SpringData) -> np.ndarray:
        return np.stack([data.a, data.b], axis=1).astype(np.int64)

    def evaluate(self, model: fm.Model, data: SpringData, prep: Any, state: fm.State, kin: Any, load_factor: float,
                 Mb: np.ndarray, w: np.ndarray) -> SpringEvaluation:
        ground = data.a == GROUND
        xa = np.where(ground[:, None], data.anchor, kin.x[data.a])
        va = np.where(ground[:, None], 0.0, kin.V[data.a, :3])
        d = kin.x[data.b] - xa
        length = np.linalg.norm(d, axis=1)
        e = d / length[:, None]
        ldot = np.einsum("ni,ni->n", e, kin.V[data.b, :3] - va)
        elastic = data.k * (length - data.L0)
        force = elastic + data.c * ldot
        ia = np.where(ground, model.n_nodes, data.a)  # row N of w: ground
        np.add.at(w[:, :3], data.b, force[:, None] * e)  # residual sense: minus the applied force on b
        np.add.at(w[:, :3], ia, -force[:, None] * e)
        return SpringEvaluation(strain_energy=float(np.sum(0.5 * data.k * (length - data.L0) ** 2)),
                                dissipation=float(np.sum(data.c * ldot**2)), e=e, length=length, elastic=elastic,
                                force=force)

    def blocks(self, model: fm.Model, data: SpringData, prep: Any, fe: SpringEvaluation, kin: Any, ck: float, cc: float,
               cm: float, material_only: bool, exact_tangent: bool) -> np.ndarray:
        """On the translations: K = k e eᵀ + (k (l - L0) / l)(I - e eᵀ), C = c e eᵀ, [[K, -K], [-K, K]]."""
        P = fe.e[:, :, None] * fe.e[:, None, :]
        K = data.k[:, None, None] * P
        if not material_only:
            K = K + (fe.elastic / fe.length)[:, None, None] * (np.eye(3) - P)
        E = ck * K + cc * data.c[:, None, None] * P
        out = np.zeros((data.n, 12, 12))
        out[:, :3, :3], out[:, 6:9, 6:9], out[:, :3, 6:9], out[:, 6:9, :3] = E, E, -E, -E
        return out

    def output(self, model: fm.Model, data: SpringData, fe: SpringEvaluation | None, name: str) -> np.ndarray:
        if name == "force":
            return np.zeros(0) if fe is None else fe.force
        return super().output(model, data, fe, name)

    def drawing(self, model: fm.Model, data: SpringData) -> dict[str, np.ndarray]:
        both = data.a != GROUND
        return {"spring_a": np.asarray(data.a[both], dtype=np.int64), "spring_b": np.asarray(data.b[both], dtype=np.int64)}

    def check_drawing(self, d: Mapping[str, np.ndarray], n_nodes: int, names: Mapping[str, int]) -> str:
        return "" if d["spring_a"].shape == d["spring_b"].shape else "drawing 'spring_b' does not fit 'spring_a'"

    def lines(self, d: Mapping[str, np.ndarray], first_point: int) -> np.ndarray:
        return np.stack([d["spring_a"], d["spring_b"]], axis=1)

    def describe(self, model: fm.Model, data: SpringData, limit: int) -> list[str]:
        return ["springs:"] + listing([f"  {n}: k = {k:g} N/m, c = {c:g} N s/m, rest length {L:g} m"
                                       for n, k, c, L in zip(data.names, data.k, data.c, data.L0)], limit)


@pytest.fixture
def springs():
    """The family registered for one test (models compiled meanwhile carry it), then removed."""
    family = register(Springs())
    yield family
    unregister(family.name)


# ---------------------------------------------------------------------------- a mass on the spring
M, K, ZETA = 1.0, 100.0, 0.05  # mass [kg], stiffness [N/m], damping ratio
OMEGA = np.sqrt(K / M)
C = 2 * ZETA * np.sqrt(K * M)
X0 = 0.01  # initial displacement [m]


def mass_on_spring() -> fm.Model:
    """A slider of mass M on a prismatic joint along y, hung from the ground point (0, 0, 0) by the
    spring (rest length 1 m); no gravity. The joint coordinate q is the displacement up."""
    mb = fm.ModelBuilder()
    mb.add_node("slider", (0.0, -1.0, 0.0))
    mb.add_body("slider", "slider", M, (0, 0, 0), np.eye(3) * 1e-3)
    mb.add_joint("guide", "prismatic", "ground", "slider", axis=(0, 1, 0), q0=X0)
    mb.add_element("spring", SpringSpec("hang", "ground", "slider", K, C))
    return mb.compile()


def closed_form(t: np.ndarray) -> np.ndarray:
    """x(t) of the damped oscillator released from X0 at rest."""
    wd = OMEGA * np.sqrt(1 - ZETA**2)
    return X0 * np.exp(-ZETA * OMEGA * t) * (np.cos(wd * t) + ZETA / np.sqrt(1 - ZETA**2) * np.sin(wd * t))


def test_a_mass_on_the_registered_spring_moves_as_the_closed_form(springs):
    """Frequency and damping ratio: the run follows x(t) of the damped oscillator pointwise.
    Generalized-α with ρ∞ = 1 is the trapezoidal rule, whose period error is (ωh)²/12: over T
    the phase lags by ω T (ωh)²/12, so |q - x| <= 2 X0 ω T (ωh)²/12 (twice the phase error, for the
    amplitude's own O((ωh)²) error); measured 6.1e-7 m against 3.3e-6 m. Newton converges in one
    correction per step (the family's blocks are in the iteration matrix: a wrong K would make it
    converge slowly or not at all), and kinetic + strain + dissipated energy stays constant."""
    model = mass_on_spring()
    assert list(model.elements) == list(FAMILIES) and model.elements["spring"].n == 1
    T, h = 2.0, 1e-3
    res = fm.simulate(model, T, h, rho_inf=1.0)
    assert res.status == "finished"
    q = res.coordinate("guide.q")
    bound = 2 * X0 * OMEGA * T * (OMEGA * h) ** 2 / 12
    err = np.abs(q - closed_form(res.t)).max()
    assert err <= bound, (err, bound)
    # the damped frequency from the zero crossings and the damping ratio from the decrement of the peaks
    s = np.flatnonzero(np.sign(q[1:]) != np.sign(q[:-1]))
    tz = res.t[s] - q[s] * (res.t[s + 1] - res.t[s]) / (q[s + 1] - q[s])
    wd = np.pi / np.diff(tz).mean()
    order = (OMEGA * h) ** 2  # the integrator's relative error, 1e-4 here
    assert wd == pytest.approx(OMEGA * np.sqrt(1 - ZETA**2), rel=order)  # measured 8.2e-6 = (ωh)²/12
    peaks = np.flatnonzero((q[1:-1] > q[:-2]) & (q[1:-1] > q[2:])) + 1
    delta = np.log(q[peaks[0]] / q[peaks[-1]]) / (len(peaks) - 1)
    assert delta / np.sqrt(4 * np.pi**2 + delta**2) == pytest.approx(ZETA, rel=order)  # measured 8.9e-6
    # one Newton correction per step: the family's blocks are the exact tangent of this linear motion
    assert res.stats["newton_iterations"] == res.stats["steps"]
    # energy: the spring's strain energy is in the balance, its damper's power in 'dissipated'
    E0 = 0.5 * K * X0**2
    assert res.energy["strain"][0] == pytest.approx(E0, rel=1e-12)
    assert res.energy["dissipated"][-1] > 0.3 * E0
    drift = np.abs(res.total_energy - res.total_energy[0]).max()
    assert drift <= order * E0  # measured 2.2e-5 E0: the trapezoidal rule's work integral of the damper


def _two_rods() -> fm.ModelBuilder:
    """Two bodies on a chain of two revolute joints, bent (q0 = 0.2, -0.5): the springs' test mechanism."""
    mb = fm.ModelBuilder()
    for i, x in enumerate((0.0, 1.0)):
        mb.add_node(f"n{i}", (x, 0.0, 0.0))
        mb.add_body(f"b{i}", f"n{i}", 1.0, (0, 0, 0), np.eye(3) * 0.1)
    mb.add_joint("j0", "revolute", "ground", "n0", axis=(0, 0, 1), q0=0.2)
    mb.add_joint("j1", "revolute", "n0", "n1", point=(1.0, 0, 0), axis=(0, 0, 1), q0=-0.5)
    return mb


def test_the_new_kind_is_everywhere_the_registry_reaches(springs):
    """Like a bushing, a spring closes a loop of the joint tree; it is drawn (its own cell kind),
    described by flexmb info, its output is on demand (Assembler.element_output), and its
    node wrenches and blocks are consistent (K = -∂(applied force)/∂x by central differences)."""
    mb = _two_rods()
    mb.add_element("spring", SpringSpec("tie", "ground", "n1", 1e3, 2.0, anchor=(1.5, 0.5, 0.0)))
    mb.add_element("spring", SpringSpec("brace", "n0", "n1", 50.0, 0.0))
    with pytest.raises(fm.ModelError, match="duplicate spring element name 'tie'"):
        mb.add_element("spring", SpringSpec("tie", "n0", "n1", 1.0, 0.0))
    with pytest.raises(fm.ModelError, match="unknown node 'n7'"):
        mb.add_element("spring", SpringSpec("loose", "n0", "n7", 1.0, 0.0))
    model = mb.compile()
    assert [lp.cut for lp in model.loops] == ["spring 'tie'", "spring 'brace'"]  # each closes a loop of the tree
    text = fm.describe(model)
    assert "springs: 2" in text and "brace: k = 50 N/m" in text
    d = drawing_of(model)
    cells, kind, _ = lines(d)
    assert cells[kind == cell_kinds().index("spring")].tolist() == [[0, 1]]  # the brace; the tie is on ground
    assert check_drawing(d, model.n_nodes, model.n_joints, {}) == ""
    # a drawing from before the family was registered (none of its arrays) still checks and draws
    old = {k: v for k, v in d.items() if not k.startswith("spring_")}
    assert check_drawing(old, model.n_nodes, model.n_joints, {}) == ""
    assert np.array_equal(lines(old)[0], cells[kind != cell_kinds().index("spring")])
    assert "lacks spring_b" in check_drawing({**old, "spring_a": d["spring_a"]}, model.n_nodes, model.n_joints, {})
    asm = Assembler(model)
    st = model.initial_state()
    ev = asm.evaluate(st)
    force = asm.element_output(ev, "spring", "force")
    fe = ev.elements["spring"]
    assert np.array_equal(force, fe.elastic) and force.shape == (2,)  # at rest: no damper force
    # blocks: K of a spring = -d(applied force on end b)/d(position of b), by central differences, per element
    fam, data = FAMILIES["spring"], model.elements["spring"]
    Kb = fam.blocks(model, data, None, fe, ev.kin, 1.0, 0.0, 0.0, False, False)
    kin, eps = ev.kin, 1e-6
    for e in range(2):
        one = SpringData(**{f.name: getattr(data, f.name)[e:e + 1] for f in dataclasses.fields(data)})
        for j in range(3):  # move end b along x, y, z
            wb = []
            for sgn in (1, -1):
                moved = dataclasses.replace(kin, x=kin.x.copy())
                moved.x[one.b[0], j] += sgn * eps
                w = np.zeros((model.n_nodes + 1, 6))
                fam.evaluate(model, one, None, st, moved, 1.0, None, w)
                wb.append(w[one.b[0], :3])
            fd = (wb[0] - wb[1]) / (2 * eps)
            assert np.abs(fd - Kb[e, 6:9, 6 + j]).max() <= 1e-7 * np.abs(Kb[e]).max()
            assert np.array_equal(Kb[e, 0:3, 6 + j], -Kb[e, 6:9, 6 + j])  # the reaction on end a


def test_the_new_kind_is_animated_in_a_style_of_its_own(springs, tmp_path):
    """flexmb animate draws the cells of a kind it has no style for as purple dotted lines
    labelled by the kind's name: the brace between the two bodies shows in the frames."""
    mb = _two_rods()
    mb.add_element("spring", SpringSpec("brace", "n0", "n1", 50.0, 0.0))
    res = fm.simulate(mb.compile(), 0.02, 1e-3)
    label, colour, _, style, _ = _style(cell_kinds().index("spring"))
    assert (label, colour, style) == ("spring", "tab:purple", "dotted")
    gif = animate(res, tmp_path / "a.gif", every=10)
    with Image.open(gif) as im:
        rgb = np.asarray(im.convert("RGB")).astype(int)
    purple = np.array([148, 103, 189])  # matplotlib's tab:purple
    assert (np.abs(rgb - purple).max(axis=2) <= 16).sum() > 20  # the brace's dotted line, not only its legend mark


def test_info_says_the_users_family_keeps_the_newton_loop_in_python(springs):
    """`flexmb info` names the path a model takes (issue 38): a family flexmb has no compiled kernels for
    keeps Newton in Python and is named as the reason; the same tree with a bushing instead runs each
    step's whole Newton loop in one compiled call."""
    from flexmb.solvers.generalized_alpha import GeneralizedAlpha

    mb = _two_rods()
    mb.add_element("spring", SpringSpec("brace", "n0", "n1", 50.0, 0.0))
    path = GeneralizedAlpha(mb.compile()).newton_path()
    assert path.startswith("Newton loop and iterates in Python") and "'spring' not compiled" in path
    mb = _two_rods()
    mb.add_bushing("brace", "n0", "n1", stiffness=[50.0] * 6, point=(1.0, 0.0, 0.0))
    path = GeneralizedAlpha(mb.compile()).newton_path()
    assert path.startswith("each step's whole Newton loop in one compiled call")
