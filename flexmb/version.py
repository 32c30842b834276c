"""The version of flexmb (a module of its own, so that any module can read it while the package loads)."""

__version__ = "0.1.0"
