"""Proposers: who suggests the next candidate (a list, Optuna TPE, uniform random, an LLM)."""

from mlflow_agentic.proposers.base import CandidateProposer
from mlflow_agentic.proposers.optuna import OptunaProposer
from mlflow_agentic.proposers.random import RandomProposer
from mlflow_agentic.proposers.sequence import SequenceProposer

__all__ = ["CandidateProposer", "OptunaProposer", "RandomProposer", "SequenceProposer"]
