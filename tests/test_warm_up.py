"""warm_up (flexmb.app.warm_up, the set-up's last step) compiles every numba kernel (issue 33).

One fresh process runs warm_up, then a few steps of every seed case of cases/ and of each of its
companion runs (their models, run settings and monitors), and reports

* which kernels had a compiled signature after warm_up: a kernel called from Python has one
  whether numba compiled it or loaded it from its cache; a kernel that only other kernels call
  (and one inlined into them) is compiled into its callers, so it counts as compiled when a
  compiled kernel calls it, directly or through others (the globals its code names);
* which signatures the seed cases added after warm_up: none may, or a first ``flexmb run`` would
  compile (and a companion worker with it).

It works on a cold cache too (then warm_up compiles everything, as at set-up, and every kernel it
reaches has a signature of its own).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = r'''
import json, sys, types
from pathlib import Path

from flexmb.app.warm_up import kernels, warm_up

ks = kernels()
warm_up()


def signatures():
    return {name: sorted(map(str, d.signatures)) for name, d in ks.items()}


def callees(d):
    """The kernels d's code names: globals, and attributes of the modules it names."""
    g, out, codes = d.py_func.__globals__, set(), [d.py_func.__code__]
    while codes:
        code = codes.pop()
        codes += [c for c in code.co_consts if isinstance(c, types.CodeType)]
        for n in code.co_names:
            objs = [g.get(n)] + [getattr(m, n, None) for m in g.values() if isinstance(m, types.ModuleType)]
            out |= {k for k, e in ks.items() for o in objs if o is e}
    return sorted(out)


after = signatures()
report = {"cached": sorted(k for k, d in ks.items() if d.stats.cache_path is not None),
          "compiled": sorted(k for k, s in after.items() if s),
          "calls": {k: callees(d) for k, d in ks.items()}, "new": {}}

import flexmb as fm
from flexmb.app.casefile import load_case
from flexmb.app.companions import companion_params

for path in sorted(Path(sys.argv[1]).glob("*.py")):
    if path.name.startswith("study_"):  # sweeps over the cases below
        continue
    cs = load_case(path)
    runs = {"main": cs.defaults, **companion_params(cs, cs.defaults)}
    for label, p in runs.items():
        model = cs.build(p)
        settings = cs.settings(p).as_dict()
        settings["t_end"] = 10 * settings["dt"]
        fm.simulate(model, **settings, callback=cs.monitor(model, p))
        now = signatures()
        new = {k: sorted(set(now[k]) - set(after[k])) for k in now if set(now[k]) - set(after[k])}
        if new:
            report["new"][f"{cs.name}/{label}"] = new
        after = now
print(json.dumps(report))
'''


@pytest.fixture(scope="module")
def report() -> dict:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_DISABLE_JIT"}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(ROOT / "cases")], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=1800)  # the timeout only guards against a hang (a cold cache: minutes)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_warm_up_compiles_every_cached_kernel(report):
    """Every @njit(cache=True) function of flexmb and its elements is compiled by warm_up (issue 33:
    the monitors' _link_closure, and the rotation kernels only users call, were not)."""
    assert len(report["cached"]) > 90  # the listing found flexmb's kernels (103 at issue 33)
    covered, todo = set(), list(report["compiled"])
    while todo:
        k = todo.pop()
        if k not in covered:
            covered.add(k)
            todo += report["calls"][k]
    missing = sorted(set(report["cached"]) - covered)
    assert not missing, f"warm_up compiles none of {missing}: run them in flexmb/app/warm_up.py"


def test_seed_cases_compile_nothing_after_warm_up(report):
    """A few steps of every seed case and its companions, with its monitor, compile no kernel signature
    that warm_up did not (issue 33: the six-link case's monitor compiled _link_closure, in its
    companion worker too)."""
    assert not report["new"], f"signatures compiled after warm_up, by case/run: {report['new']}"
