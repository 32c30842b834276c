"""Importers: robot descriptions into model builders (URDF: flexmb.importers.urdf)."""
