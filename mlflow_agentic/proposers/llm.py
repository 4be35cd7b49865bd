"""``LLMProposer``: an LLM suggests the next candidate; the engine evaluates and verifies it.

Seeds every allowed trainer at its defaults (no LLM call); each reflection sends aggregates,
the search spaces, the leakage findings and the best attempts, and reads back a validated
``{trainer, params, rationale}``. What the LLM claims (``expected_score``) is recorded, never
ranked. When the endpoint keeps failing, ``propose_next`` returns None and the search ends
cleanly with what it has.
"""

from __future__ import annotations

import math
import time
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
    model: str = ""
    cost_usd: float = 0.0
    started_ns: int = 0
    ended_ns: int = 0

    def to_record(self) -> dict[str, Any]:
        """One JSON line of the recording (what replay reads back)."""
        cand = self.candidate
        return {"model": self.model, "messages": self.messages, "text": self.text,
                "mode": self.mode, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "seconds": round(self.seconds, 4),
                "attempts": self.attempts, "cost_usd": self.cost_usd, "error": self.error,
                "notes": self.notes, "claimed_score": self.claimed_score,
                "candidate": None if cand is None else {"trainer": cand.trainer,
                                                         "params": dict(cand.params),
                                                         "rationale": cand.rationale}}


class LLMProposer:
    name = "llm"

    def __init__(self, model: str | None = None, base_url: str | None = None,
                 api_key: str | None = None, *, timeout: float = 60.0, max_attempts: int = 4,
                 backoff: float = 0.5, max_cost_usd: float | None = None,
                 prices: dict[str, tuple[float, float]] | None = None, client=None,
                 seed: int | None = None) -> None:
        from mlflow_agentic.llm.client import LLMClient, LLMConfig
        from mlflow_agentic.llm.pricing import price_table

        self.llm = client or LLMClient(LLMConfig(model, base_url, api_key, timeout,
                                                 max_attempts, backoff, seed=seed))
        self.max_cost_usd = max_cost_usd
        self.prices = price_table(prices)
        self.context = None
        self.exchanges: list[Exchange] = []
        self.stopped: str | None = None

    @classmethod
    def replay(cls, exchanges: list[dict]) -> LLMProposer:
        """Re-run a search with recorded answers and no network (``--replay``)."""
        from mlflow_agentic.llm.replay import ReplayClient

        return cls(client=ReplayClient(exchanges))

    @property
    def spent_usd(self) -> float:
        return sum(e.cost_usd for e in self.exchanges)

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

        model = self.llm.config.model or ""
        exchange = Exchange(build_messages(self.context, history, trainers), model=model)
        if self.max_cost_usd is not None:
            from mlflow_agentic.llm.pricing import estimate_next_cost

            chars = sum(len(m["content"]) for m in exchange.messages)
            previous = [(e.prompt_tokens, e.completion_tokens) for e in self.exchanges
                        if e.completion_tokens]
            estimate = estimate_next_cost(model, chars, self.prices, previous)
            if self.spent_usd + estimate > self.max_cost_usd:
                self.stopped = (f"cost budget: spent ${self.spent_usd:.4f}, the next call "
                                f"(~${estimate:.4f}) would exceed ${self.max_cost_usd:.4f}")
                return None
        self.exchanges.append(exchange)
        exchange.started_ns = time.time_ns()
        try:
            reply = self.llm.complete_json(exchange.messages, proposal_schema(list(trainers)))
        except LLMUnavailable as exc:
            return self._give_up(exchange, f"unavailable: {exc}")
        except LLMOutputError as exc:
            return self._give_up(exchange, f"unreadable answer: {exc}")
        exchange.text, exchange.mode = reply.text, reply.mode
        exchange.prompt_tokens, exchange.completion_tokens = reply.prompt_tokens, \
            reply.completion_tokens
        exchange.seconds, exchange.attempts = reply.seconds, reply.attempts
        exchange.ended_ns = time.time_ns()
        from mlflow_agentic.llm.pricing import cost_usd

        exchange.cost_usd = cost_usd(model, reply.prompt_tokens, reply.completion_tokens,
                                     self.prices)
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
        self._report(exchange)
        return exchange.candidate

    def _give_up(self, exchange: Exchange, error: str) -> None:
        exchange.error = error
        exchange.ended_ns = time.time_ns()
        exchange.seconds = (exchange.ended_ns - exchange.started_ns) / 1e9
        self.stopped = error
        self._report(exchange)
        return None

    def _report(self, exchange: Exchange) -> None:
        emit = getattr(self.context, "emit", None)
        if emit is not None:
            emit("on_llm_call", exchange)

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
