"""What the batch runner is given (``Planned``: a candidate ready to run, or already failed)
and what it gives back (``Outcome``: the folds' scores and predictions)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from mlflow_agentic.sandbox.job import SandboxResult


@dataclass
class Planned:
    """A candidate ready to run (``trainer`` and resolved ``params``), or already failed."""

    candidate: Any
    trainer: Any = None
    """The candidate's ``Trainer`` (``trainers.registry``); None when it failed to plan."""
    params: dict = field(default_factory=dict)
    error: str | None = None
    traceback: str | None = None
    restored: Outcome | None = None
    """Its outcome, read back from a killed search being resumed: not run again."""
    code: str | None = None
    """Code mode: ``candidate.py``, cross-validated in the sandbox instead of on the pool."""
    index: int = 0
    """The attempt it becomes (its fold models are kept under it)."""

    @property
    def style(self) -> str | None:
        """The fold preprocessing its fits share (``FoldData``); None in code mode, whose
        pipeline preprocesses inside its own fit, or when it failed to plan."""
        return self.trainer.preprocessing if self.trainer and self.code is None else None


@dataclass
class Outcome:
    """What the folds of one candidate gave."""

    fold_scores: list[float] = field(default_factory=list)
    fit_seconds: float = 0.0
    seconds: float = 0.0
    error: str | None = None
    traceback: str | None = None
    pruned: str | None = None
    """Why the candidate was stopped before its last fold (pruner or time budget)."""
    oof: np.ndarray | None = None
    """Out-of-fold output for every training row (complete candidates only)."""
    extra: np.ndarray | None = None
    """Mean output of the fold models on the extra rows (complete candidates only)."""
    elapsed: float | None = None
    """Set on a restored outcome: when it finished in the search that ran it."""
    sandbox: SandboxResult | None = None
    """Code mode: the ``SandboxResult`` the candidate's run came back with."""

    @property
    def complete(self) -> bool:
        """Every fold scored: neither failed nor pruned."""
        return self.error is None and self.pruned is None and bool(self.fold_scores)
