"""The output row's quantities computed without copies (issue 38 item 2): the beams' section forces written
column by column, the rigid bodies' weight potential read in place and the origin's potential tested by its
entries give the same numbers as before, bit for bit, and the values the formulas say."""

from __future__ import annotations

import types

import numpy as np

from flexmb.elements.beam import exact
from flexmb.elements.family import origin_potential
from flexmb.elements.rigid_body import _potential_energy_at, potential_energy
from flexmb.rotations import expm


def _stacked(fl: np.ndarray, L0: np.ndarray) -> np.ndarray:
    """The section forces as exact.section_forces formed them before (np.stack of the six columns)."""
    N, T = fl[:, 0], fl[:, 4]
    My1, Mz1, My2, Mz2 = fl[:, 2], fl[:, 3], fl[:, 5], fl[:, 6]
    return np.stack([N, (Mz1 + Mz2) / L0, -(My1 + My2) / L0, T, 0.5 * (My2 - My1), 0.5 * (Mz2 - Mz1)], axis=1)


def test_section_forces_are_the_stacked_columns_bit_for_bit_and_the_formulas_values():
    rng = np.random.default_rng(38)
    fl = rng.normal(size=(17, 7)) * 10.0 ** rng.integers(-3, 6, size=(17, 7))
    L0 = rng.uniform(0.01, 3.0, 17)
    out = exact.section_forces(fl, L0)
    assert out.shape == (17, 6) and out.flags.c_contiguous
    assert np.array_equal(out, _stacked(fl, L0))
    # one element by hand: N = 5, T = 2, end moments My1 = 1, Mz1 = 3, My2 = -4, Mz2 = 7 over L0 = 2
    one = exact.section_forces(np.array([[5.0, 0.0, 1.0, 3.0, 2.0, -4.0, 7.0]]), np.array([2.0]))
    assert one.tolist() == [[5.0, 5.0, 1.5, 2.0, -2.5, 2.0]]
    assert exact.section_forces(np.zeros((0, 7)), np.zeros(0)).shape == (0, 6)


def test_bodies_potential_read_in_place_is_that_of_the_copies_bit_for_bit():
    rng = np.random.default_rng(7)
    N, nb = 9, 6
    x = rng.normal(size=(N, 3)) * 50.0
    R = np.stack([expm(v) for v in rng.normal(size=(N, 3))])
    node = np.array([3, 0, 8, 3, 5, 1])
    mass, com, g = rng.uniform(0.1, 20.0, nb), rng.normal(size=(nb, 3)), np.array([0.3, -9.81, 0.1])
    V = _potential_energy_at(x, R, node, mass, com, g)
    assert V == potential_energy(x[node], R[node], mass, com, g)
    expected = -sum(m * g @ (x[i] + R[i] @ c) for i, m, c in zip(node, mass, com))
    assert abs(V - expected) <= 1e-12 * np.sum(np.abs(mass)) * 9.82 * 60.0


def test_origin_potential_is_the_weight_at_the_origin_and_zero_without_one():
    mass = np.array([2.0, 3.0])
    model = types.SimpleNamespace(origin=np.zeros(3), gravity=np.array([0.0, -9.81, 0.0]))
    assert origin_potential(model, mass) == 0.0
    model.origin = np.array([0.0, 4.0, 0.0])
    assert origin_potential(model, mass) == -5.0 * (-9.81 * 4.0)
    model.origin = np.array([0.0, 0.0, np.nan])  # counted as set, as origin.any() counted it
    assert np.isnan(origin_potential(model, mass))
