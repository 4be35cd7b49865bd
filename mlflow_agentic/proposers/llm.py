"""``LLMProposer``: an LLM suggests the next candidate; the engine evaluates and verifies it.

Seeds every allowed trainer at its defaults (no LLM call); each reflection sends aggregates,
the search spaces, the leakage findings and the best attempts, and reads back a validated
``{trainer, params, rationale}``. What the LLM claims (``expected_score``) is recorded, never
ranked. An unusable answer is re-asked with what was wrong, then replaced by Optuna's next trial
(``source="fallback"``): one bad answer never ends a search. Only the cost cap or an endpoint
that keeps failing does (``stop_reason``), and the search then ends cleanly with what it has.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from mlflow_agentic.core.protocol import CandidateProposer
from mlflow_agentic.core.types import AttemptRecord, SolutionCandidate, StopKind, StopReason
from mlflow_agentic.llm.client import (
    LLMClient,
    LLMConfig,
    LLMOutputError,
    LLMReply,
    LLMUnavailable,
)
from mlflow_agentic.llm.pricing import cap_reached, cost_usd, price_table
from mlflow_agentic.llm.prompt import build_messages
from mlflow_agentic.llm.replay import ReplayClient
from mlflow_agentic.llm.schema import Proposal, proposal_schema
from mlflow_agentic.proposers.optuna import OptunaProposer
from mlflow_agentic.trainers.registry import get_trainer

if TYPE_CHECKING:
    from mlflow_agentic.core.dataset_like import DatasetLike
    from mlflow_agentic.core.observer import SearchContext

Shape = TypeVar("Shape", bound=BaseModel)


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
    replayed_trace: str | None = None
    """A resumed search's call read back from this trace, not asked again (not traced again)."""
    role: str = "propose"
    """Who asked: ``propose`` (the LLM proposer), or a code-mode role (planner, coder, critic,
    submitter). The trace is named ``llm.<role>``."""

    def ask(self, client: LLMClient | ReplayClient, schema: dict,
            prices: dict[str, tuple[float, float]], name: str = "proposal",
            deadline: float | None = None) -> LLMReply | None:
        """Send ``messages`` to ``client`` and keep what came back (text, tokens, tries, cost).
        The reply, or None when the endpoint failed (``error`` starts with ``unavailable``); an
        unreadable answer is kept with ``error`` saying so. ``deadline``: the search's time
        budget (a ``time.perf_counter()`` value), which no call outlasts."""
        reply = None
        try:
            reply = client.complete_json(self.messages, schema, name, deadline=deadline)
        except LLMUnavailable as exc:
            self.error = f"unavailable: {exc}"
        except LLMOutputError as exc:
            self.error = f"unreadable answer: {exc}"
            reply = exc.reply
        if reply is not None:
            self.text, self.mode = reply.text, reply.mode
            self.prompt_tokens = reply.prompt_tokens
            self.completion_tokens = reply.completion_tokens
            self.attempts, self.replayed_trace = reply.attempts, reply.replayed_trace
            self.cost_usd = cost_usd(self.model, reply.prompt_tokens, reply.completion_tokens,
                                     prices)
        return reply

    def validated(self, shape: type[Shape], data: Any) -> Shape | None:
        """``data`` as ``shape``, or None with ``error`` naming each off-schema field."""
        try:
            return shape.model_validate(data)
        except ValidationError as exc:
            self.error = "off-schema answer: " + "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'answer'}: {e['msg']}" for e in exc.errors())
            return None

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


