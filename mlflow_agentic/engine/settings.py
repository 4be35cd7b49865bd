"""``SearchSettings``: every setting of a search, declared and validated in one place.

The command line, ``search()``, the orchestrator, the comparison runner and the loop all take
one of these (or its field names as keyword arguments, which build one), so a default or a
check lives here only.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from mlflow_agentic.engine.backends import BACKENDS
from mlflow_agentic.errors import UserInputError, did_you_mean

SELECTION_RULES = ("best", "one-se")
"""How the selected attempt is chosen (``engine.selection``)."""
REGISTER_POLICIES = ("better", "always", "never")
"""``better`` (the default): a new version only when the selected model beats the current
``@challenger`` beyond the noise of the same sealed rows (or there is nothing like for like to
compare with); ``always``: every search registers a version; ``never``: log, do not register."""


def register_policy(value: bool | str) -> str:
    """``True``/``False`` (the older spelling) or one of ``REGISTER_POLICIES``."""
    if value is True:
        return "better"
    if value is False or value is None:
        return "never"
    if value not in REGISTER_POLICIES:
        raise UserInputError(f"--register {value!r}: unknown policy. "
                             f"{did_you_mean(str(value), REGISTER_POLICIES)}")
    return value
DEFAULT_MAX_ITERATIONS = 8
DEFAULT_PATIENCE = 3


@dataclass(frozen=True)
class SearchSettings:
    """How a search runs: its budget, its folds and metric, what it may try, and its machine.

    Budget: seeds, then up to ``max_iterations`` reflection attempts, stopping after
    ``patience`` attempts without a verified improvement; ``max_attempts`` (seeds included) and
    ``time_budget`` (wall seconds) bound every proposer alike. At least one bound is required.
    ``cv``: a fold count (the scheme from ``cv_scheme``) or fixed splits shared by searches.
    ``margin``: how much the trivial baseline must be beaten by. ``n_jobs``: worker processes
    (None: the cores this process may use, -1: all). ``prune``, ``ensemble``: see the loop.
    """

    max_iterations: int | None = DEFAULT_MAX_ITERATIONS
    patience: int | None = DEFAULT_PATIENCE
    max_attempts: int | None = None
    time_budget: float | None = None
    cv: Any = 5
    cv_scheme: str = "auto"
    metric: str | None = None
    trainers: tuple[str, ...] | None = None
    random_state: int = 0
    n_jobs: int | None = None
    prune: bool = True
    ensemble: bool = True
    margin: float = 0.01
    selection: str = "best"
    """``best`` (top CV score) or ``one-se`` (cheapest within one standard error of it)."""
    backend: str = "local"
    """Where the fold fits run: ``local`` processes, or a ``dask`` or ``ray`` cluster."""
    backend_address: str | None = None
    """The cluster's address (a Dask scheduler, a Ray head); None: a local cluster."""
    refit: bool = True
    """Refit the selected attempt on all training rows (off for a worker of a shared study:
    ``finalize`` selects and refits once, over every worker's attempts)."""

    def __post_init__(self) -> None:
        if self.trainers is not None and not isinstance(self.trainers, tuple):
            object.__setattr__(self, "trainers", tuple(self.trainers))
        _at_least("max_iterations", self.max_iterations, 0)
        _at_least("patience", self.patience, 1)
        _at_least("max_attempts", self.max_attempts, 1)
        if self.time_budget is not None and not (
                isinstance(self.time_budget, (int, float)) and math.isfinite(self.time_budget)
                and self.time_budget > 0):
            raise UserInputError(f"time budget {self.time_budget!r}: expected a positive "
                                 "number of seconds")
        if self.max_iterations is None and self.max_attempts is None and \
                self.time_budget is None:
            raise UserInputError("an unbounded search: give max_iterations, max_attempts or "
                                 "time_budget")
        if isinstance(self.cv, int) and self.cv < 2:
            raise UserInputError(f"cv must be at least 2 folds, got {self.cv}")
        if self.n_jobs == 0:
            raise UserInputError("n_jobs 0: use 1 or more workers, or -1 for all cores")
        if self.backend not in BACKENDS:
            raise UserInputError(f"backend {self.backend!r}: expected "
                                 f"{', '.join(BACKENDS[:-1])} or {BACKENDS[-1]}")
        if self.selection not in SELECTION_RULES:
            raise UserInputError(f"selection {self.selection!r}: expected one of "
                                 f"{', '.join(SELECTION_RULES)}")
        if not (isinstance(self.margin, (int, float)) and 0 <= self.margin < 1):
            raise UserInputError(f"margin must be in [0, 1), got {self.margin!r}")

    @classmethod
    def of(cls, settings: SearchSettings | None = None, **changes: Any) -> SearchSettings:
        """``settings`` (default: the defaults) with ``changes``; an unknown name is refused."""
        names = [f.name for f in dataclasses.fields(cls)]
        unknown = [k for k in changes if k not in names]
        if unknown:
            raise TypeError(f"unknown search setting {unknown[0]!r}. "
                            f"{did_you_mean(unknown[0], names)}")
        return dataclasses.replace(settings or cls(), **changes)

    @classmethod
    def budgeted(cls, *, max_iterations: int | None = None, patience: int | None = None,
                 time_budget: float | None = None, **rest: Any) -> SearchSettings:
        """The command line's rule: iterations and patience default to 8 and 3, and are off
        with a time budget unless given."""
        if time_budget is None:
            max_iterations = DEFAULT_MAX_ITERATIONS if max_iterations is None else max_iterations
            patience = DEFAULT_PATIENCE if patience is None else patience
        return cls.of(max_iterations=max_iterations, patience=patience,
                      time_budget=time_budget, **rest)

    def replace(self, **changes: Any) -> SearchSettings:
        return SearchSettings.of(self, **changes)

    def budget_params(self) -> dict[str, Any]:
        """The bounds that are set, as the search run's parameters."""
        out: dict[str, Any] = {}
        if self.max_attempts is not None:
            out["budget_attempts"] = self.max_attempts
        if self.time_budget is not None:
            out["budget_seconds"] = self.time_budget
        return out


def _at_least(name: str, value, low: int) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise UserInputError(f"{name} must be a whole number, got {value!r}")
    if value < low:
        raise UserInputError(f"{name} must be >= {low}, got {value}")

