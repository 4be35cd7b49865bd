"""The proposer protocol (defined by the engine that consumes it), re-exported for proposers."""

from mlflow_agentic.core.protocol import CandidateProposer, CodeModeProposer, proposer_name

__all__ = ["CandidateProposer", "CodeModeProposer", "proposer_name"]
