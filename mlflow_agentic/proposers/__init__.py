"""Proposers: who suggests the next candidate (a list, Optuna TPE, uniform random, an LLM)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mlflow_agentic.core.lazy import lazy_getattr

_EXPORTS = {
    "CandidateProposer": "mlflow_agentic.proposers.base",
    "OptunaProposer": "mlflow_agentic.proposers.optuna",
    "RandomProposer": "mlflow_agentic.proposers.random",
    "SequenceProposer": "mlflow_agentic.proposers.sequence",
}
__all__ = ["CandidateProposer", "OptunaProposer", "RandomProposer", "SequenceProposer"]

if TYPE_CHECKING:
    from mlflow_agentic.proposers.base import CandidateProposer
    from mlflow_agentic.proposers.optuna import OptunaProposer
    from mlflow_agentic.proposers.random import RandomProposer
    from mlflow_agentic.proposers.sequence import SequenceProposer

__getattr__ = lazy_getattr(__name__, _EXPORTS)
