"""``SearchRun``: the search's own run, opened and closed.

Created new (nested under the caller's run, or ``mlflow run``'s project run), reopened
(``--resume``), or joined (a worker of a shared study: ``tracking.live.lifecycle``); its parameters,
dataset, columns and briefing recorded; ended FINISHED, or FAILED / KILLED with the reason.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
import warnings
from typing import Any

import mlflow
from mlflow.entities import Dataset as DatasetEntity
from mlflow.entities import DatasetInput, InputTag
from mlflow.utils.mlflow_tags import MLFLOW_DATASET_CONTEXT

from mlflow_agentic.core.observer import SearchContext
from mlflow_agentic.data.split import frame_digest
from mlflow_agentic.engine.after.script import FOLDS_ARTIFACT, folds_csv
from mlflow_agentic.tracking.live import lifecycle
from mlflow_agentic.tracking.live.shared import SharedRun
from mlflow_agentic.tracking.resume import DIGEST_TAG, ResumePoint
from mlflow_agentic.tracking.store import (
    Connection,
    mark_model_training,
    new_search_id,
    runs_path,
    search_tags,
    share_view,
    view_state,
)
from mlflow_agentic.tracking.store import (
    begin as begin_context,
)
from mlflow_agentic.tracking.store import (
    end as end_context,
)

"""The experiment tag and value the MLflow UI reads to open the Model training view."""


class SearchRun:
    """The search run of one search (see the module docstring)."""

    def __init__(self, *, experiment: str | None, run_name: str | None, tags: dict[str, str],
                 say, resume: ResumePoint | None, shared: SharedRun | None) -> None:
        self.experiment = experiment
        self.run_name = run_name
        self.tags = dict(tags)
        """Extra tags on the search run (a comparison's id, the arm's seed)."""
        self.say = say
        self.resume = resume
        """A killed search to continue (``--resume``): its run is reopened."""
        self.shared = shared
        """A worker on a shared study: the run is created or joined, never ended here."""
        self.search_id = new_search_id()
        self.run_id = ""
        """The search run's id ('' until ``open`` made, reopened or joined it)."""
        self.experiment_id = ""
        self.source_name = ""
        self.context: SearchContext
        """What the search is (set by ``open``)."""
        self.context_token: Any = None
        self.dataset_input: Any = None
        """The training rows as an MLflow dataset (logged again on the selected attempt)."""
        self.conn: Connection
        """The store (set by ``open``)."""
        self.view_shared: bool | None = None
        self.name = run_name or ""

    def open(self, context: SearchContext, conn: Connection, record) -> None:
        """Create, reopen or join the search run; ``record(fn, *args)`` runs the rest of the
        recording on the writer's thread (the first candidates' folds start meanwhile)."""
        self.context, self.conn = context, conn
        ds = context.dataset
        params = search_params(context)
        digest = frame_digest(ds.frame)
        if self.resume is not None:
            self.resume.check(params, digest)  # before anything in the store changes
            lifecycle.reopen(self, context)
            return
        if self.shared is not None and self.shared.run_id:
            lifecycle.join(self, context)
            return
        run = self._create(context)
        self.run_id, self.experiment_id = run.info.run_id, run.info.experiment_id
        self.source_name = run.data.tags.get("mlflow.source.name", "")
        if self.shared is not None:
            self.tags.update({"agentic.study": self.shared.study, "workers": "shared"})
        tags = self._tags(context, digest, params["excluded_columns"])
        # Under `mlflow run` the project's parameters are already logged (params are immutable):
        # a resolved value that differs from a given one goes under `resolved.<name>`.
        given = run.data.params
        params = {(k if given.get(k, str(v)) == str(v) else f"resolved.{k}"): v
                  for k, v in params.items()}
        self.dataset_input = lifecycle.dataset_source(ds)
        record(self._record, context, {f"baseline_{context.metric.name}":
                                       context.baseline_score}, params, tags)
        if self.shared is not None and self.shared.publish is not None:
            self.shared.publish(self.run_id)

    def _create(self, context: SearchContext):
        """A new run, named so searches of one experiment are told apart at a glance."""
        ds = context.dataset
        name = self.name = self.run_name or (f"{ds.name}-{context.proposer_name}-"
                                             f"{time.strftime('%m%d-%H%M%S')}")
        # runs started from here on are ours: the run-context provider plugin tags them
        self.context_token = begin_context(search_id=self.search_id,
                                               proposer=context.proposer_name, dataset=ds.name)
        if self.shared is None:
            self.conn.call("choosing the experiment", self._choose_experiment, ds)
            return self.conn.call("starting the search run", mlflow.start_run, run_name=name,
                                  nested=mlflow.active_run() is not None)
        # the first worker: created, never entered (it outlives this process)
        experiment = self.conn.call("choosing the experiment", mlflow.set_experiment,
                                    self.experiment or f"{ds.name}-agentic")
        return self.conn.client.create_run(experiment.experiment_id, run_name=name)

    def _tags(self, context: SearchContext, digest: str, excluded: str) -> dict:
        ds, metric = context.dataset, context.metric
        tags = {"mlflow.runName": self.name, "agentic.role": "search",
                "agentic.host": socket.gethostname(), "agentic.pid": str(os.getpid()),
                "proposer": context.proposer_name, "dataset": ds.name, "task": ds.task,
                "target": ds.target, "metric": metric.name, "status": "running",
                DIGEST_TAG: digest, **search_tags(), **self.tags,
                "cv_scheme": context.cv_scheme, "cv_scheme.reason": context.cv_reason,
                "excluded_columns": excluded}
        tags.update({tag_key("excluded", c): (why if tag_key("excluded", c) ==
                                              f"excluded.{c}" else f"{c!r}: {why}")
                     for c, why in ds.excluded_columns.items()})
        return tags

    def _record(self, context: SearchContext, metrics: dict, params: dict, tags: dict) -> None:
        """The search run's parameters, dataset, columns and briefing; runs left stale; the
        experiment's kind."""
        client, ds = self.conn.client, context.dataset
        lifecycle.notice_stale_searches(self)
        mark_model_training(client, self.experiment_id)
        self.conn.log(self.run_id, metrics, params, tags,
                      steps={f"baseline_{context.metric.name}_fold":
                             context.baseline_fold_scores})
        client.log_inputs(self.run_id, datasets=[DatasetInput(
            DatasetEntity(**self.dataset_input.to_dict()),  # the run is named, not active
            tags=[InputTag(MLFLOW_DATASET_CONTEXT, "training")])])
        client.log_dict(self.run_id, {c: vars(i) for c, i in ds.columns.items()},
                        "columns.json")
        if context.briefing is not None:
            self._log_briefing(context.briefing)
            folds = folds_csv(context.dataset, context.briefing.recipe, context.n_splits,
                              context.search.seed, context.cv_scheme,
                              known=context.briefing.folds)
            if folds is not None:  # what each attempt's attempt.py reads
                client.log_text(self.run_id, folds, FOLDS_ARTIFACT)

    def _log_briefing(self, briefing) -> None:
        """Findings as tags (seen in the UI) and, with the profile and advice, as JSON."""
        tags = {"findings.critical": str(len(briefing.critical)),
                "findings.total": str(len(briefing.findings))}
        for k, f in enumerate(briefing.findings, start=1):
            key = tag_key("finding", f"{f.check}.{f.column}" if f.column else f.check)
            tags[key if key not in tags else f"{key}.{k}"] = f"{f.severity}: {f.message}"
        self.conn.log(self.run_id, {}, {}, tags)
        self.conn.client.log_dict(self.run_id, [f.to_dict() for f in briefing.findings],
                                  "findings.json")
        self.conn.client.log_dict(self.run_id, briefing.to_dict(), "briefing.json")

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
                self.conn.client.get_experiment(env_id)
                return
            except mlflow.exceptions.MlflowException:
                pass  # left over from another store in this process
        mlflow.set_experiment(f"{ds.name}-agentic")

    def worker_note(self, note: str) -> None:
        worker = self.shared.worker if self.shared is not None else "?"
        self.conn.log(self.run_id, {}, {}, {f"worker.{worker}": note})

    def end(self, status: str = "FINISHED") -> None:
        """End the search run and this search's run context."""
        self.conn.call("ending the search run", mlflow.end_run, status=status)
        self.end_context()

    def end_context(self) -> None:
        end_context(self.context_token)
        self.context_token = None

    def end_active(self, status: str) -> bool:
        """End the search run if it is the active run (a failed search); False if the store
        would not take it."""
        active = mlflow.active_run()
        if self.run_id and active is not None and active.info.run_id == self.run_id:
            try:
                mlflow.end_run(status=status)
            except Exception:  # the store may be down, or its disk full
                return False
        return True

    @contextlib.contextmanager
    def attempt_run(self, run_id: str):
        """An attempt's run as the active run (nested under the search run) while the block
        logs to it: the selected attempt's model and diagnostics. It ends FINISHED."""
        self.conn.call("reopening the selected attempt's run", mlflow.start_run, run_id=run_id,
                       nested=True)
        try:
            yield run_id
        finally:
            self.conn.call("closing the selected attempt's run", mlflow.end_run)

    def run_link(self, run_id: str) -> str:
        """The run's page in the MLflow UI."""
        return self.conn.link(f"#/experiments/{self.experiment_id}/runs/{run_id}")

    def runs_link(self) -> str:
        """This search's attempts in the MLflow UI, as a view the UI itself shares
        (``tracking.store.views``); written once."""
        view = view_state(self.run_id, self.context.metric)
        if self.view_shared is None:
            self.view_shared = share_view(self.conn.client, self.experiment_id,
                                                self.run_id, view)
        return self.conn.link(runs_path(self.experiment_id, self.run_id, view,
                                              self.view_shared))


def search_params(context: SearchContext) -> dict:
    """The search run's parameters: the settings, the data's shape, the excluded columns."""
    ds, metric = context.dataset, context.metric
    return {**context.search.logged(), "proposer": context.proposer_name, "metric": metric.name,
            "direction": metric.direction, "trainers": ",".join(context.trainers),
            "max_iterations": _or_off(context.search.max_iterations),
            "patience": _or_off(context.search.patience),
            "cv_folds": context.n_splits, "cv_scheme": context.cv_scheme,
            "seed": context.search.seed,
            "task": ds.task, "target": ds.target, "n_rows": ds.n_rows,
            "n_features": len(ds.feature_columns),
            "excluded_columns": ",".join(ds.excluded_columns) or "none",
            **dict(context.recorded)}


def _or_off(value):
    return "off" if value is None else value


def tag_key(prefix: str, name: str) -> str:
    """``prefix.name`` as an MLflow tag key may be: characters MLflow refuses (``#``, ``!``,
    ``?``, a newline) become ``_`` (the value then names the column as it is)."""
    import re

    safe = re.sub(r"[^\w./\- :]", "_", str(name))[:200]
    return f"{prefix}.{safe}"
