"""MLflow's extension points, implemented by mlflow-agentic. Thin on purpose: each plugin
imports the library lazily and calls it, so a problem in the library shows up as a warning in
MLflow, never as a broken ``import mlflow``."""
