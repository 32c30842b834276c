"""Compiled (numba) kernels of the co-rotational beam: the hot path of every Newton iteration.

They compute, element by element in one pass, exactly what the vectorised test oracles of
:mod:`flexmb.elements.beam.reference` compute (tests/test_beam_compiled.py compares both): the
co-rotated frame and local deformations (eq. 1–4 of :mod:`flexmb.elements.beam`), elastic and
damping forces, the consistent-mass inertia forces (eq. 5–6), the weight (eq. 7), and, for the
iteration matrix, the element matrices ck K + cc C + cm M with K the material stiffness plus the
string (axial force) geometric stiffness. The compiled Newton iterates take the residual and the
mass forces of the node accelerations in one pass (residual_and_mass_forces: each element's frame
and mass read once, the same values as the two passes).

Given ``threads`` > 1 (flexmb/engine/parallel.py, threads_for: from PARALLEL_MIN elements on, when
numba has more than one thread) the three per-element passes split the elements into one contiguous
slice per thread; each element's node forces (or matrix products) go into a row of their own and are
added to the nodes afterwards, element after element: the same sums in the same order as on one
thread, so the result does not depend on the threads (tests/test_beam_threads.py). A worker process
of a sweep gets one thread (flexmb.app.executors).

The kernels live in two modules by what they compute: elements/beam/residual_kernels.py (the
co-rotated frames, the residual and the mass forces) and elements/beam/matrix_kernels.py (the
element matrices and their scatter into the iteration matrix); this module re-exports both.
"""

from __future__ import annotations

from flexmb.elements.beam.matrix_kernels import add_element_matrices, element_matrices
from flexmb.elements.beam.residual_kernels import mass_forces, mass_pattern, residual, residual_and_mass_forces

__all__ = ["residual", "residual_and_mass_forces", "mass_forces", "element_matrices", "add_element_matrices",
           "mass_pattern"]
