"""Time integration (generalized-α), the simulation loop, statics and modal analysis."""
