"""Spring-damper force laws F(l, l', t) in the compiled element step (docs/spring_damper.md (S12), (S13);
flexmb/solvers/law_step.py): each law compiled with numba into a C function the compiled step calls by
its address, with the arithmetic of the Python reference, so a run is the Python Newton loop's bit for
bit (the complex-step tangent, the central differences of a law that does not carry it, a given
tangent; the compiled run of many steps and the compiled iterates on CHOLMOD); a law numba does not
compile, or whose compiled complex step is not Python's, keeps the Python loop, named."""

from __future__ import annotations

import numpy as np
import pytest
from test_element_run import _assert_same, _both
from test_spring_damper import _python

import flexmb as fm
from flexmb.solvers.element_run import ElementRun
from flexmb.solvers.generalized_alpha import GeneralizedAlpha

K, C, L0 = 200.0, 0.5, 0.25


def hardening(l, v, t):
    """Complex-step tangents (products, not powers: numba's z**n is not complex-step safe); time too."""
    s = l - L0
    return K * s + 4e4 * s * s * s + C * v * (1.0 + 10.0 * t)


def stop(l, v, t):
    """min: no complex step in Python nor in numba: central differences on both."""
    return min(K * (l - L0), 3.0) + C * v


def pushes(l, v, t):
    """A one-sided contact, its tangent given (it calls the law: compiled with it)."""
    return min(5e3 * (l - 0.45) + 2.0 * v, 0.0)


def pushes_tangent(l, v, t):
    return (5e3, 2.0) if pushes(l, v, t) < 0.0 else (0.0, 0.0)


def law_chain(law=hardening) -> fm.Model:
    """tests/test_spring_damper.py's chain with three more spring-dampers given by force laws."""
    n = 6
    mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    for i in range(n):
        mb.add_node(f"n{i}", (0.3 * i, 0.0, 0.0))
        mb.add_body(f"b{i}", f"n{i}", 0.5, (0.15, 0.0, 0.0), np.diag([1e-4, 4e-3, 4e-3]))
        mb.add_joint(f"j{i}", "revolute", "ground" if i == 0 else f"n{i - 1}", f"n{i}", point=(0.3 * i, 0.0, 0.0),
                     axis=(0, 0, 1))
        if i:
            mb.add_spring_damper(f"sd{i}", f"n{i - 1}", f"n{i}", stiffness=200.0, damping=0.5,
                                 point_a=(0.3 * i - 0.15, 0.05, 0.0), point_b=(0.3 * i + 0.15, 0.05, 0.0))
    mb.add_spring_damper("top", "ground", f"n{n - 1}", stiffness=50.0, damping=0.2, point_a=(0.3 * n, 0.5, 0.0),
                         point_b=(0.3 * n, 0.0, 0.0))
    mb.add_spring_damper("law", "n1", "n3", point_a=(0.45, 0.05, 0.0), point_b=(0.75, 0.05, 0.0), force_law=law)
    mb.add_spring_damper("stop", "n2", "n4", point_a=(0.75, -0.05, 0.0), point_b=(1.05, -0.05, 0.0), force_law=stop)
    mb.add_spring_damper("floor", "ground", "n5", point_a=(1.8, -0.45, 0.0), point_b=(1.8, 0.0, 0.0), force_law=pushes,
                         force_law_tangent=pushes_tangent)
    return mb.compile()


