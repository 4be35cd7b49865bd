"""``CodeProposer``: code mode. Four LLM roles, called in turn by this plain Python; none calls
another, and none can overrule the engine's arithmetic between them:

- the **planner** ranks hypotheses (the first call, and again when its list is used up or the
  critic pivots); a planner that cannot answer ends the search (``PlannerFailed``);
- the **coder** writes ``candidate.py`` for the next hypothesis; the engine cross-validates it
  in the sandbox. An unusable answer is an attempt failure, recorded, and the loop moves on;
- the **critic** (``critic_model``, may be smaller) reviews each attempt's features against the
  findings: a note, and at most one pivot per search (columns every later candidate runs
  without, CV advice for the coder). A critic that fails accepts the attempt;
- the **submitter** chooses the attempt to register from CV scores and findings; the engine
  takes the choice only if it is a verified, not quarantined attempt (``engine.code``).

``max_experiments`` bounds the code attempts. Every call is reported (``on_llm_call``: an MLflow
trace per call), and a resumed search answers its recorded calls from those traces, in order.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mlflow_agentic.core.errors import AgenticError
from mlflow_agentic.core.observer import SearchContext
from mlflow_agentic.core.protocol import CodeModeProposer
from mlflow_agentic.core.types import AttemptRecord, SolutionCandidate, StopKind, StopReason
from mlflow_agentic.engine.evaluate.code import CODE
from mlflow_agentic.llm.client import LLMClient, LLMConfig
from mlflow_agentic.llm.pricing import cap_reached, price_table
from mlflow_agentic.llm.prompt import task_facts
from mlflow_agentic.llm.replay import ReplayClient
from mlflow_agentic.proposers.code import roles
from mlflow_agentic.proposers.llm import Exchange, Shape

if TYPE_CHECKING:
    from mlflow_agentic.core.dataset_like import DatasetLike

CODER_MAX_TOKENS = 3000
"""A candidate.py is a page of code; the other roles answer in a few lines."""


class PlannerFailed(AgenticError):
    """The planner gave no usable plan: code mode has nothing to write."""


@dataclass
class CriticNote:
    """What the critic said about one attempt: tags and a note for the attempt's run."""

    verdict: str
    note: str
    pivot: dict | None = None

    @property
    def tags(self) -> dict[str, str]:
        tags = {"critic": self.verdict, "critic.note": self.note[:500]}
        if self.pivot:
            tags["critic.pivot"] = json.dumps(self.pivot)
        return tags

    @property
    def artifacts(self) -> dict[str, str]:
        pivot = (f"\n\n**Pivot** (once per search): {json.dumps(self.pivot)}" if self.pivot
                 else "")
        return {"critic.md": f"**{self.verdict}**: {self.note}{pivot}\n"}


@dataclass
class CodeState:
    """What the roles have decided so far (a resumed search rebuilds it by replay)."""

    plan: list[roles.Hypothesis] = field(default_factory=list)
    experiments: int = 0
    dropped: list[str] = field(default_factory=list)
    cv_advice: str = ""
    pivoted: bool = False
    notes: dict[int, str] = field(default_factory=dict)


