"""``AttemptRecorder``: the search run and one child run per attempt, as the search runs.

An engine observer, so the engine never imports mlflow. It composes the parts: the
``Connection`` to the store, the ``SearchRun`` (opened, closed), the ``AttemptRuns`` (one child
run per attempt, through the journal) and their ``LLMCalls``. What happens after the loop
(holdout, leaderboard, the model, registration) is ``tracking.results.result``;
``MlflowTracker`` joins both.
"""

from __future__ import annotations

import contextlib
import logging
import sys

from mlflow_agentic.core import evidence as ev
from mlflow_agentic.core.errors import disk_full
from mlflow_agentic.core.observer import SearchContext, SearchObserver
from mlflow_agentic.core.types import AttemptRecord, EngineeringRun, SolutionCandidate
from mlflow_agentic.tracking.live.attempt_runs import AttemptRuns
from mlflow_agentic.tracking.live.search_run import SearchRun
from mlflow_agentic.tracking.live.shared import SharedRun
from mlflow_agentic.tracking.registry import quiet_loggers, warm_up
from mlflow_agentic.tracking.resume import ResumePoint
from mlflow_agentic.tracking.store import TAG_MAX, Connection


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class AttemptRecorder(SearchObserver):
    """Records a search as it runs: the search run (parameters, dataset, briefing), one child
    run per attempt, one trace per LLM call; on an error, the runs under way end FAILED or
    KILLED with the reason. ``record_result`` (``tracking.results.result``) records the finish.

    Uses the configured tracking URI (``MLFLOW_TRACKING_URI``, default ``sqlite:///mlflow.db``).
    Under ``mlflow run`` the project's run becomes the search run. Every call goes through
    ``call`` (retried with backoff while the store does not answer).
    """

    def __init__(self, experiment: str | None = None, run_name: str | None = None,
                 tracking_uri: str | None = None, tags: dict[str, str] | None = None,
                 say=None, resume: ResumePoint | None = None,
                 shared: SharedRun | None = None) -> None:
        self.tracking_uri = tracking_uri
        self.say = say or _say
        """Where notes go while the search runs (store retries, stale runs): stderr."""
        self.search = SearchRun(experiment=experiment, run_name=run_name, tags=tags or {},
                                say=self.say, resume=resume, shared=shared)
        self.attempts = AttemptRuns(self.search, self.say)
        self.conn: Connection | None = None
        self.unmarked: list[str] = []
        """Runs a failing store (a full disk) would not let the search mark KILLED."""

    def continue_search(self, point: ResumePoint) -> None:
        """Continue the killed search ``point`` (``--resume``) instead of starting one: its
        run is reopened, its finished attempts' runs are kept as they are."""
        self.search.resume = point
        self.attempts = AttemptRuns(self.search, self.say)

    # ---- what the rest of tracking reads ------------------------------------------------------
    @property
    def parent_run_id(self) -> str:
        """The search run's id ('' before the search started)."""
        return self.search.run_id

    @property
    def child_run_ids(self) -> dict[int, str]:
        return self.attempts.child_run_ids

    @property
    def context(self) -> SearchContext | None:
        return getattr(self.search, "context", None)  # None before the search started

    @property
    def store(self) -> Connection:
        """The connection to the tracking store, once the search started."""
        assert self.conn is not None, "the store is connected when the search starts"
        return self.conn

    @property
    def client(self):
        return self.conn.client if self.conn is not None else None

    @property
    def llm_exchanges(self) -> list:
        return self.attempts.llm.exchanges

    @property
    def dataset_input(self):
        return self.search.dataset_input

    @property
    def resume(self) -> ResumePoint | None:
        return self.search.resume

    @property
    def search_id(self) -> str:
        return self.search.search_id

    @property
    def journal(self):
        return self.attempts.journal

    def call(self, what: str, fn, *args, **kwargs):
        return self.store.call(what, fn, *args, **kwargs)

    def log(self, run_id: str, metrics: dict, params: dict, tags: dict,
            steps: dict | None = None) -> None:
        self.store.log(run_id, metrics, params, tags, steps)

    def run_link(self, run_id: str) -> str:
        return self.search.run_link(run_id)

    def runs_link(self) -> str:
        return self.search.runs_link()

    def attempt_run(self, index: int):
        return self.search.attempt_run(self.child_run_ids[index])

    def recorded(self) -> str:
        return self.attempts.recorded()

    # ---- the search's events ------------------------------------------------------------------
    def on_search_start(self, context: SearchContext) -> None:
        warm_up()  # the first model logging's one-time work, while the workers fit
        self.conn = Connection(self.tracking_uri, self.recorded, self.say,
                               self.attempts.next_step)
        self.search.open(context, self.conn, self.attempts.writer.submit)
        self.attempts.begin(self.conn)

    def on_attempt_start(self, index: int, candidate: SolutionCandidate, phase: str) -> None:
        self.attempts.start(index, candidate)

    def on_llm_call(self, exchange) -> None:
        self.attempts.llm_call(exchange)

    def on_attempt_outputs(self, record: AttemptRecord, oof, extra) -> None:
        self.attempts.outputs(record, oof, extra)

    def on_attempt_end(self, record: AttemptRecord) -> None:
        self.attempts.end(record)

    def on_search_end(self, run: EngineeringRun) -> None:
        self.attempts.drain()  # every attempt's run written before the search's totals
        if self.search.shared is not None:  # finalize records the search as a whole
            self.search.worker_note(f"done: {len(run.attempts)} attempts; {run.stop_reason}")
            return
        self.log(self.parent_run_id, *search_totals(run, self.resume, self.child_run_ids))
        self.attempts.mark_ranks(run)

    def end(self, status: str = "FINISHED") -> None:
        """End the search run (after ``record_result``) and this search's run context."""
        self.search.end(status)

    def on_search_error(self, error: BaseException) -> None:
        """The attempts under way and the search run end KILLED (an interrupt) or FAILED, with
        the reason as a tag. With the store down, nothing more is sent."""
        full = disk_full(error)  # resumable once space is freed: KILLED, not FAILED
        status = ("KILLED" if full or isinstance(error, (KeyboardInterrupt, SystemExit))
                  else "FAILED")
        reason = f"{type(error).__name__}: {error}"[:TAG_MAX]
        with quiet_loggers("mlflow.store.db.utils", "mlflow.tracking",
                           level=logging.CRITICAL) if full else contextlib.nullcontext():
            try:
                if self.conn is not None:
                    self._end_on_error(status, reason, full)
            finally:
                if self.journal is not None and not self.journal.pending():
                    self.journal.remove()
                self.attempts.open.clear()
                if not self.search.end_active(status) and full:
                    self.unmarked.append("the search run")
                self.search.end_context()

    def _end_on_error(self, status: str, reason: str, full: bool) -> None:
        """The attempts that finished stay recorded (or journaled, the store down); those under
        way and the search run are marked. On a full disk every write is tried once, and what
        could not be written is remembered (``unmarked``) for the message."""
        retrying = self.store.retrying
        retrying.window = min(retrying.window, 1.0 if full else 30.0)
        if not self.attempts.writer.flush(raise_error=False, timeout=retrying.window):
            self.attempts.stop_sending()
        if retrying.down:
            return
        for index in sorted(self.attempts.open):
            self._try(full, f"attempt {index}", self.client.set_terminated,
                      self.child_run_ids[index], status)
        if self.parent_run_id and self.search.shared is not None:  # the others go on
            self.search.worker_note(f"{status.lower()}: {reason}")
        elif self.parent_run_id:
            self._try(full, None, self.log, self.parent_run_id, {}, {},
                      {"status": status.lower(), "error": reason,
                       "kept": self.recorded() or "nothing",
                       "resume_with": f"--resume {self.parent_run_id}"})

    def _try(self, full: bool, what: str | None, fn, *args) -> None:
        """One write while failing: on a full disk, what failed is noted, not raised."""
        try:
            fn(*args)
        except Exception:
            if not full:
                raise
            if what:
                self.unmarked.append(what)


