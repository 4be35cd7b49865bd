"""``MlflowTracker``: one search run per search, one child run per attempt, the best registered.

The recorder (``tracking.live.recorder``) writes while the search runs; ``finish`` records the
finished search (``tracking.results.result``): holdout, leaderboard, model, registration. Used as an
engine observer; the orchestrator calls ``finish`` after scoring the holdout.
"""

from __future__ import annotations

from mlflow_agentic.core.settings import RegisterPolicy, TrackingOptions, register_policy
from mlflow_agentic.core.types import EngineeringRun
from mlflow_agentic.tracking.live.recorder import AttemptRecorder
from mlflow_agentic.tracking.registry import DEFAULT_ALIAS
from mlflow_agentic.tracking.results import record_result


class MlflowTracker(AttemptRecorder):
    """Records a search in MLflow and registers the verified best model (with holdout
    evidence only: a bare engine loop's model is logged, not registered).

    ``auto_finish``: finish when the loop ends (a bare engine loop); the orchestrator turns it
    off and calls ``finish(run, report, holdout)`` after scoring the holdout.
    ``log_model=False`` in a comparison: the runs are evidence about proposers, not models.
    """

    def __init__(self, experiment: str | None = None, register_name: str | None = None,
                 register: RegisterPolicy | bool = "better", alias: str = DEFAULT_ALIAS,
                 run_name: str | None = None, tracking_uri: str | None = None,
                 auto_finish: bool = True, log_model: bool = True,
                 tags: dict[str, str] | None = None, say=None,
                 diagnostics: bool = True, resume=None, shared=None) -> None:
        super().__init__(experiment=experiment, run_name=run_name, tracking_uri=tracking_uri,
                         tags=tags, say=say, resume=resume, shared=shared)
        self.register_name = register_name
        self.register: RegisterPolicy = register_policy(register)
        """``better``, ``always`` or ``never`` (``core.settings.REGISTER_POLICIES``)."""
        self.alias = alias
        self.auto_finish = auto_finish
        self.log_model = log_model
        self.diagnostics = diagnostics
        """Log the selected model's holdout diagnostics on its run (off: a faster finish)."""
        self.model_uri: str | None = None
        self.model_version = None
        self.alias_note = ""
        """What became of the alias at registration (moved, or kept on a better version)."""

    def expect_finish(self) -> None:
        """The caller calls ``finish(run, report, holdout)`` after scoring the holdout (the
        orchestrator): the end of the loop does not finish the search."""
        self.auto_finish = False

    def on_search_end(self, run: EngineeringRun) -> None:
        super().on_search_end(run)
        if self.auto_finish:
            self.finish(run)

    def finish(self, run: EngineeringRun, report=None, holdout=None,
               deadline: float | None = None) -> None:
        """Record the finished search (holdout, leaderboard, model, registration), end it.
        ``deadline``: a ``time.perf_counter()`` value the holdout diagnostics must fit in."""
        outcome = record_result(self, run, report, holdout, register=self.register,
                                register_name=self.register_name, alias=self.alias,
                                log_model=self.log_model, deadline=deadline,
                                diagnostics=self.diagnostics)
        self.model_uri, self.model_version = outcome.model_uri, outcome.model_version
        self.alias_note = outcome.alias_note


def tracker_for(tracking: TrackingOptions, say=None, **options) -> MlflowTracker:
    """The search's tracker from its ``TrackingOptions``: the one place a search's tracker is
    built from the user's options (``options``: ``MlflowTracker``'s others, e.g. ``run_name``)."""
    return MlflowTracker(experiment=tracking.experiment, register_name=tracking.register_name,
                         register=tracking.register, tracking_uri=tracking.tracking_uri,
                         say=say, diagnostics=tracking.diagnostics, **options)
