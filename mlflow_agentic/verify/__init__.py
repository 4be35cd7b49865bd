"""Deterministic verification of scores."""

from mlflow_agentic.verify.verifier import DEFAULT_MARGIN, DeterministicVerifier

__all__ = ["DEFAULT_MARGIN", "DeterministicVerifier"]
