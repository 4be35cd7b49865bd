"""The proposer protocol: anything that suggests candidates, from a list to an LLM."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from mlflow_agentic.engine.types import AttemptRecord, SolutionCandidate


@runtime_checkable
class CandidateProposer(Protocol):
    """Suggests candidates; the engine evaluates and verifies them.

    ``propose_initial`` returns the seed candidates (all evaluated, no patience applies);
    ``propose_next`` sees every attempt so far and returns one candidate, or None when it has
    nothing more to suggest. Optional hooks, called when defined:
    ``start(context)`` once before seeding (metric, direction, trainers, baseline), and
    ``observe(record)`` after each attempt (how Optuna is told the result).
    """

    def propose_initial(self, dataset, trainers: Sequence[str]
                        ) -> Sequence[SolutionCandidate] | SolutionCandidate: ...

    def propose_next(self, dataset, history: Sequence[AttemptRecord], trainers: Sequence[str]
                     ) -> SolutionCandidate | None: ...


def proposer_name(proposer) -> str:
    return getattr(proposer, "name", None) or type(proposer).__name__
