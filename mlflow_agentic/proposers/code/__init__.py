"""Code mode: the LLM writes the candidate (``candidate.py``), the sandbox runs it, the engine
scores it (``proposers.code.proposer``; the roles' prompts and answers in ``roles``)."""

from mlflow_agentic.proposers.code.proposer import CodeProposer, PlannerFailed
from mlflow_agentic.proposers.code.roles import CONTRACT

__all__ = ["CONTRACT", "CodeProposer", "PlannerFailed"]
