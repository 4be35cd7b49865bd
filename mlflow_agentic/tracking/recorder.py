"""``AttemptRecorder``: the search run and one child run per attempt, as the search runs.

An engine observer, so the engine never imports mlflow. What happens after the loop (holdout,
leaderboard, the model, registration) is ``tracking.result``; ``MlflowTracker`` joins both.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import socket
import sys
import time
import warnings
from pathlib import Path

import mlflow
from mlflow.entities import Dataset as DatasetEntity
from mlflow.entities import DatasetInput, InputTag
from mlflow.tracing.constant import SpanAttributeKey
from mlflow.utils.mlflow_tags import MLFLOW_DATASET_CONTEXT

from mlflow_agentic import evidence as ev
from mlflow_agentic.data.split import frame_digest
from mlflow_agentic.engine.observer import SearchContext, SearchObserver
from mlflow_agentic.engine.restore import recorded_value
from mlflow_agentic.engine.types import AttemptRecord, EngineeringRun, SolutionCandidate
from mlflow_agentic.errors import disk_full
from mlflow_agentic.scoring.plot import trainer_colour
from mlflow_agentic.tracking import context as run_context
from mlflow_agentic.tracking.journal import (
    TAG_MAX,
    Journal,
    TraceRefused,
    deliver_trace,
    log_batch,
    send,
)
from mlflow_agentic.tracking.lifecycle import RunLifecycle, dataset_source
from mlflow_agentic.tracking.models import quiet_loggers
from mlflow_agentic.tracking.resume import (
    DIGEST_TAG,
    OUTPUTS_ARTIFACT,
    ResumePoint,
    write_outputs,
)
from mlflow_agentic.tracking.shared import SharedRun
from mlflow_agentic.tracking.store import (
    AGAIN,
    Retrying,
    RetryingClient,
    TrackingUnavailable,
)
from mlflow_agentic.tracking.writer import BackgroundWriter


def _or_off(value):
    return "off" if value is None else value


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _ranges(indices: list[int]) -> str:
    """[1, 2, 3, 5] -> "1-3, 5"."""
    spans: list[list[int]] = []
    for i in sorted(indices):
        if spans and i == spans[-1][1] + 1:
            spans[-1][1] = i
        else:
            spans.append([i, i])
    return ", ".join(f"{a}-{b}" if a != b else f"{a}" for a, b in spans)


def _now_ms() -> int:
    return int(time.time() * 1000)


EXPERIMENT_KIND = "mlflow.experimentKind"
MODEL_TRAINING = "custom_model_development"
"""The experiment tag and value the MLflow UI reads to open the Model training view."""
SHARED_VIEW = "mlflow.sharedViewState."
"""The MLflow UI's shared views: an experiment tag holding the view as JSON, opened by
``?viewStateShareKey=<key>``."""


class AttemptRecorder(RunLifecycle, SearchObserver):
    """Records a search as it runs: the search run (parameters, dataset, briefing), one child
    run per attempt, one trace per LLM call; on an error, the runs under way end FAILED or
    KILLED with the reason. ``record_result`` (``tracking.result``) records the finish.

    Uses the configured tracking URI (``MLFLOW_TRACKING_URI``, default ``sqlite:///mlflow.db``).
    Under ``mlflow run`` the project's run becomes the search run. Every call goes through
    ``call`` (retried with backoff while the store does not answer).
    """

    def __init__(self, experiment: str | None = None, run_name: str | None = None,
                 tracking_uri: str | None = None, tags: dict[str, str] | None = None,
                 say=None, resume: ResumePoint | None = None,
                 shared: SharedRun | None = None) -> None:
        self.experiment = experiment
        self.run_name = run_name
        self.tracking_uri = tracking_uri
        self.tags = dict(tags or {})
        """Extra tags on the search run (a comparison's id, the arm's seed)."""
        self.say = say or _say
        """Where notes go while the search runs (store retries, stale runs): stderr."""
        self._view_shared: bool | None = None  # the runs view written as an experiment tag
        self.parent_run_id: str | None = None
        self.child_run_ids: dict[int, str] = {}
        self.client = None
        self.context: SearchContext | None = None
        self.llm_exchanges: list = []
        self.search_id = run_context.new_search_id()
        self._open_children: set[int] = set()
        self._experiment_id: str | None = None
        self._source_name = ""
        self.unmarked: list[str] = []
        """Runs a failing store (a full disk) would not let the search mark KILLED."""
        self._llm_pending: dict[str, float] = {}
        self._llm_trace_ids: list[str] = []
        self._late_traces = 0
        """LLM calls whose trace the writer sent after an outage."""
        self._context_token = None
        self._retrying: Retrying | None = None
        self._ended: list[int] = []
        self.dataset_input = None
        """The training rows as an MLflow dataset (logged again on the selected attempt)."""
        self.resume = resume
        """A killed search to continue (``--resume``): its run is reopened, its finished
        attempts' runs are kept as they are."""
        self.shared = shared
        """A worker on a shared study: the search run is created or joined, never ended here."""
        self._writer = BackgroundWriter()
        self.journal: Journal | None = None
        """The attempts' records on disk until the store has them (``tracking.journal``)."""
        self._sending: Retrying | None = None
        """The writer's retries: no window, the search goes on while the store is down."""
        self._store = None
        self._last_start = 0

    # ---- search -----------------------------------------------------------------------------
    def on_search_start(self, context: SearchContext) -> None:
        self._start(context)
        self.journal = Journal.create(self.parent_run_id, mlflow.get_tracking_uri(),
                                      self._experiment_id)
        self._sending.meanwhile = (f"the search goes on; its records wait in the journal "
                                   f"{self.journal.path}")

    def _start(self, context: SearchContext) -> None:
        """The search run: created, reopened (``--resume``) or joined (a worker)."""
        self.context = context
        ds, metric = context.dataset, context.metric
        self._connect()
        params = self._search_params(context)
        excluded = params["excluded_columns"]
        digest = frame_digest(ds.frame)
        if self.resume is not None:
            self.resume.check(params, digest)  # before anything in the store changes
            self._reopen(context)
            return
        if self.shared is not None and self.shared.run_id:
            self._join(context)
            return
        # searches of one experiment told apart at a glance: data, proposer, when
        name = self.run_name or (f"{ds.name}-{context.proposer_name}-"
                                 f"{time.strftime('%m%d-%H%M%S')}")
        # runs started from here on are ours: the run-context provider plugin tags them
        self._context_token = run_context.begin(search_id=self.search_id,
                                                proposer=context.proposer_name,
                                                dataset=ds.name)
        if self.shared is None:
            self.call("choosing the experiment", self._choose_experiment, ds)
            run = self.call("starting the search run", mlflow.start_run, run_name=name,
                            nested=mlflow.active_run() is not None)
        else:  # the first worker: created, never entered (it outlives this process)
            experiment = self.call("choosing the experiment", mlflow.set_experiment,
                                   self.experiment or f"{ds.name}-agentic")
            run = self.client.create_run(experiment.experiment_id, run_name=name)
        self.parent_run_id = run.info.run_id
        self._experiment_id = run.info.experiment_id
        self._source_name = run.data.tags.get("mlflow.source.name", "")
        if self.shared is not None:
            self.tags.update({"agentic.study": self.shared.study, "workers": "shared"})
        tags = {"mlflow.runName": name, "agentic.role": "search", "agentic.host":
                socket.gethostname(), "agentic.pid": str(os.getpid()), "proposer":
                context.proposer_name, "dataset": ds.name, "task": ds.task, "target": ds.target,
                "metric": metric.name, "status": "running", DIGEST_TAG: digest,
                **run_context.search_tags(), **self.tags}
        metrics = {f"baseline_{metric.name}": context.baseline_score}
        tags.update({"cv_scheme": context.cv_scheme, "cv_scheme.reason": context.cv_reason,
                     "excluded_columns": excluded})
        tags.update({f"excluded.{c}": why for c, why in ds.excluded_columns.items()})
        # Under `mlflow run` the project's parameters are already logged (params are immutable):
        # a resolved value that differs from a given one goes under `resolved.<name>`.
        given = run.data.params
        params = {(k if given.get(k, str(v)) == str(v) else f"resolved.{k}"): v
                  for k, v in params.items()}
        self.dataset_input = dataset_source(ds)
        # the rest on the writer's thread: the first candidates' folds start meanwhile
        self._writer.submit(self._record_search, context, metrics, params, tags)
        if self.shared is not None:
            self.shared.publish(self.parent_run_id)

    def _record_search(self, context: SearchContext, metrics: dict, params: dict,
                       tags: dict) -> None:
        """The search run's parameters, dataset, columns and briefing; runs left stale; the
        experiment's kind."""
        ds = context.dataset
        self._notice_stale_searches()
        self._mark_model_training()
        self.log(self.parent_run_id, metrics, params, tags,
                 steps={f"baseline_{context.metric.name}_fold": context.baseline_fold_scores})
        self.client.log_inputs(self.parent_run_id, datasets=[DatasetInput(
            DatasetEntity(**self.dataset_input.to_dict()),  # the run is named, not active
            tags=[InputTag(MLFLOW_DATASET_CONTEXT, "training")])])
        self.client.log_dict(self.parent_run_id, {c: vars(i) for c, i in ds.columns.items()},
                             "columns.json")
        if context.briefing is not None:
            self._log_briefing(context.briefing)

    def _connect(self) -> None:
        if self.tracking_uri:
            mlflow.set_tracking_uri(self.tracking_uri)
            mlflow.tracing.reset()  # traces follow the new store
        uri = mlflow.get_tracking_uri()
        if uri.startswith(("http://", "https://")):  # our retries say what happens; MLflow's
            os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")  # are silent
            # and one "View run ... at" line per attempt run ended would drown the progress
            os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
        self._retrying = Retrying(uri, self.recorded, say=lambda line: self.say(line),
                                  next_step=self._next_step)
        self._store = mlflow.MlflowClient()
        self.client = RetryingClient(self._store, self._retrying)
        self._sending = Retrying(uri, self.recorded, say=lambda line: self.say(line),
                                 window=math.inf)

    @staticmethod
    def _search_params(context: SearchContext) -> dict:
        ds, metric = context.dataset, context.metric
        return {"proposer": context.proposer_name, "metric": metric.name,
                "direction": metric.direction, "trainers": ",".join(context.trainers),
                "max_iterations": _or_off(context.max_iterations),
                "patience": _or_off(context.patience),
                "cv_folds": context.n_splits, "cv_scheme": context.cv_scheme,
                "seed": context.random_state,
                "task": ds.task, "target": ds.target, "n_rows": ds.n_rows,
                "n_features": len(ds.feature_columns),
                "excluded_columns": ",".join(ds.excluded_columns) or "none",
                **{k: v for k, v in context.settings.items()}}

    def _log_briefing(self, briefing) -> None:
        """Findings as tags (seen in the UI) and, with the profile and advice, as JSON."""
        tags = {"findings.critical": str(len(briefing.critical)),
                "findings.total": str(len(briefing.findings))}
        for k, f in enumerate(briefing.findings, start=1):
            key = f"finding.{f.check}" + (f".{f.column}" if f.column else "")
            tags[key if key not in tags else f"{key}.{k}"] = f"{f.severity}: {f.message}"
        self.log(self.parent_run_id, {}, {}, tags)
        self.client.log_dict(self.parent_run_id, [f.to_dict() for f in briefing.findings],
                             "findings.json")
        self.client.log_dict(self.parent_run_id, briefing.to_dict(), "briefing.json")

    def on_attempt_start(self, index: int, candidate: SolutionCandidate, phase: str) -> None:
        restored = self.resume.attempts.get(index) if self.resume is not None else None
        if restored is not None:  # finished before the search was killed: its run stays
            self.child_run_ids[index] = restored.run_id
            return
        trainer = getattr(candidate, "trainer", "?")
        trial = getattr(candidate, "trial", None)
        extra = {} if trial is None else {"optuna.trial": str(trial)}
        number = index
        if self.shared is not None:  # numbered across workers by the study's trial
            number = index if trial is None else trial + 1
            extra["worker"] = self.shared.worker
        tags = {"mlflow.parentRunId": self.parent_run_id, "agentic.role": "attempt",
                "attempt.index": str(number), "mlflow.source.name": self._source_name,
                "mlflow.runColor": trainer_colour(trainer, self.context.trainers),
                **extra, **run_context.search_tags()}  # the search's context: this thread's
        # a batch starts in one millisecond: the runs list sorts by start time, in order
        self._last_start = max(_now_ms(), self._last_start + 1)
        title = getattr(candidate, "title", trainer)
        self._journaled(index, "create_run", experiment_id=self._experiment_id,
                        name=f"{number:02d}-{title}", tags=tags, start_ms=self._last_start)

    def _journaled(self, index: int, op: str, **fields) -> None:
        """A record of attempt ``index``: on disk now, to the store on the writer's thread."""
        record = self.journal.append(op, ref=f"attempt:{index}", **fields)
        self._writer.submit(self._send, index, record)

    def _send(self, index: int, record: dict) -> None:
        run_id = send(self._store, self._sending, self.journal, record)
        self.journal.mark_done(record, run_id)
        if record["op"] == "create_run":
            self._open_children.add(index)
            self.child_run_ids[index] = run_id
        elif record["op"] == "end":
            self._open_children.discard(index)
            self._ended.append(index)
        elif record["op"] == "trace" and run_id is not None:  # the trace's id: it arrived
            self._late_traces += 1

    def on_llm_call(self, exchange) -> None:
        """One LLM call: an MLflow trace on the search run; tokens and cost for the attempt."""
        self.llm_exchanges.append(exchange)
        trace_id = exchange.replayed_trace
        if trace_id is None:
            trace_id = self._trace_now(len(self.llm_exchanges), exchange)
        pending = self._llm_pending
        pending["llm_prompt_tokens"] = pending.get("llm_prompt_tokens", 0) + \
            exchange.prompt_tokens
        pending["llm_completion_tokens"] = pending.get("llm_completion_tokens", 0) + \
            exchange.completion_tokens
        pending["llm_seconds"] = pending.get("llm_seconds", 0.0) + exchange.seconds
        pending["llm_cost_usd"] = pending.get("llm_cost_usd", 0.0) + exchange.cost_usd
        if trace_id:
            self._llm_trace_ids.append(trace_id)

    def _trace_now(self, call: int, exchange) -> str | None:
        """Trace LLM call number ``call`` and see it in the store before the search goes on
        (resuming answers the call from it). MLflow exports traces on its own threads and
        only warns when the store is down: a trace not seen in the store is journaled and
        sent by the writer when the store answers again (or by ``flush``), once."""
        trace, tried = self._trace_payload(exchange, call), []
        try:  # not retried here: a store that is down costs the search nothing
            return deliver_trace(self._store, trace, tried)
        except TraceRefused as exc:  # the store is up: sending it again will not help
            self.say(f"{exc}; the call is kept in the search run's llm_exchanges.jsonl")
            return None
        except Exception:  # noqa: BLE001 - the store is down: the trace waits its turn
            record = self.journal.append("trace", ref=f"call:{call}", trace=trace,
                                         tried=tried)
            self._writer.submit(self._send, call, record)
            return None

    def _trace_payload(self, exchange, call: int) -> dict:
        """One LLM call as a trace (``journal.send_trace``): JSON, so it can wait on disk."""
        cand = exchange.candidate
        attributes = {"model": exchange.model, "mode": exchange.mode,
                      "prompt_tokens": exchange.prompt_tokens,
                      "completion_tokens": exchange.completion_tokens,
                      "cost_usd": exchange.cost_usd, "attempts": exchange.attempts,
                      "call": call}  # resuming replays calls 1..k
        usage = {"input_tokens": exchange.prompt_tokens,  # the UI's Tokens column
                 "output_tokens": exchange.completion_tokens,
                 "total_tokens": exchange.prompt_tokens + exchange.completion_tokens}
        outputs = {"text": exchange.text, "error": exchange.error, "notes": exchange.notes,
                   "claimed_score": exchange.claimed_score,
                   "candidate": None if cand is None else {"trainer": cand.trainer,
                                                            "params": dict(cand.params)}}
        return json.loads(json.dumps({
            "name": f"llm.{exchange.role}", "inputs": {"messages": exchange.messages},
            "attributes": {**{k: str(v) for k, v in attributes.items()},
                           SpanAttributeKey.CHAT_USAGE: usage},
            "tags": {"proposer": self.context.proposer_name, "role": exchange.role,
                     "search_run_id": self.parent_run_id},
            "experiment_id": self._experiment_id, "run_id": self.parent_run_id,
            "start_ns": exchange.started_ns or None, "end_ns": exchange.ended_ns or None,
            "outputs": outputs, "status": "ERROR" if exchange.error else "OK"}, default=str))

    def on_attempt_outputs(self, record: AttemptRecord, oof, extra) -> None:
        """What resuming needs to not fit this attempt again (``tracking.resume``)."""
        path = self.journal.file_for(f"attempt-{record.index}", OUTPUTS_ARTIFACT)
        write_outputs(path, oof, extra)
        self._journaled(record.index, "outputs", file=str(path))

    def on_attempt_end(self, record: AttemptRecord) -> None:
        if record.restored:
            self._llm_pending = {}  # its (replayed) call's tokens are on its run already
            return  # recorded by the search that ran it
        m = record.metric
        metrics = {"fit_seconds": round(record.fit_seconds, 2),
                   "attempt_seconds": round(record.seconds, 2),
                   "finished_at_search_seconds": record.elapsed}
        steps: dict[str, tuple[float, ...]] = {}
        extra_tags = {}
        if self._llm_pending:
            metrics.update(self._llm_pending)
            self._llm_pending = {}
            if self._llm_trace_ids:
                extra_tags["llm.trace_id"] = self._llm_trace_ids[-1]
        if not record.failed and record.pruned is None:
            metrics[f"cv_{m}"] = ev.shown(record.score)  # the folds keep every decimal
            metrics[f"cv_{m}_std"] = ev.shown(record.score_std)
            steps[f"cv_{m}_fold"] = record.fold_scores
        params = {"trainer": record.candidate.trainer, **record.params}
        status = record.status
        tags = {
            "trainer": record.candidate.trainer, "verdict": status,
            "verdict.valid": str(record.verdict.valid).lower(),
            "verdict.reason": record.verdict.reason, "proposer": record.proposer,
            "proposal_source": record.candidate.source or record.phase,
            "rationale": record.candidate.rationale or "-", "attempt.phase": record.phase,
            "mlflow.note.content": (f"**{status}**: {record.verdict.reason}\n\n"
                                    f"Rationale: {record.candidate.rationale or '-'}"),
        }
        tags.update(extra_tags)
        tags.update(record.tags)
        if record.failed:
            tags["error"] = record.error
        if record.pruned is not None:  # partial folds: logged, never as the CV score
            tags["pruned"] = "true"
            steps[f"partial_{m}_fold"] = record.fold_scores
        for name, text in record.artifacts.items():  # code mode: candidate.py, plan, critic
            path = self.journal.file_for(f"attempt-{record.index}", name)
            path.write_text(text)
            self._journaled(record.index, "outputs", file=str(path),
                            folder=str(Path(name).parent) if "/" in name else None)
        self._journaled(record.index, "end", ts=_now_ms(), metrics=metrics,
                        params={k: recorded_value(v) for k, v in params.items()},
                        tags={k: str(v)[:TAG_MAX] for k, v in tags.items()}, steps=steps,
                        traceback=record.traceback if record.failed else None,
                        status="FAILED" if record.failed else "FINISHED", end_ms=_now_ms())

    def on_search_end(self, run: EngineeringRun) -> None:
        self._drain()  # every attempt's run written before the search's totals
        if self._late_traces:
            self.say(f"sent the traces of {self._late_traces} LLM call(s) made while the "
                     "tracking store was down")
        if self.shared is not None:  # finalize records the search as a whole
            self._worker_note(f"done: {len(run.attempts)} attempts; {run.stop_reason}")
            return
        m = run.metric
        metrics = {"n_attempts": len(run.attempts), "n_verified": len(run.valid_attempts),
                   "n_failed": sum(a.failed for a in run.attempts),
                   "n_quarantined": sum(a.verdict.quarantined for a in run.attempts),
                   "n_iterations": run.n_iterations, "search_seconds": run.wall_seconds,
                   "search_fit_seconds": run.fit_seconds}
        tags = {"stop_reason": run.stop_reason, "summary": run.summary(),
                "stop_kind": run.stop.kind.value if run.stop else "none"}
        if self.resume is not None and self.resume.finalizing:  # the replay's stop says nothing
            tags.update(stop_reason=f"finalized: the {len(self.resume.attempts)} attempts of "
                                    f"its workers", stop_kind="workers")
        best = run.best_attempt
        if best is not None:  # the same names as on the attempt's own run
            metrics.update({f"cv_{m}": ev.shown(best.score),
                            f"cv_{m}_std": ev.shown(best.score_std)})
            tags.update({"selected_run_id": self.child_run_ids.get(best.index, ""),
                         "selected_trainer": best.candidate.trainer,
                         "selected_attempt": str(best.index), "selection": run.selection,
                         "ties": run.tie_note().lstrip("; ") or "none"})
        if run.selection_note:
            tags["selection_note"] = run.selection_note
        self.log(self.parent_run_id, metrics, {}, tags)
        self._mark_ranks(run)

    def _drain(self) -> None:
        """Wait for the writer to send every record; with the store still down after the retry
        window, stop: what is not in the store stays in the journal (``flush`` sends it)."""
        if not self._writer.flush(timeout=1.0):
            window = self._retrying.window
            self.say(f"the search is done; waiting up to {window:.0f}s for the tracking store "
                     f"to take its last {len(self.journal.pending())} record(s) (kept in "
                     f"{self.journal.path})")
            if not self._writer.flush(timeout=window):
                self._stop_sending()
                raise TrackingUnavailable(
                    f"the tracking store {self._retrying.uri} did not answer for "
                    f"{window:.0f}s after the search ended. Recorded there: {self.recorded()}. "
                    f"Nothing was registered; {self._next_step()}")
        self.journal.remove()

    def _stop_sending(self) -> None:
        """The store is judged down: no more waiting on it, the journal keeps the rest."""
        self._sending.stop()
        self._retrying.down = True
        self._writer.flush(raise_error=False, timeout=10.0)

    def _next_step(self) -> str:
        pending = self.journal.pending() if self.journal is not None else []
        if not pending:
            return AGAIN
        return (f"when the store is back, send what waits in the journal "
                f"({self.journal.flush_command()}), then finish the search: "
                f"{self.journal.resume_command()}")

    def _mark_ranks(self, run: EngineeringRun) -> None:
        """``rank`` (CV leaderboard position) and ``selected`` on every attempt's run, so the
        runs table sorts and filters by them (``tags.selected = 'true'``)."""
        best = run.best_attempt
        tied = {a.index for a in run.ties}
        top = run.top_attempt.index if run.top_attempt is not None else None
        for rank, a in enumerate(run.leaderboard(), start=1):
            run_id = self.child_run_ids.get(a.index)
            if run_id is None:
                continue
            tags = {"rank": str(rank),
                    "selected": str(best is not None and a.index == best.index).lower()}
            if a.index in tied or (tied and a.index == top):
                tags["tie"] = "true"  # the window is in the search run's description
            self.log(run_id, {}, {}, tags)

    def end(self, status: str = "FINISHED") -> None:
        """End the search run (after ``record_result``) and this search's run context."""
        self.call("ending the search run", mlflow.end_run, status=status)
        run_context.end(self._context_token)
        self._context_token = None

    def on_search_error(self, error: BaseException) -> None:
        """The attempts under way and the search run end KILLED (an interrupt) or FAILED, with
        the reason as a tag. With the store down, nothing more is sent."""
        full = disk_full(error)  # resumable once space is freed: KILLED, not FAILED
        status = ("KILLED" if full or isinstance(error, (KeyboardInterrupt, SystemExit))
                  else "FAILED")
        reason = f"{type(error).__name__}: {error}"[:TAG_MAX]
        with quiet_loggers("mlflow.store.db.utils", "mlflow.tracking",
                           level=logging.CRITICAL) if full else contextlib.nullcontext():
            self._end_on_error(status, reason, full)

    def _end_on_error(self, status: str, reason: str, full: bool) -> None:
        """``on_search_error``'s work; on a full disk every write is tried once, and what
        could not be written is remembered (``unmarked``) for the message."""
        try:
            if self._retrying is not None:
                self._retrying.window = min(self._retrying.window, 1.0 if full else 30.0)
                # the attempts that finished stay recorded (or journaled, the store down)
                if not self._writer.flush(raise_error=False, timeout=self._retrying.window):
                    self._stop_sending()
            if self._retrying is not None and not self._retrying.down:
                for index in sorted(self._open_children):
                    try:
                        self.client.set_terminated(self.child_run_ids[index], status)
                    except Exception:
                        if not full:
                            raise
                        self.unmarked.append(f"attempt {index}")
                if self.parent_run_id and self.shared is not None:  # the others go on
                    self._worker_note(f"{status.lower()}: {reason}")
                elif self.parent_run_id:
                    try:
                        self.log(self.parent_run_id, {}, {},
                                 {"status": status.lower(), "error": reason,
                                  "kept": self.recorded() or "nothing",
                                  "resume_with": f"--resume {self.parent_run_id}"})
                    except Exception:
                        if not full:
                            raise
        finally:
            if self.journal is not None and not self.journal.pending():
                self.journal.remove()
            self._open_children.clear()
            if self.parent_run_id and mlflow.active_run() is not None and \
                    mlflow.active_run().info.run_id == self.parent_run_id:
                try:
                    mlflow.end_run(status=status)
                except Exception:  # the store may be down, or its disk full
                    if full:
                        self.unmarked.append("the search run")
            run_context.end(self._context_token)
            self._context_token = None

    @contextlib.contextmanager
    def attempt_run(self, index: int):
        """Attempt ``index``'s run as the active run (nested under the search run) while the
        block logs to it: the selected attempt's model and diagnostics. It ends FINISHED."""
        run_id = self.child_run_ids[index]
        self.call("reopening the selected attempt's run", mlflow.start_run, run_id=run_id,
                  nested=True)
        try:
            yield run_id
        finally:
            self.call("closing the selected attempt's run", mlflow.end_run)

    def run_link(self, run_id: str) -> str:
        """The run's page in the MLflow UI: absolute for a tracking server, else the UI's
        path (``mlflow ui`` on the same store)."""
        path = f"#/experiments/{self._experiment_id}/runs/{run_id}"
        uri = mlflow.get_tracking_uri()
        return f"{uri.rstrip('/')}/{path}" if uri.startswith(("http://", "https://")) else path

    def runs_link(self) -> str:
        """The experiment's runs table showing this search's attempts, best CV first, with the
        columns that tell the story: a view the MLflow UI itself shares (an experiment tag
        ``mlflow.sharedViewState.<key>`` and ``?viewStateShareKey=<key>``); when that tag
        cannot be written, the search facets the UI reads from its URL."""
        from urllib.parse import quote, urlencode

        view = self._view_state()
        if self._share_view(view):
            query = urlencode({"viewStateShareKey": self.parent_run_id,
                               "workflowType": "machine_learning"}, quote_via=quote)
        else:
            query = urlencode({key: view[key] for key in ("searchFilter", "orderByKey")}
                              | {"orderByAsc": str(view["orderByAsc"]).lower(),
                                 # the UI's own switch; a fresh browser otherwise opens GenAI
                                 "workflowType": "machine_learning"}, quote_via=quote)
        path = f"#/experiments/{self._experiment_id}/runs?{query}"
        uri = mlflow.get_tracking_uri()
        return f"{uri.rstrip('/')}/{path}" if uri.startswith(("http://", "https://")) else path

    def _view_state(self) -> dict:
        """The runs table of this search: its attempts, sorted by CV, with rank, selected,
        tie, CV and its spread, holdout, gap and fit time as columns (and nothing else)."""
        metric = self.context.metric
        m = metric.name
        tags = [f"tags.`{t}`" for t in ("rank", "tie", "selected")]
        names = (f"cv_{m}", f"holdout_{m}", "gap", f"cv_{m}_std", "fit_seconds")
        metrics = [f"metrics.`{k}`" for k in names]  # what matters first
        columns = [*tags, *metrics, "attributes.`Models`"]
        widths = dict(zip(tags, (56, 48, 76), strict=True)) | {
            key: max(72, 8 * len(name) + 12) for key, name in zip(metrics, names, strict=True)}
        return {"searchFilter": f"tags.`mlflow.parentRunId` = '{self.parent_run_id}'",
                "orderByKey": f"metrics.`cv_{m}`", "orderByAsc": not metric.greater_is_better,
                "lifecycleFilter": "Active", "datasetsFilter": [], "modelVersionFilter":
                "All Runs", "startTime": "ALL", "selectedColumns": columns,
                "columnOrder": columns, "columnWidths": widths, "runsHiddenMode": "SHOW_ALL"}

    def _share_view(self, view: dict) -> bool:
        """Write this search's view as an experiment tag, once; False if the store refused."""
        if self._view_shared is None:
            try:
                self.client.set_experiment_tag(self._experiment_id,
                                               f"{SHARED_VIEW}{self.parent_run_id}",
                                               json.dumps(view))
                self._view_shared = True
            except Exception:
                self._view_shared = False
        return self._view_shared

    def recorded(self) -> str:
        """What the store holds of this search, for messages after a failure."""
        if not self.parent_run_id:
            return ""
        done = self._ended
        attempts = (f"{len(done)} finished attempt{'s' if len(done) != 1 else ''} "
                    f"({_ranges(done)})" if done else "no finished attempt")
        waiting = self.journal.pending_attempts() if self.journal is not None else []
        journaled = (f"; the records of attempt(s) {_ranges(waiting)} wait in the journal "
                     f"{self.journal.path}" if waiting else "")
        return f"search run {self.parent_run_id} with {attempts}{journaled}"

    def call(self, what: str, fn, *args, **kwargs):
        return self._retrying.call(what, fn, *args, **kwargs)

    # ---- helpers ----------------------------------------------------------------------------
    def _mark_model_training(self) -> None:
        mark_model_training(self.client, self._experiment_id)

    def _choose_experiment(self, ds) -> None:
        """``--experiment``, else the one ``mlflow run`` or the environment names (if it exists
        in this store), else ``<data>-agentic``."""
        active = mlflow.active_run()
        if active is not None:  # nested under the caller's run, in its experiment
            mlflow.set_experiment(experiment_id=active.info.experiment_id)
            return
        if os.environ.get("MLFLOW_RUN_ID"):
            if self.experiment:
                warnings.warn("under `mlflow run` the run's experiment is fixed; use "
                              "`mlflow run --experiment-name` instead of --experiment",
                              stacklevel=3)
            return
        if self.experiment:
            mlflow.set_experiment(self.experiment)
            return
        if os.environ.get("MLFLOW_EXPERIMENT_NAME"):
            return
        env_id = os.environ.get("MLFLOW_EXPERIMENT_ID")
        if env_id:
            try:
                self.client.get_experiment(env_id)
                return
            except mlflow.exceptions.MlflowException:
                pass  # left over from another store in this process
        mlflow.set_experiment(f"{ds.name}-agentic")

    def log(self, run_id: str, metrics: dict, params: dict, tags: dict,
            steps: dict | None = None) -> None:
        """One batch (``journal.log_batch``), retried while the store does not answer."""
        log_batch(self.client, run_id, metrics, params, tags, steps)


def mark_model_training(client, experiment_id: str) -> None:
    """The MLflow UI opens an experiment without a kind in its GenAI view (traces, an empty
    overview, "Evaluation runs"): ours are model training. A kind the user set is kept."""
    if EXPERIMENT_KIND in client.get_experiment(experiment_id).tags:
        return
    try:
        client.set_experiment_tag(experiment_id, EXPERIMENT_KIND, MODEL_TRAINING)
    except Exception:  # another search set it between our read and write (sqlite: UNIQUE)
        if EXPERIMENT_KIND not in client.get_experiment(experiment_id).tags:
            raise
