"""The package's version (read by the run context, the CLI and the model's requirements)."""

__version__ = "0.1.0"
