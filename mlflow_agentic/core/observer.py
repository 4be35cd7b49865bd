"""Hooks the loop calls as it goes. Tracking (MLflow) and progress display plug in here, so the
engine itself imports neither mlflow nor a UI library."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from mlflow_agentic.core.settings import SearchSettings
from mlflow_agentic.core.types import AttemptRecord, EngineeringRun, SolutionCandidate


@dataclass(frozen=True)
class SearchContext:
    """What is fixed for a whole search, handed to observers and proposers at the start."""

    dataset: Any
    metric: Any
    trainers: tuple[str, ...]
    baseline_score: float
    baseline_fold_scores: tuple[float, ...]
    n_splits: int
    search: SearchSettings
    """The settings the loop runs with (its budget, seed, ...)."""
    proposer_name: str
    recorded: dict[str, Any] = field(default_factory=dict)
    """What the engine resolved from them (workers, pruning, batch size, the sandbox's
    limits), recorded on the search run beside its parameters."""
    cv_scheme: str = ""
    cv_reason: str = ""
    """Why that scheme: the briefing's advice, or the user's choice."""
    briefing: Any = None
    """The pre-loop briefing (profile, findings, CV advice), when the search has one."""
    deadline: float | None = None
    """``time.perf_counter()`` value at which a time budget is spent (None: no time budget)."""
    emit: Callable[..., None] | None = field(default=None, compare=False, repr=False)
    """``emit(hook, *args)``: a proposer reports events (e.g. ``on_llm_call``) to the observers
    that define that hook."""


class SearchObserver:
    """No-op base: override what you need. Called in order: start, (attempt start/end)*, end."""

    def on_search_start(self, context: SearchContext) -> None:
        """The baseline is known; no candidate has run yet."""

    def on_attempt_start(self, index: int, candidate: SolutionCandidate, phase: str) -> None:
        """A candidate is about to be cross-validated."""

    def on_attempt_end(self, record: AttemptRecord) -> None:
        """A candidate was evaluated and verified (or failed)."""

    def on_attempt_predictions(self, record: AttemptRecord, predictions: Any) -> None:
        """Optional: the mean output of the attempt's fold models on the search's ``extra_X``
        rows (the holdout scorer defines it)."""

    def on_attempt_outputs(self, record: AttemptRecord, oof: Any, extra: Any) -> None:
        """Optional: a complete attempt's out-of-fold output on the training rows and its fold
        models' mean output on ``extra_X`` (None without it), before ``on_attempt_end``: what
        resuming the search needs to not fit it again (the tracker records them)."""

    def on_search_end(self, run: EngineeringRun) -> None:
        """The best verified candidate is refit (``run.model``), or none was verified."""

    def on_phase(self, phase: str) -> None:
        """A step of the whole job outside the loop begins (reading the file, sealing the
        holdout, scoring it, the refit on every row, recording): said so a user sees each."""

    def on_search_error(self, error: BaseException) -> None:
        """The search stopped on an exception (interrupt, observer failure)."""


class Observers:
    """The loop's observers, told each event in order: one method per ``SearchObserver`` hook
    (every observer has those); ``emit`` an optional event (from proposers: an LLM call) to the
    observers that define it."""

    def __init__(self, observers: Iterable[Any]) -> None:
        self.all = list(observers)

    def search_start(self, context: SearchContext) -> None:
        for observer in self.all:
            observer.on_search_start(context)

    def attempt_start(self, index: int, candidate: SolutionCandidate, phase: str) -> None:
        for observer in self.all:
            observer.on_attempt_start(index, candidate, phase)

    def attempt_outputs(self, record: AttemptRecord, oof: Any, extra: Any) -> None:
        """Optional: to the observers that keep outputs (the tracker, for resuming)."""
        self.emit("on_attempt_outputs", record, oof, extra)

    def attempt_end(self, record: AttemptRecord) -> None:
        for observer in self.all:
            observer.on_attempt_end(record)

    def attempt_predictions(self, record: AttemptRecord, predictions: Any) -> None:
        """Optional: to the observers that score them (the holdout scorer)."""
        self.emit("on_attempt_predictions", record, predictions)

    def search_end(self, run: EngineeringRun) -> None:
        for observer in self.all:
            observer.on_search_end(run)

    def phase(self, text: str) -> None:
        """Tell every observer that has ``on_phase`` (a plain object may not)."""
        self.emit("on_phase", text)

    def emit(self, hook: str, *args: Any) -> None:
        for observer in self.all:
            method = getattr(observer, hook, None)
            if method is not None:
                method(*args)

    def error(self, exc: BaseException) -> None:
        """The search failed: every observer is told, and one that fails on it is only warned
        about, so the original error stays visible."""
        import warnings

        for observer in self.all:
            try:
                observer.on_search_error(exc)
            except Exception as inner:
                warnings.warn(f"observer {type(observer).__name__} failed on error: {inner}",
                              stacklevel=2)
