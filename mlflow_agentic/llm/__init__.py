"""Talking to LLMs (OpenAI-compatible endpoints) and the proposal schema."""

from mlflow_agentic.llm.client import LLMClient, LLMConfig, LLMOutputError, LLMUnavailable
from mlflow_agentic.llm.schema import Proposal, proposal_schema

__all__ = ["LLMClient", "LLMConfig", "LLMOutputError", "LLMUnavailable", "Proposal",
           "proposal_schema"]
