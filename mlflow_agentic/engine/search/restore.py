"""Resuming a killed search: its finished attempts, read back, stand in for running them again.

The loop replays the search from the start with the same proposer and seed. Where the killed
search had finished attempt ``i``, the proposal must be the one it recorded (same trainer, same
parameters); its recorded outcome (fold scores, out-of-fold and holdout-row outputs) is used
instead of fitting again, and the verifier decides on it afresh. Proposers, the pruner and the
ensemble are told exactly what they were told the first time, so the resumed search continues
as the uninterrupted one would have.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mlflow_agentic.core.errors import AgenticError
from mlflow_agentic.engine.evaluate.outcome import Outcome, Planned

PARAM_MAX = 6000
"""How long a recorded parameter value is (MLflow's limit, as the recorder writes it)."""


class ResumeDiverged(AgenticError):
    """The proposer now proposes something else than the killed search ran at that index."""


def recorded_value(value: object) -> str:
    """A parameter value as the tracker records it."""
    return str(value)[:PARAM_MAX]


@dataclass(frozen=True)
class Restored:
    """One finished attempt of a killed search: what ran, and what it gave."""

    trainer: str
    params: Mapping[str, str]
    """The parameters as recorded (strings), the trainer excluded."""
    outcome: Outcome
    run_id: str = ""

    def check(self, index: int, plan: Planned) -> None:
        """Raise ``ResumeDiverged`` unless ``plan`` is the attempt that was recorded."""
        trainer = getattr(plan.candidate, "trainer", "?")
        params = {k: recorded_value(v) for k, v in plan.params.items()}
        if trainer == self.trainer and params == dict(self.params):
            return
        raise ResumeDiverged(
            f"cannot resume: attempt {index} was {self.trainer} {dict(self.params)} in the "
            f"killed search (run {self.run_id}), but the proposer now proposes {trainer} "
            f"{params}. The search must be resumed with the settings it ran with (proposer, "
            "seed, trainers, data); an LLM that answers differently cannot be resumed")