class CodeProposer(CodeModeProposer):
    name = "code"
    batch_size = 1

    def __init__(self, model: str | None = None, base_url: str | None = None, *,
                 critic_model: str | None = None, max_experiments: int = 4,
                 max_cost_usd: float | None = None, seed: int | None = None,
                 resumed: Sequence[dict] = (), client: LLMClient | ReplayClient | None = None,
                 critic_client: LLMClient | ReplayClient | None = None,
                 timeout: float = 120.0) -> None:
        self.llm = client or LLMClient(LLMConfig(model, base_url, timeout=timeout, seed=seed,
                                                 max_tokens=CODER_MAX_TOKENS))
        self.critic_llm = critic_client or (
            LLMClient(LLMConfig(critic_model, base_url, timeout=timeout, seed=seed))
            if critic_model else self.llm)
        self.critic_model = critic_model
        self.replay = ReplayClient(list(resumed)) if resumed else None
        self.max_experiments = max_experiments
        self.max_cost_usd = max_cost_usd
        self.prices = price_table()
        self.exchanges: list[Exchange] = []
        self.state = CodeState()
        self.stop_reason: StopReason | None = None
        self.context: SearchContext | None = None

    # ---- the engine's protocol ----------------------------------------------------------------
    def run_params(self) -> dict:
        """Code mode's budget and critic, recorded on the search run."""
        params: dict[str, Any] = {"max_experiments": self.max_experiments}
        if self.critic_model is not None:
            params["critic_model"] = self.critic_model
        return params

    def start(self, context: SearchContext) -> None:
        self.context = context

    def propose_initial(self, dataset: DatasetLike, trainers: Sequence[str]) -> list:
        return []  # every code attempt is planned and written; there is no default to seed

    def propose_next(self, dataset: DatasetLike, history: Sequence[AttemptRecord],
                     trainers: Sequence[str]) -> SolutionCandidate | None:
        s = self.state
        if s.experiments >= self.max_experiments:
            self.stop_reason = StopReason(StopKind.EXHAUSTED, (
                f"max_experiments={self.max_experiments} code attempts written"))
            return None
        if not s.plan:
            plan = self._plan(history)
            if plan is None:
                return None  # the endpoint is gone or the cost cap is reached
            s.plan = plan
        hypothesis = s.plan.pop(0)
        s.experiments += 1
        answer, problem = self._ask("coder", self.llm, roles.coder_messages(
            self._facts(), hypothesis, history, s.notes, self._columns(), s.dropped,
            s.cv_advice), roles.Code)
        if answer is None and self.stop_reason is not None:
            return None
        code = answer.code if answer is not None else ""
        params = {"hypothesis": hypothesis.title,
                  "code_sha256": hashlib.sha256(code.encode()).hexdigest()[:16],
                  "dropped_columns": ",".join(s.dropped) or "none"}
        rationale = (answer.rationale if answer is not None else f"coder failed: {problem}")
        return SolutionCandidate(
            CODE, params, f"{hypothesis.title}: {rationale}"[:2000], source="llm", code=code,
            artifacts={"plan.json": json.dumps({
                "hypothesis": hypothesis.model_dump(), "experiment": s.experiments,
                "still_planned": [h.title for h in s.plan], "dropped_columns": s.dropped,
                "cv_advice": s.cv_advice}, indent=1)})

    def review(self, record: AttemptRecord, features: Sequence[str]) -> CriticNote:
        """The critic on one code attempt: a note; the first pivot it asks for is applied to
        every later candidate (columns dropped by the engine, advice to the planner/coder)."""
        s = self.state
        messages = roles.critic_messages(self._findings(), record, features, self._columns(),
                                         not s.pivoted)
        answer, problem = self._ask("critic", self.critic_llm, messages, roles.Critique)
        if answer is None:
            note = CriticNote("failed", f"critic failed ({problem}); the attempt is accepted")
        else:
            note = CriticNote("accepted" if answer.accept else "objected",
                              answer.note.strip() or "-")
            if answer.pivot is not None and not s.pivoted:
                note.pivot = self._pivot(answer.pivot)
        s.notes[record.index] = f"{note.verdict}: {note.note}"
        return note

    def submit(self, history: Sequence[AttemptRecord]) -> tuple[int | None, str]:
        """The submitter's choice (the engine checks it); raises when it gave none."""
        answer, problem = self._ask("submitter", self.llm, roles.submitter_messages(
            self._findings(), history, self.state.notes), roles.Submission)
        if answer is None:
            raise RuntimeError(problem)
        return answer.attempt, answer.why.strip() or "-"

    # ---- roles' helpers -----------------------------------------------------------------------
    def _plan(self, history: Sequence[AttemptRecord]) -> list[roles.Hypothesis] | None:
        s = self.state
        wanted = self.max_experiments - s.experiments
        answer, problem = self._ask("planner", self.llm, roles.planner_messages(
            self._facts(), history, s.notes, s.dropped, s.cv_advice, wanted), roles.Plan)
        if answer is None:
            if self.stop_reason is not None:
                return None
            raise PlannerFailed(f"the planner gave no usable plan: {problem}")
        return answer.hypotheses[:wanted]

    def _pivot(self, pivot: roles.Pivot) -> dict | None:
        """The pivot as the engine applies it: only flagged or known feature columns, never all
        of them. None when nothing in it can be applied."""
        s = self.state
        features = set(self._context().dataset.feature_columns)
        drop = [c for c in dict.fromkeys(pivot.drop_columns) if c in features]
        if len(drop) >= len(features):
            drop = []
        advice = pivot.cv_advice.strip()
        if not drop and not advice:
            return None
        s.pivoted, s.dropped, s.cv_advice = True, drop, advice
        s.plan = []  # re-planned under the new constraints
        return {"drop_columns": drop, "cv_advice": advice}

    def _context(self) -> SearchContext:
        assert self.context is not None, "the engine calls start() before any proposal"
        return self.context

    def _facts(self) -> dict:
        return task_facts(self._context())

    def _columns(self) -> dict[str, str]:
        ds = self._context().dataset
        return {c: "numeric" if ds.columns[c].kind == "numeric" else "categorical"
                for c in ds.feature_columns if c not in self.state.dropped}

    def _findings(self) -> list[dict]:
        brief = self._context().briefing
        return [f.to_dict() for f in brief.findings] if brief is not None else []

    # ---- one call -----------------------------------------------------------------------------
    def _ask(self, role: str, client: LLMClient | ReplayClient, messages: list[dict],
             shape: type[Shape], reasks: int = 1) -> tuple[Shape | None, str]:
        """``(answer, problem)``: the role's validated answer, re-asked ``reasks`` times with
        what was wrong; None and why when there is none (``stop_reason`` set when the search
        must stop: the endpoint, the cost cap)."""
        problem = ""
        for _ in range(1 + reasks):
            why = cap_reached(client.config.model or "", messages, self.exchanges, self.prices,
                              self.max_cost_usd)
            if why is not None:
                self.stop_reason = StopReason(StopKind.COST, why)
                return None, why
            exchange, answer = self._call(role, client, messages, shape)
            if answer is not None:
                return answer, ""
            problem = exchange.error or "no answer"
            if problem.startswith("unavailable"):
                self.stop_reason = StopReason(StopKind.ENDPOINT,
                                              f"the LLM endpoint kept failing ({role}): {problem}")
                return None, problem
            messages = [*messages, {"role": "assistant", "content": exchange.text[:4000]},
                        {"role": "user", "content": f"Your answer could not be used: "
                         f"{problem[:500]}. Reply with exactly one JSON object of the shape "
                         "asked, and nothing else."}]
        return None, problem

    def _call(self, role: str, client: LLMClient | ReplayClient, messages: list[dict],
              shape: type[Shape]) -> tuple[Exchange, Shape | None]:
        """One call and its validated answer (None: ``error`` says why), answered from the
        resumed search's traces while they last; reported."""
        if self.replay is not None and self.replay.position < len(self.replay.exchanges):
            client = self.replay
        model = client.config.model or ""
        exchange = Exchange(messages, model=model, started_ns=time.time_ns(), role=role)
        self.exchanges.append(exchange)
        answer = None
        reply = exchange.ask(client, roles.schema(shape), self.prices, name=role,
                             deadline=getattr(self.context, "deadline", None))
        if reply is not None and exchange.error is None:
            answer = exchange.validated(shape, reply.data)
        exchange.ended_ns = time.time_ns()
        exchange.seconds = (reply.seconds if reply is not None
                            else (exchange.ended_ns - exchange.started_ns) / 1e9)
        emit = getattr(self.context, "emit", None)
        if emit is not None:
            emit("on_llm_call", exchange)
        return exchange, answer
