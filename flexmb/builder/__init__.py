"""The user side (MuJoCo's src/user): ``ModelBuilder`` input checks and records
(model_builder.py and its parts record_tables.py, drives_and_loads.py, loop_cuts.py,
flexible_links.py; records.py), the compiler to an immutable Model (compile.py), particle
bodies as a builder extension (particle_bodies.py) and the checks that run the engine on the
compiled model (checks.py)."""
