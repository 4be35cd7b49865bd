"""How the search run begins in the cases besides a new one, and how runs left behind are found.

A resumed search reopens its own run (``--resume``); a worker of a shared study joins the run
another worker created; a new search marks runs whose process is gone. A mixin of
``AttemptRecorder``: it uses the recorder's client, ``log`` and ``say``.
"""

from __future__ import annotations

import os
import socket
import warnings

import mlflow
from mlflow.models import infer_signature

from mlflow_agentic.engine.observer import SearchContext
from mlflow_agentic.tracking import context as run_context
from mlflow_agentic.tracking import models
from mlflow_agentic.tracking.shared import process_alive


def dataset_source(ds):
    """The training rows as an MLflow dataset (``mlflow.log_input``)."""
    with warnings.catch_warnings():  # source resolution and int-schema hints: noise here
        warnings.simplefilter("ignore", UserWarning)
        source = mlflow.data.from_pandas(ds.frame, source=ds.source or "in-memory",
                                         targets=ds.target, name=ds.name)
        # `schema` is a cached property inferred from every value; settle it on a sample
        source.__dict__["schema"] = infer_signature(models.schema_sample(ds.frame)).inputs
    return source


class RunLifecycle:
    """Reopening, joining and noticing search runs (see the module docstring)."""

    def _reopen(self, context: SearchContext) -> None:
        """Continue the killed search in its own run: back to RUNNING, its attempts cut
        mid-way marked KILLED (they run again), its finished attempts' runs kept as they are."""
        point, ds = self.resume, context.dataset
        self.search_id = point.tags.get("agentic.search_id", self.search_id)
        self.call("choosing the experiment", mlflow.set_experiment,
                  experiment_id=point.experiment_id)
        self._context_token = run_context.begin(search_id=self.search_id,
                                                proposer=context.proposer_name,
                                                dataset=ds.name)
        run = self.call("reopening the search run", mlflow.start_run, run_id=point.run_id)
        self.parent_run_id, self._experiment_id = run.info.run_id, run.info.experiment_id
        self._source_name = run.data.tags.get("mlflow.source.name", "")
        for run_id, index in point.cut.items():
            self.log(run_id, {}, {}, {"resume.note": f"cut when the search was killed; attempt "
                                      f"{index} runs again on resume"})
            self.client.set_terminated(run_id, "KILLED")
        self.child_run_ids = {i: r.run_id for i, r in point.attempts.items()}
        self._ended = sorted(point.attempts)
        for stale in ("error", "kept"):  # the interruption's; the resumed search says its own
            if stale in point.tags:
                self.client.delete_tag(self.parent_run_id, stale)
        note = (f"{len(point.attempts)} finished attempt(s) read back, not run again; "
                f"{len(point.cut)} cut attempt(s) marked KILLED")
        if point.llm_calls:
            note += f"; {len(point.llm_calls)} LLM call(s) answered from their traces, not asked"
        if point.finalizing:
            what = {"finalized": note}
        else:
            resumed = int(point.tags.get("resumed", "0")) + 1
            what = {"resumed": str(resumed), f"resume.{resumed}": note}
        self.log(self.parent_run_id, {}, {}, {
            "status": "running", **what, "agentic.host": socket.gethostname(),
            "agentic.pid": str(os.getpid())})
        self.dataset_input = dataset_source(ds)  # logged when the search started
        verb = "finalizing" if point.finalizing else "resuming"
        self.say(f"{verb} search run {self.parent_run_id}: {note}")

    def _join(self, context: SearchContext) -> None:
        """A worker joining the search run another worker created: nothing logged on it but
        this worker's presence; its attempts become that run's children."""
        run = self.client.get_run(self.shared.run_id)
        self.parent_run_id, self._experiment_id = run.info.run_id, run.info.experiment_id
        self._source_name = run.data.tags.get("mlflow.source.name", "")
        self.search_id = run.data.tags.get("agentic.search_id", self.search_id)
        self._context_token = run_context.begin(search_id=self.search_id,
                                                proposer=context.proposer_name,
                                                dataset=context.dataset.name)
        self.dataset_input = dataset_source(context.dataset)
        self._worker_note("running")

    def _worker_note(self, note: str) -> None:
        self.log(self.parent_run_id, {}, {}, {f"worker.{self.shared.worker}": note})

    def _notice_stale_searches(self) -> None:
        """Search runs of this experiment left RUNNING by a process that is gone (kill -9, a
        reboot): marked KILLED when provably dead (same host, no such pid), else pointed out."""
        runs = self.client.search_runs(
            [self._experiment_id], "tags.`agentic.role` = 'search' and attributes.status = "
            "'RUNNING'", max_results=50)
        host = socket.gethostname()
        for run in runs:
            run_id, tags = run.info.run_id, run.data.tags
            if run_id == self.parent_run_id or "agentic.study" in tags:
                continue  # ours, or shared by workers (finalize ends it)
            pid = tags.get("agentic.pid", "")
            here = tags.get("agentic.host") == host and pid.isdigit()
            if here and process_alive(int(pid)):
                continue  # another search running now on this machine
            if here:
                children = self.client.search_runs(
                    [self._experiment_id], f"tags.`mlflow.parentRunId` = '{run_id}' and "
                    "attributes.status = 'RUNNING'", max_results=1000)
                why = (f"its process {pid} on {host} was gone when search "
                       f"{self.parent_run_id} started")
                for child in children:
                    self.client.set_terminated(child.info.run_id, "KILLED")
                self.log(run_id, {}, {}, {"status": "killed", "error": why})
                self.client.set_terminated(run_id, "KILLED")
                self.say(f"note: search run {run_id} was left RUNNING ({why}): marked it and "
                         f"{len(children)} attempt(s) under way KILLED; its finished attempts "
                         f"stay recorded (continue it with --resume {run_id})")
            else:
                self.say(f"note: search run {run_id} is still RUNNING (pid {pid or '?'} on "
                         f"{tags.get('agentic.host', '?')}). If that process is gone, mark it: "
                         f"python -c \"import mlflow; mlflow.MlflowClient().set_terminated("
                         f"'{run_id}', 'KILLED')\"")
