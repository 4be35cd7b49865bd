"""Proposers: who suggests the next candidate (a list, Optuna; an LLM in a later module)."""

from mlflow_agentic.proposers.base import CandidateProposer
from mlflow_agentic.proposers.optuna import OptunaProposer
from mlflow_agentic.proposers.sequence import SequenceProposer

__all__ = ["CandidateProposer", "OptunaProposer", "SequenceProposer"]
