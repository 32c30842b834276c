"""Where ``simulate``'s setting checks used to live, kept as a re-export for the code that imports
them from here (``from flexmb.solvers.run_settings import StepsWarning``; flexmb.solvers.simulate):
they live in :mod:`flexmb.settings`, the one home of the run settings, their defaults, limits and
checks. Import them from there."""

from flexmb.settings import AUTO, StepsWarning, check_auto, check_count, check_settings, step_count

__all__ = ["check_settings", "check_auto", "check_count", "step_count", "AUTO", "StepsWarning"]
