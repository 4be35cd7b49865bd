"""Deterministic verification of scores, and arithmetic leakage checks."""

from mlflow_agentic.verify.leakage import Finding
from mlflow_agentic.verify.verifier import DEFAULT_MARGIN, DeterministicVerifier

__all__ = ["DEFAULT_MARGIN", "DeterministicVerifier", "Finding"]
