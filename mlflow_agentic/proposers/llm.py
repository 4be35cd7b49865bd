"""``LLMProposer``: an LLM suggests the next candidate; the engine evaluates and verifies it.

Seeds every allowed trainer at its defaults (no LLM call); each reflection sends aggregates,
the search spaces, the leakage findings and the best attempts, and reads back a validated
``{trainer, params, rationale}``. What the LLM claims (``expected_score``) is recorded, never
ranked. When the endpoint keeps failing, ``propose_next`` returns None and the search ends
cleanly with what it has.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from mlflow_agentic.engine.types import AttemptRecord, SolutionCandidate
from mlflow_agentic.trainers.registry import get_trainer


@dataclass
class Exchange:
    """One LLM call and what became of it (for accounting, logs and replay)."""

    messages: list[dict]
    text: str = ""
    mode: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    attempts: int = 0
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    claimed_score: float | None = None
    candidate: SolutionCandidate | None = None


class LLMProposer:
    name = "llm"

    def __init__(self, model: str | None = None, base_url: str | None = None,
                 api_key: str | None = None, *, timeout: float = 60.0, max_attempts: int = 4,
                 backoff: float = 0.5, client=None) -> None:
        from mlflow_agentic.llm.client import LLMClient, LLMConfig

        self.llm = client or LLMClient(LLMConfig(model, base_url, api_key, timeout,
                                                 max_attempts, backoff))
        self.context = None
        self.exchanges: list[Exchange] = []
        self.stopped: str | None = None

    def start(self, context) -> None:
        self.context = context

    def propose_initial(self, dataset, trainers: Sequence[str]) -> list[SolutionCandidate]:
        return [SolutionCandidate(t, {}, "trainer defaults (seed, no LLM call)") for t in trainers]

    def propose_next(self, dataset, history: Sequence[AttemptRecord], trainers: Sequence[str]
                     ) -> SolutionCandidate | None:
        from pydantic import ValidationError

        from mlflow_agentic.llm.client import LLMOutputError, LLMUnavailable
        from mlflow_agentic.llm.prompt import build_messages
        from mlflow_agentic.llm.schema import Proposal, proposal_schema

        exchange = Exchange(build_messages(self.context, history, trainers))
        self.exchanges.append(exchange)
        try:
            reply = self.llm.complete_json(exchange.messages, proposal_schema(list(trainers)))
        except LLMUnavailable as exc:
            exchange.error = f"unavailable: {exc}"
            self.stopped = exchange.error
            return None
        except LLMOutputError as exc:
            exchange.error = f"unreadable answer: {exc}"
            self.stopped = exchange.error
            return None
        exchange.text, exchange.mode = reply.text, reply.mode
        exchange.prompt_tokens, exchange.completion_tokens = reply.prompt_tokens, \
            reply.completion_tokens
        exchange.seconds, exchange.attempts = reply.seconds, reply.attempts
        try:
            proposal = Proposal.model_validate(reply.data)
        except ValidationError:
            proposal = Proposal(trainer=str(reply.data.get("trainer", "")), params={})
            exchange.notes.append("answer did not match the schema; params ignored")
        exchange.claimed_score = proposal.expected_score
        trainer = proposal.trainer
        if trainer not in trainers:
            fallback = _best_trainer(history, trainers)
            exchange.notes.append(f"unknown trainer {trainer!r}: fell back to {fallback!r}")
            trainer, params = fallback, {}
        else:
            params = self._in_space(dataset, trainer, proposal.params, exchange.notes)
        rationale = " ".join([proposal.rationale.strip() or "(no rationale)",
                              *(f"[{n}]" for n in exchange.notes)])
        exchange.candidate = SolutionCandidate(trainer, params, rationale[:2000])
        return exchange.candidate

    @staticmethod
    def _in_space(dataset, trainer: str, params: dict[str, Any], notes: list[str]) -> dict:
        space = get_trainer(trainer).space(dataset)
        kept = {}
        for key, value in params.items():
            spec = space.get(key)
            if spec is None:
                notes.append(f"dropped {key}: not a parameter of {trainer}")
                continue
            try:
                coerced = spec.coerce(value)
            except (TypeError, ValueError):
                notes.append(f"dropped {key}={value!r}: not {spec.describe()}")
                continue
            if not spec.contains(coerced):
                notes.append(f"dropped {key}={value!r}: outside {spec.describe()}")
                continue
            kept[key] = coerced
        return kept


def _best_trainer(history: Sequence[AttemptRecord], trainers: Sequence[str]) -> str:
    ranked = [a for a in history if a.verdict.valid and math.isfinite(a.utility)
              and a.candidate.trainer in trainers]
    if ranked:
        return max(ranked, key=lambda a: a.utility).candidate.trainer
    return trainers[0]


AgentSolutionProposer = LLMProposer
"""The seed's name for the LLM proposer."""
