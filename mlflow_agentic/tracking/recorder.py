"""``AttemptRecorder``: the search run and one child run per attempt, as the search runs.

An engine observer, so the engine never imports mlflow. What happens after the loop (holdout,
leaderboard, the model, registration) is ``tracking.result``; ``MlflowTracker`` joins both.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import time
import warnings

import mlflow
from mlflow.entities import Dataset as DatasetEntity
from mlflow.entities import DatasetInput, InputTag, Metric, Param, RunTag
from mlflow.utils.mlflow_tags import MLFLOW_DATASET_CONTEXT

from mlflow_agentic.data.split import frame_digest
from mlflow_agentic.engine.observer import SearchContext, SearchObserver
from mlflow_agentic.engine.restore import recorded_value
from mlflow_agentic.engine.types import AttemptRecord, EngineeringRun, SolutionCandidate
from mlflow_agentic.scoring.plot import trainer_colour
from mlflow_agentic.tracking import context as run_context
from mlflow_agentic.tracking.lifecycle import RunLifecycle, dataset_source
from mlflow_agentic.tracking.resume import DIGEST_TAG, ResumePoint, save_outputs
from mlflow_agentic.tracking.shared import SharedRun
from mlflow_agentic.tracking.store import Retrying, RetryingClient
from mlflow_agentic.tracking.writer import BackgroundWriter

TAG_MAX = 5000


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
        self.parent_run_id: str | None = None
        self.child_run_ids: dict[int, str] = {}
        self.client = None
        self.context: SearchContext | None = None
        self.llm_exchanges: list = []
        self.search_id = run_context.new_search_id()
        self._open_children: set[int] = set()
        self._experiment_id: str | None = None
        self._source_name = ""
        self._llm_pending: dict[str, float] = {}
        self._llm_trace_ids: list[str] = []
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

    # ---- search -----------------------------------------------------------------------------
    def on_search_start(self, context: SearchContext) -> None:
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
        name = self.run_name or f"{ds.name}-{context.proposer_name}"
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
        """The search run's parameters, dataset, columns and briefing; runs left stale."""
        ds = context.dataset
        self._notice_stale_searches()
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
        self._retrying = Retrying(uri, self.recorded, say=lambda line: self.say(line))
        self.client = RetryingClient(mlflow.MlflowClient(), self._retrying)

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
        self._writer.submit(self._create_attempt_run, index, f"{number:02d}-{trainer}", tags)

    def _create_attempt_run(self, index: int, name: str, tags: dict) -> None:
        run = self.client.create_run(self._experiment_id, run_name=name, tags=tags)
        self._open_children.add(index)
        self.child_run_ids[index] = run.info.run_id

    def on_llm_call(self, exchange) -> None:
        """One LLM call: an MLflow trace on the search run; tokens and cost for the attempt."""
        self.llm_exchanges.append(exchange)
        trace_id = self._trace_llm_call(exchange)
        pending = self._llm_pending
        pending["llm_prompt_tokens"] = pending.get("llm_prompt_tokens", 0) + \
            exchange.prompt_tokens
        pending["llm_completion_tokens"] = pending.get("llm_completion_tokens", 0) + \
            exchange.completion_tokens
        pending["llm_seconds"] = pending.get("llm_seconds", 0.0) + exchange.seconds
        pending["llm_cost_usd"] = pending.get("llm_cost_usd", 0.0) + exchange.cost_usd
        if trace_id:
            self._llm_trace_ids.append(trace_id)

    def _trace_llm_call(self, exchange) -> str | None:
        cand = exchange.candidate
        attributes = {"model": exchange.model, "mode": exchange.mode,
                      "prompt_tokens": exchange.prompt_tokens,
                      "completion_tokens": exchange.completion_tokens,
                      "cost_usd": exchange.cost_usd, "attempts": exchange.attempts}
        span = self.client.start_trace(
            "llm.propose", span_type="CHAT_MODEL", inputs={"messages": exchange.messages},
            attributes={k: str(v) for k, v in attributes.items()},
            tags={"proposer": "llm", "search_run_id": self.parent_run_id},
            experiment_id=self._experiment_id, start_time_ns=exchange.started_ns or None,
            run_id=self.parent_run_id)
        outputs = {"text": exchange.text, "notes": exchange.notes,
                   "claimed_score": exchange.claimed_score,
                   "candidate": None if cand is None else {"trainer": cand.trainer,
                                                            "params": dict(cand.params)}}
        self.client.end_trace(span.trace_id, outputs=outputs,
                               status="ERROR" if exchange.error else "OK",
                               end_time_ns=exchange.ended_ns or None)
        return span.trace_id

    def on_attempt_outputs(self, record: AttemptRecord, oof, extra) -> None:
        """What resuming needs to not fit this attempt again (``tracking.resume``)."""
        self._writer.submit(lambda: save_outputs(self.client, self.child_run_ids[record.index],
                                                 oof, extra))

    def on_attempt_end(self, record: AttemptRecord) -> None:
        if record.restored:
            return  # recorded by the search that ran it
        m = record.metric
        metrics = {"fit_seconds": record.fit_seconds, "attempt_seconds": record.seconds,
                   "finished_at_search_seconds": record.elapsed}
        steps: dict[str, tuple[float, ...]] = {}
        extra_tags = {}
        if self._llm_pending:
            metrics.update(self._llm_pending)
            self._llm_pending = {}
            if self._llm_trace_ids:
                extra_tags["llm.trace_id"] = self._llm_trace_ids[-1]
        if not record.failed and record.pruned is None:
            metrics[f"cv_{m}"] = record.score
            metrics[f"cv_{m}_std"] = record.score_std
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
        if record.failed:
            tags["error"] = record.error
        if record.pruned is not None:  # partial folds: logged, never as the CV score
            tags["pruned"] = "true"
            steps[f"partial_{m}_fold"] = record.fold_scores
        self._writer.submit(self._end_attempt_run, record, metrics, params, tags, steps)

    def _end_attempt_run(self, record: AttemptRecord, metrics: dict, params: dict, tags: dict,
                         steps: dict) -> None:
        run_id = self.child_run_ids[record.index]
        if record.failed and record.traceback:
            self.client.log_text(run_id, record.traceback, "error.txt")
        self.log(run_id, metrics, params, tags, steps=steps)
        self.client.set_terminated(run_id, "FAILED" if record.failed else "FINISHED")
        self._open_children.discard(record.index)
        self._ended.append(record.index)

    def on_search_end(self, run: EngineeringRun) -> None:
        self._writer.flush()  # every attempt's run written before the search's totals
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
            metrics.update({f"cv_{m}": best.score, f"cv_{m}_std": best.score_std})
            tags.update({"selected_run_id": self.child_run_ids.get(best.index, ""),
                         "selected_trainer": best.candidate.trainer,
                         "selected_attempt": str(best.index), "selection": run.selection,
                         "ties": run.tie_note().lstrip("; ") or "none"})
        self.log(self.parent_run_id, metrics, {}, tags)
        self._mark_ranks(run)

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
                tags["tie"] = f"within one standard error ({run.tie_window:.4f}) of the top CV"
            self.log(run_id, {}, {}, tags)

    def end(self, status: str = "FINISHED") -> None:
        """End the search run (after ``record_result``) and this search's run context."""
        self.call("ending the search run", mlflow.end_run, status=status)
        run_context.end(self._context_token)
        self._context_token = None

    def on_search_error(self, error: BaseException) -> None:
        """The attempts under way and the search run end KILLED (an interrupt) or FAILED, with
        the reason as a tag. With the store down, nothing more is sent."""
        status = "KILLED" if isinstance(error, (KeyboardInterrupt, SystemExit)) else "FAILED"
        reason = f"{type(error).__name__}: {error}"[:TAG_MAX]
        try:
            if self._retrying is not None:
                self._retrying.window = min(self._retrying.window, 30.0)
            self._writer.flush(raise_error=False)  # the attempts that finished stay recorded
            if self._retrying is not None and not self._retrying.down:
                for index in sorted(self._open_children):
                    self.client.set_terminated(self.child_run_ids[index], status)
                if self.parent_run_id and self.shared is not None:  # the others go on
                    self._worker_note(f"{status.lower()}: {reason}")
                elif self.parent_run_id:
                    self.log(self.parent_run_id, {}, {},
                             {"status": status.lower(), "error": reason,
                              "kept": self.recorded() or "nothing",
                              "resume_with": f"--resume {self.parent_run_id}"})
        finally:
            self._open_children.clear()
            if self.parent_run_id and mlflow.active_run() is not None and \
                    mlflow.active_run().info.run_id == self.parent_run_id:
                with contextlib.suppress(Exception):  # the store may be down
                    mlflow.end_run(status=status)
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

    def recorded(self) -> str:
        """What the store holds of this search, for messages after a failure."""
        if not self.parent_run_id:
            return ""
        done = self._ended
        attempts = (f"{len(done)} finished attempt{'s' if len(done) != 1 else ''} "
                    f"({_ranges(done)})" if done else "no finished attempt")
        return f"search run {self.parent_run_id} with {attempts}"

    def call(self, what: str, fn, *args, **kwargs):
        return self._retrying.call(what, fn, *args, **kwargs)

    # ---- helpers ----------------------------------------------------------------------------
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
        """One batch: ``steps`` maps a metric to its values at steps 1, 2, ... (fold scores:
        one metric, one step per fold, drawn as one line in the UI)."""
        ts = _now_ms()
        metrics = {k: round(float(v), 3) if k.endswith("_seconds") else v
                   for k, v in metrics.items()}  # milliseconds are enough for a duration
        series = [Metric(k, float(v), ts, step)
                  for k, values in (steps or {}).items()
                  for step, v in enumerate(values, start=1)]
        self.client.log_batch(
            run_id,
            metrics=[Metric(k, float(v), ts, 0) for k, v in metrics.items()] + series,
            params=[Param(k, recorded_value(v)) for k, v in params.items()],
            tags=[RunTag(k, str(v)[:TAG_MAX]) for k, v in tags.items()],
        )
