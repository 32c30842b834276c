"""Loading flexmb's cached numba kernels without their LLVM IR (issue 38; docs/memory.md §3).

numba caches a compiled kernel (``cache=True``) as its machine code (an object file) together with
the bitcode of its whole optimised LLVM module, the "module for linking" that a later compilation of
a caller inlines. Loading a kernel from the cache parses that bitcode into an in-memory LLVM module
(numba 0.68, ``CPUCodeLibrary._unserialize``) only to list the symbols it defines and to keep it in
case a caller is compiled. In memory the module is 20-25 times its bitcode: the whole-run kernel of
closed loops (flexmb/solvers/element_run.py, 3.5 MB of bitcode) costs 81 MB, the compiled Newton step
26 MB, while their machine code costs 8 and 5 MB (docs/memory.md (J1)).

:func:`install` replaces that one step: the defined symbols are read from the object file's ELF
symbol table (:func:`elf_defined_symbols`, docs/memory.md (J2); the same names as the module's
defined functions and globals, checked kernel by kernel in tests/test_memory.py), and the bitcode is
parsed only when a caller is compiled that links the kernel in (``_get_module_for_linking``, (J3)).
The machine code loaded and run is numba's own, unchanged: results are the same bit for bit. Where
the object file is not 64-bit little-endian ELF (macOS, Windows), numba is not a version it was
checked against (:data:`CHECKED_NUMBA`, 0.68) or numba's internals are not the ones this was written
against, numba's own loading runs; ``FLEXMB_NUMBA_CACHE=plain`` in the environment asks for numba's
own loading too (more memory, the same results).
"""

from __future__ import annotations

import os
import struct

import numba
import numba.core.codegen as _codegen
from llvmlite import binding as _ll

__all__ = ["CHECKED_NUMBA", "elf_defined_symbols", "install", "installed", "uninstall"]

#: the numba versions (major, minor) whose cache loading this module was checked against (tests/test_memory.py)
CHECKED_NUMBA = ((0, 68),)

_SHT_SYMTAB = 2
_STT_SECTION, _STT_FILE = 3, 4
_original_unserialize = _codegen.CPUCodeLibrary.__dict__["_unserialize"]
_original_linking = _codegen.CPUCodeLibrary._get_module_for_linking


def elf_defined_symbols(obj: bytes) -> set[str] | None:
    """The names of the symbols an ELF64 little-endian object file defines (docs/memory.md (J2): section
    index not SHN_UNDEF, neither a section nor a file symbol), or None if ``obj`` is not such a file."""
    if len(obj) < 64 or obj[:4] != b"\x7fELF" or obj[4] != 2 or obj[5] != 1:
        return None
    (shoff,) = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    names: set[str] = set()
    for i in range(shnum):
        head = shoff + i * shentsize
        if struct.unpack_from("<I", obj, head + 4)[0] != _SHT_SYMTAB:
            continue
        sym_off, sym_size, link, _, _, entsize = struct.unpack_from("<QQIIQQ", obj, head + 24)
        (str_off,) = struct.unpack_from("<Q", obj, shoff + link * shentsize + 24)
        for s in range(sym_off, sym_off + sym_size, entsize):
            name, info, _, shndx = struct.unpack_from("<IBBH", obj, s)
            if shndx == 0 or name == 0 or (info & 0xF) in (_STT_SECTION, _STT_FILE):
                continue
            start = str_off + name
            names.add(obj[start:obj.index(b"\0", start)].decode())
    return names


def _unserialize(cls, codegen, state):
    """numba's ``_unserialize`` for an object-code library, its bitcode kept unparsed (docs/memory.md (J3))."""
    name, kind, data = state
    symbols = elf_defined_symbols(data[0]) if kind == "object" else None
    if symbols is None:
        return _original_unserialize.__func__(cls, codegen, state)
    self = codegen.create_library(name)
    self.enable_object_caching()
    self._set_compiled_object(data[0])
    self._flexmb_bitcode = data[1]
    self._finalize_final_module()
    self._codegen._engine._defined_symbols |= symbols
    return self


def _get_module_for_linking(self):
    """numba's module for linking, parsed from the kept bitcode the first time a caller needs it."""
    bitcode = self.__dict__.pop("_flexmb_bitcode", None)
    if bitcode is not None:
        self._shared_module = _ll.parse_bitcode(bitcode)
    return _original_linking(self)


def _numba_as_expected() -> bool:
    version = tuple(int(p) for p in numba.__version__.split(".")[:2] if p.isdigit())
    if version not in CHECKED_NUMBA or os.environ.get("FLEXMB_NUMBA_CACHE", "") == "plain":
        return False
    lib = _codegen.CPUCodeLibrary
    engine = getattr(_codegen, "JitEngine", None)
    return (isinstance(_original_unserialize, classmethod) and engine is not None
            and all(hasattr(lib, a) for a in ("enable_object_caching", "_set_compiled_object", "_finalize_final_module"))
            and hasattr(engine, "_load_defined_symbols"))


def install() -> bool:
    """Load cached kernels without parsing their LLVM IR (idempotent; importing this module, which
    flexmb's import does first, calls it).
    True if installed, False where numba is not the version this was written against."""
    if installed():
        return True
    if not _numba_as_expected():
        return False
    _codegen.CPUCodeLibrary._unserialize = classmethod(_unserialize)
    _codegen.CPUCodeLibrary._get_module_for_linking = _get_module_for_linking
    return True


def uninstall() -> None:
    """numba's own loading of cached kernels again, from the next kernel loaded on (tests compare the two)."""
    _codegen.CPUCodeLibrary._unserialize = _original_unserialize
    _codegen.CPUCodeLibrary._get_module_for_linking = _original_linking


def installed() -> bool:
    """Whether :func:`install` has replaced numba's loading of cached kernels in this process."""
    return _codegen.CPUCodeLibrary.__dict__["_unserialize"].__func__ is _unserialize


install()