class LLMProposer(CandidateProposer):
    name = "llm"

    def __init__(self, model: str | None = None, base_url: str | None = None,
                 api_key: str | None = None, *, timeout: float = 60.0, max_attempts: int = 4,
                 backoff: float = 0.5, max_cost_usd: float | None = None,
                 prices: dict[str, tuple[float, float]] | None = None,
                 client: LLMClient | ReplayClient | None = None,
                 seed: int | None = None, max_reasks: int = 2,
                 resumed: Sequence[dict] = ()) -> None:
        self.llm = client or LLMClient(LLMConfig(model, base_url, api_key, timeout,
                                                 max_attempts, backoff, seed=seed))
        if resumed:  # a resumed search: its recorded calls are answered again, not asked
            self.llm = ReplayClient(list(resumed), then=self.llm)
        self.max_cost_usd = max_cost_usd
        self.prices = price_table(prices)
        self.context: SearchContext | None = None
        self.exchanges: list[Exchange] = []
        self.max_reasks = max_reasks
        """An unusable answer (prose, empty, truncated, off-schema) is re-asked this many times
        with what was wrong; then the candidate comes from the fallback."""
        self.seed = seed
        self.stop_reason: StopReason | None = None
        self.fallbacks = 0
        self._fallback_proposer: OptunaProposer | None = None
        self._told: set[int] = set()

    @classmethod
    def replay(cls, exchanges: list[dict], seed: int | None = None) -> LLMProposer:
        """Re-run a search with recorded answers and no network (``--replay``); the same
        ``seed`` gives the same fallback suggestions."""
        return cls(client=ReplayClient(exchanges), seed=seed)

    @property
    def spent_usd(self) -> float:
        return sum(e.cost_usd for e in self.exchanges)

    def start(self, context: SearchContext) -> None:
        self.context = context

    def propose_initial(self, dataset: DatasetLike,
                        trainers: Sequence[str]) -> list[SolutionCandidate]:
        return [SolutionCandidate(t, {}, "trainer defaults (seed, no LLM call)") for t in trainers]

    def propose_next(self, dataset: DatasetLike, history: Sequence[AttemptRecord],
                     trainers: Sequence[str]) -> SolutionCandidate | None:
        """Ask the LLM; re-ask an unusable answer with what was wrong (``max_reasks`` times),
        then fall back to a deterministic suggestion. None only when the search must stop:
        the cost cap, or an endpoint that keeps failing (``stop_reason`` says which)."""
        if self.context is None:
            raise RuntimeError("the LLM proposer is asked before its search started (start)")
        messages = build_messages(self.context, history, trainers)
        problem = ""
        for _ in range(1 + self.max_reasks):
            if not self._affordable(messages):
                return None
            exchange = self._call(messages, trainers)
            if exchange is None:
                return None
            if exchange.candidate is not None:
                return self._accept(dataset, exchange, trainers)
            problem = exchange.error or "unusable answer"
            messages = [*messages, {"role": "assistant", "content": exchange.text[:2000]},
                        {"role": "user", "content": reask_message(problem, trainers)}]
        return self._fallback(dataset, history, trainers, problem)

    def observe(self, record: AttemptRecord) -> None:
        """The fallback study hears its own trials' results here; every other attempt is
        told to it (``learn``) before its next suggestion."""
        if self._fallback_proposer is not None and record.candidate.source == "fallback":
            self._fallback_proposer.observe(record)
            self._told.add(record.index)

    # ---- one call -----------------------------------------------------------------------------
    def _affordable(self, messages: list[dict]) -> bool:
        why = cap_reached(self.llm.config.model or "", messages, self.exchanges, self.prices,
                          self.max_cost_usd)
        if why is not None:
            self.stop_reason = StopReason(StopKind.COST, why)
        return why is None

    def _call(self, messages: list[dict], trainers: Sequence[str]) -> Exchange | None:
        """One exchange, reported. Its ``candidate`` holds the proposal (trainer checked, params
        not yet), or ``error`` says why the answer cannot be used; None: the endpoint failed."""
        model = self.llm.config.model or ""
        exchange = Exchange(messages, model=model, started_ns=time.time_ns())
        self.exchanges.append(exchange)
        reply = exchange.ask(self.llm, proposal_schema(list(trainers)), self.prices,
                             deadline=getattr(self.context, "deadline", None))
        error = exchange.error or ""
        if reply is None and error.startswith("unavailable"):
            self.stop_reason = StopReason(StopKind.ENDPOINT, (
                f"the LLM endpoint kept failing: {error.removeprefix('unavailable: ')}"))
        if reply is not None and exchange.error is None:
            proposal = exchange.validated(Proposal, reply.data)
            if proposal is not None:
                exchange.claimed_score = proposal.expected_score
                if proposal.trainer not in trainers:
                    exchange.error = (f"off-schema answer: trainer {proposal.trainer!r} is not "
                                      f"one of {', '.join(trainers)}")
                else:
                    exchange.candidate = SolutionCandidate(
                        proposal.trainer, dict(proposal.params), proposal.rationale.strip(),
                        source="llm")
        exchange.ended_ns = time.time_ns()
        exchange.seconds = (reply.seconds if reply is not None  # the endpoint's time (replay: 0)
                            else (exchange.ended_ns - exchange.started_ns) / 1e9)
        self._report(exchange)
        return None if self.stop_reason is not None else exchange

    def _accept(self, dataset: DatasetLike, exchange: Exchange,
                trainers: Sequence[str]) -> SolutionCandidate:
        proposal = exchange.candidate
        assert proposal is not None, "only an exchange holding a proposal is accepted"
        params = self._in_space(dataset, proposal.trainer, dict(proposal.params),
                                exchange.notes)
        rationale = " ".join([proposal.rationale or "(no rationale)",
                              *(f"[{n}]" for n in exchange.notes)])
        exchange.candidate = SolutionCandidate(proposal.trainer, params, rationale[:2000],
                                               source="llm")
        return exchange.candidate

    def _fallback(self, dataset: DatasetLike, history: Sequence[AttemptRecord],
                  trainers: Sequence[str],
                  problem: str) -> SolutionCandidate:
        """Optuna's next trial (seeded), told every attempt so far: the search goes on."""
        if self._fallback_proposer is None:
            self._fallback_proposer = OptunaProposer(seed=self.seed or 0, seed_defaults=False)
        optuna = self._fallback_proposer
        for record in history:
            if record.index not in self._told:
                optuna.learn(dataset, record, trainers)
                self._told.add(record.index)
        self.fallbacks += 1
        return optuna.suggest(dataset, trainers, source="fallback", why=(
            f" as the fallback after {1 + self.max_reasks} unusable LLM answers (last: "
            f"{problem[:300]})"))

    def _report(self, exchange: Exchange) -> None:
        emit = getattr(self.context, "emit", None)
        if emit is not None:
            emit("on_llm_call", exchange)

    @staticmethod
    def _in_space(dataset: DatasetLike, trainer: str, params: dict[str, Any],
                  notes: list[str]) -> dict:
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


def reask_message(problem: str, trainers: Sequence[str]) -> str:
    """The follow-up after an unusable answer: what was wrong and the exact shape wanted."""
    return (f"Your answer could not be used: {problem[:500]}. Reply with exactly one JSON "
            'object and nothing else: {"trainer": one of ' + json.dumps(list(trainers))
            + ', "params": {...}, "rationale": "...", "expected_score": 0.0}')


AgentSolutionProposer = LLMProposer
"""The seed's name for the LLM proposer."""
