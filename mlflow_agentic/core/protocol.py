"""The proposer protocol: anything that suggests candidates, from a list to an LLM.

One abstract base, as Optuna's ``BaseSampler`` is: two methods to write, and every hook the loop
may call declared here with its default, so the loop calls hooks and never probes for them.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from mlflow_agentic.core.dataset_like import DatasetLike
from mlflow_agentic.core.types import AttemptRecord, SolutionCandidate, StopReason


class Review(Protocol):
    """What a reviewer says about one attempt: tags and artifacts for its run (never a score)."""

    @property
    def tags(self) -> Mapping[str, str]: ...

    @property
    def artifacts(self) -> Mapping[str, str]: ...


class CandidateProposer(abc.ABC):
    """Suggests candidates; the engine evaluates and verifies them.

    Write ``propose_initial`` (the seed candidates: all evaluated, no patience applies) and
    ``propose_next`` (sees every attempt so far; one candidate, or None when it has nothing
    more). The loop calls, in order: ``start(context)`` once before seeding, ``propose_initial``,
    then ``propose_next`` ``batch_size`` times per batch, and ``observe(record)`` after each
    attempt. Code mode's extra hooks are on ``CodeModeProposer``.
    ``mlflow_agentic.testing.check_proposer`` checks a proposer against this contract.
    """

    name: str = ""
    """Shown on the runs and in comparisons (default: the class name)."""
    batch_size: int = 1
    """Candidates asked per batch; their folds share the workers (Optuna: 4, constant liar)."""
    stop_reason: StopReason | None = None
    """Why ``propose_next`` returned None (a cost cap, an endpoint that failed), if not done."""

    @abc.abstractmethod
    def propose_initial(self, dataset: DatasetLike, trainers: Sequence[str]
                        ) -> Sequence[SolutionCandidate] | SolutionCandidate:
        """The seed candidates."""

    @abc.abstractmethod
    def propose_next(self, dataset: DatasetLike, history: Sequence[AttemptRecord],
                     trainers: Sequence[str]
                     ) -> SolutionCandidate | None:
        """The next candidate given every attempt so far, or None to stop."""

    def start(self, context: Any) -> None:  # noqa: B027 - an optional hook with an empty default
        """Once before seeding, with the ``SearchContext`` (metric, direction, trainers,
        baseline, briefing)."""

    def observe(self, record: AttemptRecord) -> None:  # noqa: B027 - optional hook
        """After each attempt, in proposal order (how Optuna is told each score, or FAIL)."""

    def run_params(self) -> dict[str, Any]:
        """Settings of the proposer recorded on the search run (e.g. code mode's budget)."""
        return {}


class CodeModeProposer(CandidateProposer):
    """A proposer of code candidates (code mode): the loop also asks it to ``review`` each
    code attempt (the critic: a note, never a score) and, after the loop, to ``submit`` the
    attempt to register (the submitter), a choice the engine checks."""

    def review(self, record: AttemptRecord, features: Sequence[str]) -> Review | None:
        """A note on a code attempt; None: nothing to say."""
        return None

    @abc.abstractmethod
    def submit(self, history: Sequence[AttemptRecord]) -> tuple[int | None, str]:
        """The attempt to register and why; the engine checks the choice."""


def proposer_name(proposer: CandidateProposer) -> str:
    return proposer.name or type(proposer).__name__
