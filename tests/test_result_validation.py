"""Crafted and tampered result files: a saved result (.npz) whose member declares far more data
than the rest of the file accounts for is refused from its headers, before any of that data is
inflated."""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest

import flexmb as fm
from flexmb.app.casefile import load_case
from flexmb.errors import ResultFileError
from flexmb.solvers.simulate import simulate

PENDULUM = Path(__file__).resolve().parent / "cases" / "flexible_pendulum.py"
GiB = 2**30


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    """The flexible pendulum's default run (21 rows) saved by Result.save."""
    case = load_case(PENDULUM)
    p = case.defaults
    res = simulate(case.build(p), p["t_end"], p["dt"], rho_inf=p["rho_inf"])
    assert res.status == "finished" and res.t.size == 21
    return res.save(tmp_path_factory.mktemp("saved") / "pendulum.npz")


def replaced(src: Path, dst: Path, name: str, write) -> Path:
    """A copy of the .npz ``src`` whose member ``name`` is written by ``write(zf, info)`` instead."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            if info.filename == f"{name}.npy":
                member = zipfile.ZipInfo(info.filename)
                member.compress_type = zipfile.ZIP_DEFLATED
                write(zout, member)
            else:
                zout.writestr(info, zin.read(info))
    return dst


def zeros_declaring(shape: tuple, dtype: str = "<f8"):
    """A member: a .npy header declaring ``shape`` followed by that many zero bytes (deflated:
    1 GiB of zeros takes 1 MB), a valid member of a zip file (size and CRC right)."""
    def write(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> None:
        head = io.BytesIO()
        np.lib.format.write_array_header_1_0(head, {"descr": dtype, "fortran_order": False, "shape": shape})
        left = int(np.prod(shape)) * np.dtype(dtype).itemsize
        block = bytes(2**20)
        with zf.open(info, "w", force_zip64=True) as f:
            f.write(head.getvalue())
            while left:
                f.write(block[:min(left, len(block))])
                left -= min(left, len(block))
    return write


@pytest.fixture
def inflated(monkeypatch) -> list[int]:
    """The number of bytes zipfile inflates from now on (one entry: the running total)."""
    total = [0]
    real = zipfile._get_decompressor

    class Counting:
        def __init__(self, d):
            self.d = d

        def decompress(self, data, max_length=0):
            out = self.d.decompress(data, max_length)
            total[0] += len(out)
            return out

        def __getattr__(self, name):
            return getattr(self.d, name)

    monkeypatch.setattr(zipfile, "_get_decompressor", lambda kind: Counting(real(kind)) if kind == zipfile.ZIP_DEFLATED
                        else real(kind))
    return total


@pytest.mark.parametrize("member, shape, what", [
    ("t", (GiB // 8,), r"'t' \(declared shape \(134217728,\), 1073741824 bytes\) and 'q' \(declared shape \(21, \d+\)"),
    ("q", (GiB // 8 // 21 + 1, 21), r"'t' \(declared shape \(21,\), 168 bytes\) and 'q' \(declared shape \(6391321, 21\)"),
    ("node_names", (2**24,), r"array 'node_names' declares shape \(16777216,\)"),
])
def test_a_member_declaring_a_gigabyte_is_refused_before_it_is_inflated(saved, tmp_path, inflated, member, shape, what):
    honest = inflated[0]
    fm.load(saved)  # what loading the honest file inflates: the members' headers, 't', the names and texts
    honest = inflated[0] - honest
    dtype = "<U16" if member.endswith("names") else "<f8"
    bomb = replaced(saved, tmp_path / "bomb.npz", member, zeros_declaring(shape, dtype))
    assert bomb.stat().st_size < 2 * 2**20  # a 1 MB file
    with zipfile.ZipFile(bomb) as zf:
        assert zf.getinfo(f"{member}.npy").file_size > GiB  # whose member declares (and inflates to) a gigabyte
    before = inflated[0]
    with pytest.raises(ResultFileError) as info:
        fm.load(bomb)
    assert inflated[0] - before < honest  # less than the honest file: nothing of the gigabyte
    assert re.search(what, str(info.value)) and str(bomb) in str(info.value), str(info.value)