def search_totals(run: EngineeringRun, resume: ResumePoint | None,
                  child_run_ids: dict[int, str]) -> tuple[dict, dict, dict]:
    """The search run's totals (metrics, params, tags): counts, why it stopped, and the
    selected attempt's scores under the same names as on the attempt's own run."""
    m = run.metric
    metrics = {"n_attempts": len(run.attempts), "n_verified": len(run.valid_attempts),
               "n_failed": sum(a.failed for a in run.attempts),
               "n_quarantined": sum(a.verdict.quarantined for a in run.attempts),
               "n_iterations": run.n_iterations, "search_seconds": run.wall_seconds,
               "search_fit_seconds": run.fit_seconds}
    tags = {"stop_reason": run.stop_reason, "summary": run.summary(),
            "stop_kind": run.stop.kind.value if run.stop else "none"}
    if resume is not None and resume.finalizing:  # the replay's stop says nothing
        tags.update(stop_reason=f"finalized: the {len(resume.attempts)} attempts of "
                                f"its workers", stop_kind="workers")
    best = run.best_attempt
    if best is not None:
        metrics.update({f"cv_{m}": ev.shown(best.score),
                        f"cv_{m}_std": ev.shown(best.score_std)})
        tags.update({"selected_run_id": child_run_ids.get(best.index, ""),
                     "selected_trainer": best.candidate.trainer,
                     "selected_attempt": str(best.index), "selection": run.selection,
                     "ties": run.tie_note().lstrip("; ") or "none"})
    if run.selection_note:
        tags["selection_note"] = run.selection_note
    return metrics, {}, tags
