"""Memory of a run (issue 38; docs/memory.md): what ``import flexmb`` leaves out, and numba's cached
kernels loaded without their LLVM IR (flexmb/engine/jit_cache.py), checked against numba's own loading:
the same defined symbols kernel by kernel, the same results bit for bit, and a kernel compiled later
that calls a loaded one links it in."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from numba import njit

import flexmb  # noqa: F401  (installs the loading of jit_cache)
from flexmb import rotations
from flexmb.engine import jit_cache

TESTS = Path(__file__).parent

#: on a numba that jit_cache was not checked against, numba's own loading runs (nothing to compare)
checked_numba = pytest.mark.skipif(not jit_cache.installed(), reason="jit_cache not installed: numba "
                                   "is not a version it was checked against (CHECKED_NUMBA), numba's own loading runs")


def _python(code: str) -> dict:
    """Run ``code`` in a fresh interpreter (nothing imported yet) and read the JSON it prints last."""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=TESTS)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_import_flexmb_leaves_out_what_a_run_does_not_use():
    """An event, not a size: plotting, mesh export and CHOLMOD are imported by what uses them, and a run
    on the dense or band factor (a small four-bar closed by bushings) still does not import CHOLMOD."""
    out = _python(
        "import sys, json, flexmb as fm\n"
        "from cut_mechanisms import n_four_bar\n"
        "lazy = ['matplotlib', 'meshio', 'sksparse']\n"
        "after_import = [m for m in lazy if m in sys.modules]\n"
        "fm.simulate(n_four_bar(2, 'elastic'), 3e-3, 1e-3)\n"
        "print(json.dumps({'import': after_import, 'run': [m for m in lazy if m in sys.modules]}))\n")
    assert out == {"import": [], "run": []}


def test_an_unchecked_numba_or_the_environment_keeps_numbas_own_loading(monkeypatch):
    """install() declines on a numba version outside CHECKED_NUMBA and with FLEXMB_NUMBA_CACHE=plain."""
    import numba

    monkeypatch.setattr(numba, "__version__", "0.99.0")
    assert not jit_cache._numba_as_expected()
    monkeypatch.undo()
    monkeypatch.setenv("FLEXMB_NUMBA_CACHE", "plain")
    assert not jit_cache._numba_as_expected()
    code = "import json, flexmb\nfrom flexmb.engine import jit_cache\nprint(json.dumps({'on': jit_cache.installed()}))"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=TESTS,
                       env={**os.environ, "FLEXMB_NUMBA_CACHE": "plain"})
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout.strip().splitlines()[-1]) == {"on": False}


@checked_numba
def test_a_kernel_compiled_later_links_in_a_loaded_one():
    """A new kernel calling a loaded kernel parses the kept bitcode on demand: R(φ)R(φ) = R(2φ)."""
    phi = np.array([0.3, -0.2, 0.5])
    R = np.empty((3, 3))
    rotations.expm_into(phi, R)

    @njit
    def squared(p, out):
        rotations.expm_into(p, out)
        return out @ out

    got = squared(phi, np.empty((3, 3)))
    assert np.abs(got - rotations.expm(2.0 * phi)).max() <= 8 * np.finfo(float).eps
    for overload in rotations.expm_into.overloads.values():
        assert "_flexmb_bitcode" not in vars(overload.library)  # parsed once it was linked


_RUN = """
import sys, json, hashlib
import numpy as np
import numba
import flexmb as fm
from flexmb.engine import jit_cache
from cut_mechanisms import n_four_bar
compared, differ = 0, []
if sys.argv[1] == "numba":
    jit_cache.uninstall()
    numbas = jit_cache._original_unserialize.__func__

    def unserialize(cls, codegen, state):  # docs/memory.md (J2) against the module numba parses
        global compared
        lib = numbas(cls, codegen, state)
        if state[1] == "object":
            mod = lib._shared_module
            defined = {{g.name for gs in (mod.functions, mod.global_variables) for g in gs if not g.is_declaration}}
            symbols = jit_cache.elf_defined_symbols(state[2][0])
            compared += symbols is not None
            if symbols is not None and symbols != defined:
                differ.append(state[0])
        return lib

    numba.core.codegen.CPUCodeLibrary._unserialize = classmethod(unserialize)
res = fm.simulate(n_four_bar(2, "{cut}"), 0.02, 1e-3)
h = hashlib.sha256()
for key in sorted(vars(res)):
    v = getattr(res, key)
    if isinstance(v, np.ndarray) and v.dtype.kind == "f":
        h.update(key.encode()); h.update(np.ascontiguousarray(v).tobytes())
lazy = unparsed = 0
kernels = {{id(obj): obj for n, m in list(sys.modules.items()) if n.startswith("flexmb.") for obj in vars(m).values()
           if isinstance(obj, numba.core.dispatcher.Dispatcher) and obj.stats.cache_hits}}
for obj in kernels.values():
    for ov in obj.overloads.values():
        lazy += 1
        unparsed += "_flexmb_bitcode" in vars(ov.library) and ov.library._shared_module is None
print(json.dumps({{"status": res.status, "hash": h.hexdigest(), "cached": lazy, "unparsed": unparsed,
                  "compared": compared, "differ": differ}}))
"""


@checked_numba
@pytest.mark.parametrize("cut", ["elastic", "rigid"])
def test_runs_are_the_same_bit_for_bit_with_numbas_own_loading(cut):
    """The compiled run of a two-window four-bar (bushings; rigid cuts) in two fresh processes, kernels
    loaded by jit_cache and by numba: the same result arrays bit for bit; with jit_cache, every kernel
    loaded from the cache kept its IR unparsed; with numba's loading, the symbols read from each kernel's
    object file (docs/memory.md (J2)) are the defined functions and globals of the module numba parses."""
    code = _RUN.format(cut=cut)
    ours = subprocess.run([sys.executable, "-c", code, "flexmb"], capture_output=True, text=True, timeout=300, cwd=TESTS)
    numbas = subprocess.run([sys.executable, "-c", code, "numba"], capture_output=True, text=True, timeout=300, cwd=TESTS)
    assert ours.returncode == 0 and numbas.returncode == 0, ours.stderr + numbas.stderr
    a, b = (json.loads(p.stdout.strip().splitlines()[-1]) for p in (ours, numbas))
    assert a["status"] == "finished" and a["hash"] == b["hash"]
    if not a["cached"]:
        pytest.skip("no kernel came from numba's cache (a fresh checkout): nothing loaded lazily to check")
    assert a["unparsed"] == a["cached"] and b["unparsed"] == 0
    assert b["compared"] >= a["cached"] and b["differ"] == []
    assert jit_cache.elf_defined_symbols(b"not an object file") is None
