"""The application: case files, the one run pipeline, sweeps, progress, model description, the CLI."""
