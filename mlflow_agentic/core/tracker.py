"""``Tracker``: what the engine and the front door ask of the search's recorder.

The recorder itself (``tracking.MlflowTracker``, built by ``tracking.live.tracker.tracker_for``)
talks to MLflow; the front door and the command line see only this shape, so a type checker
catches a caller reaching for anything else. It is also an engine observer (``SearchObserver``
hooks): the loop reports each attempt to it as it goes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from mlflow_agentic.core.types import EngineeringRun


class ResumedSearch(Protocol):
    """A killed search read back for ``--resume``: what the front door hands to the loop."""

    @property
    def attempts(self) -> Mapping[int, Any]:
        """Finished attempts by index (not run again)."""
        ...

    @property
    def llm_calls(self) -> Sequence[dict[str, Any]]:
        """An LLM search's calls, answered again from their traces."""
        ...


class Tracker(Protocol):
    """One search's recording: started by the loop (observer hooks), finished by the front
    door once the holdout has scored the selected model."""

    unmarked: list[str]
    """Runs a failing store would not let the search mark KILLED."""
    model_uri: str | None
    model_version: Any
    alias: str
    alias_note: str
    """What became of the alias at registration (moved, or kept on a better version)."""

    @property
    def parent_run_id(self) -> str | None:
        """The search run's id (None before the search starts)."""
        ...

    @property
    def resume(self) -> ResumedSearch | None:
        """The killed search this one continues, if any."""
        ...

    def continue_search(self, point: Any) -> None:
        """Continue the killed search ``point`` instead of starting one."""

    def expect_finish(self) -> None:
        """The caller finishes the search (after the holdout), not the end of the loop."""

    def finish(self, run: EngineeringRun, report: Any = None, holdout: Any = None,
               deadline: float | None = None) -> None:
        """Record the finished search (holdout, leaderboard, model, registration), end it."""

    def on_search_error(self, error: BaseException) -> None:
        """The search failed or was interrupted: record it and end the run."""

    def recorded(self) -> str:
        """What the store holds of the search so far, in words (for an interrupted run)."""
        ...

    def runs_link(self) -> str:
        """This search's attempts in the MLflow UI."""
        ...
