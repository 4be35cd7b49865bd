"""Benchmarks that ship with the product (``mlflow-agentic bench ...``)."""