@pytest.mark.parametrize("solver", ["auto", "cholmod"])
def test_force_laws_take_the_compiled_step_bit_for_bit(monkeypatch, solver) -> None:
    """The laws compiled (flexmb info says so), the compiled run of many steps (dense factor) and the compiled
    iterates (CHOLMOD) against the Python Newton loop: rows, spring-dampers, energies bit for bit."""
    model = law_chain()
    integ = GeneralizedAlpha(model, linear_solver=solver)
    text = integ.describe_solver()
    assert integ.element_step is not None and "iterates in Python" not in text, text
    assert "force laws compiled with numba" in text
    fast = fm.simulate(model, 0.3, 1e-3, output_every=10, linear_solver=solver)
    slow = _python(monkeypatch, model, 0.3, 1e-3, output_every=10, linear_solver=solver)
    assert fast.status == "finished" and fast.energy["dissipated"][-1] > 0
    for name in ("q", "u", "udot", "spring_dampers", "newton_iterations"):
        np.testing.assert_array_equal(getattr(fast, name), getattr(slow, name), err_msg=name)
    np.testing.assert_array_equal(fast.energy["dissipated"], slow.energy["dissipated"])
    F = fast.spring_damper("floor", "force")
    assert F.min() < 0.0 and F.max() == 0.0  # the contact pushed and lifted off
    if solver == "auto":
        assert ElementRun.applies(integ, None)
        run, step, calls = _both(monkeypatch, model, 0.3, 1e-3, output_every=10)
        assert calls
        _assert_same(run, step)
        np.testing.assert_array_equal(run.q, fast.q)


class Gains:
    k = K


def test_a_law_numba_does_not_compile_is_named_and_runs_in_python() -> None:
    """A law reading a Python object keeps the Python Newton loop; describe_solver names the element and numba's
    error, and the motion is the one of the same law written with a number (compiled)."""
    gains = Gains()
    slow_model = law_chain(lambda l, v, t: gains.k * (l - L0) + C * v)
    integ = GeneralizedAlpha(slow_model)
    text = integ.describe_solver()
    assert integ.element_step is None
    assert "spring-damper 'law': its force law does not compile with numba" in text and "Error" in text, text
    fast_model = law_chain(lambda l, v, t: K * (l - L0) + C * v)
    assert GeneralizedAlpha(fast_model).element_step is not None
    a, b = fm.simulate(slow_model, 0.1, 1e-3), fm.simulate(fast_model, 0.1, 1e-3)
    np.testing.assert_array_equal(a.q, b.q)


def test_a_power_numba_does_not_carry_the_complex_step_through_is_refused() -> None:
    """numba forms z**3 of a complex z by its polar form: the imaginary part of a negative base's cube is
    round-off, not 3 x² h. The compiled tangents are checked against Python's: such a law stays in Python,
    the reason saying what to write instead."""
    model = law_chain(lambda l, v, t: K * (l - L0) + 4e4 * (l - L0) ** 3 + C * v)
    text = GeneralizedAlpha(model).describe_solver()
    assert "spring-damper 'law'" in text and "x*x*x" in text and "in Python" in text, text


def test_a_force_actuator_law_is_compiled_with_its_argument_order() -> None:
    """A force actuator's f(t, l, l') compiles too: the chain's run with it equals the one with the spring-damper
    of the same law F(l, l', t)."""
    def spring(**kw):
        mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
        mb.add_node("n", (0.3, 0.0, 0.0))
        mb.add_body("b", "n", 0.5, (0.15, 0.0, 0.0), np.diag([1e-4, 4e-3, 4e-3]))
        mb.add_joint("j", "revolute", "ground", "n", point=(0.0, 0.0, 0.0), axis=(0, 0, 1))
        mb.add_bushing("tip", "ground", "n", stiffness=[1e4] * 6, free_rotation="z", point=(0.0, 0.0, 0.0))
        if "force" in kw:
            mb.add_actuator("cyl", "ground", "n", point_a=(0.3, 0.4, 0.0), point_b=(0.45, 0.0, 0.0), **kw)
        else:
            mb.add_spring_damper("cyl", "ground", "n", point_a=(0.3, 0.4, 0.0), point_b=(0.45, 0.0, 0.0), **kw)
        return mb.compile()
    act = spring(force=lambda t, l, v: 30.0 * (l - 0.4) * (l - 0.4) + 0.3 * v)
    sd = spring(force_law=lambda l, v, t: 30.0 * (l - 0.4) * (l - 0.4) + 0.3 * v)
    assert "force laws compiled with numba" in GeneralizedAlpha(act).describe_solver()
    a, b = fm.simulate(act, 0.1, 1e-3), fm.simulate(sd, 0.1, 1e-3)
    np.testing.assert_array_equal(a.q, b.q)


