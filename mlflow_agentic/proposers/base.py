"""The proposer protocol (``core.protocol``, the vocabulary every part shares), re-exported
for proposers."""

from mlflow_agentic.core.protocol import CandidateProposer, CodeModeProposer, proposer_name

__all__ = ["CandidateProposer", "CodeModeProposer", "proposer_name"]