def test_law_tangents_by_complex_step_match_central_differences_and_the_derivatives() -> None:
    """(S13) and (R15): the tangents (∂F/∂l, ∂F/∂l') the blocks take from a force law, and (∂T/∂φ, ∂T/∂φ') from a
    rotational spring-damper's torque law. A law that carries the complex step (``hardening``): its tangents are the
    analytic derivatives to round-off (16 eps of the derivative's size) and agree with central differences of the law
    (step 1e-6: truncation h² |F'''| / 6 ~ 1e-8 and round-off eps |F| / h ~ 1e-10 of the size, asserted 1e-7). A law
    that does not (``stop``: min): Richardson central differences, the derivative of the branch it is on to 1e-9
    relative. A given tangent (``pushes_tangent``) is returned as given."""
    from flexmb.elements import rotational_spring_damper as rotational
    from flexmb.elements import spring_damper as sd

    eps = np.finfo(float).eps
    data = law_chain().elements["spring_damper"]
    law, stp, floor = (data.names.index(n) for n in ("law", "stop", "floor"))
    for l, v, t in ((0.31, -0.4, 0.0), (0.18, 1.3, 0.7), (0.29, 0.05, 2.0)):
        s = l - L0
        exact = (K + 3 * 4e4 * s * s, C * (1.0 + 10.0 * t))
        got = sd.law_tangent(data, law, l, v, t)
        h = 1e-6
        fd = ((hardening(l + h, v, t) - hardening(l - h, v, t)) / (2 * h),
              (hardening(l, v + h, t) - hardening(l, v - h, t)) / (2 * h))
        for g, e, f in zip(got, exact, fd):
            assert abs(g - e) <= 16 * eps * abs(e), (g, e)
            assert abs(g - f) <= 1e-7 * abs(e), (g, f)
        # min(K (l - L0), 3) + C v: slope K below the stop at l = L0 + 3 / K = 0.265 m, 0 above it
        dl, dv = sd.law_tangent(data, stp, l, v, t)
        assert dl == pytest.approx(K if s < 3.0 / K else 0.0, rel=1e-9, abs=1e-9 * K)
        assert dv == pytest.approx(C, rel=1e-9)
        assert sd.law_tangent(data, floor, l, v, t) == pushes_tangent(l, v, t)
    # the torque law of a rotational spring-damper: the same, on φ and φ'
    mb = fm.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    mb.add_node("d", (0.0, 0.0, 0.0))
    mb.add_body("d", "d", 1.0, (0.0, 0.0, 0.0), np.diag([0.1, 0.15, 0.2]))
    mb.add_joint("O", "revolute", "ground", "d", axis=(0, 0, 1))

    def torque(p, w, t):
        return 50.0 * np.sin(p) + 0.3 * w * w * w * (1.0 + t)

    mb.add_rotational_spring_damper("rs", "ground", "d", axis=(0, 0, 1), law=torque)
    rdata = mb.compile().elements["rotational_spring_damper"]
    for p, w, t in ((0.4, -1.1, 0.0), (2.9, 0.6, 1.5)):
        exact = (50.0 * np.cos(p), 0.9 * w * w * (1.0 + t))
        got = rotational.law_tangent(rdata, 0, p, w, t)
        h = 1e-6
        fd = ((torque(p + h, w, t) - torque(p - h, w, t)) / (2 * h), (torque(p, w + h, t) - torque(p, w - h, t)) / (2 * h))
        for g, e, f in zip(got, exact, fd):
            assert abs(g - e) <= 16 * eps * (abs(e) + 50.0), (g, e)
            assert abs(g - f) <= 1e-7 * (abs(e) + 50.0), (g, f)
