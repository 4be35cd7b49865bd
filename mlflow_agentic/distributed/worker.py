"""``run_worker``: one process of a scaled-out search (``mlflow-agentic worker``).

Every worker reads the same file and seals the same holdout (same seed), checks that its
training rows and settings are the study's, then asks the shared study for trials, one at a
time, until the study holds ``n_trials``. Each attempt is cross-validated here and recorded as a
child run of the one shared search run, with its out-of-fold and holdout-row outputs, so that
``finalize`` selects, refits and registers without fitting any attempt again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mlflow_agentic.core.metrics import resolve_metric
from mlflow_agentic.core.settings import SearchSettings, shared_by_workers
from mlflow_agentic.data.split import frame_digest
from mlflow_agentic.distributed.proposer import SharedOptunaProposer
from mlflow_agentic.distributed.study import SharedStudy, open_storage
from mlflow_agentic.engine import AgenticAutoML, EngineeringRun
from mlflow_agentic.frontdoor.orchestrator import SplitOptions, seal
from mlflow_agentic.tracking import MlflowTracker
from mlflow_agentic.tracking.live import SharedRun, worker_label
from mlflow_agentic.tracking.store import check_store
from mlflow_agentic.trainers import resolve_trainers

if TYPE_CHECKING:
    from mlflow_agentic.data import Dataset
    from mlflow_agentic.frontdoor.orchestrator import SearchResult


@dataclass
class WorkerResult:
    run: EngineeringRun
    run_id: str
    """The shared search run."""
    created: bool
    """This worker created the study (and the search run)."""
    finalized: SearchResult | None = None
    """The ``SearchResult`` when this worker was the last and finalized the search."""


def shared_settings(dataset: Dataset, settings: SearchSettings, split: SplitOptions,
                    keep_flagged_columns: bool) -> dict:
    """What every worker and ``finalize`` must agree on (``core.settings.shared_by_workers``,
    the metric and trainers resolved for the data): it decides the rows, the folds and how a
    score counts. Budgets and ``n_jobs`` are each worker's own."""
    agreed = {name: getattr(settings, name) for name in shared_by_workers()}
    agreed["metric"] = resolve_metric(settings.metric, dataset.task).name
    agreed["trainers"] = list(resolve_trainers(settings.trainers, dataset.task))
    return {"target": dataset.target, **agreed, "keep_flagged_columns": keep_flagged_columns,
            "split": {k: (list(v) if isinstance(v, tuple) else v)
                      for k, v in dataclasses.asdict(split).items()}}


def run_worker(data: Any, *, study: str, storage: str, target: str | None = None,
               n_trials: int = 20, split: SplitOptions | None = None,
               keep_flagged_columns: bool = False, experiment: str | None = None,
               tracking_uri: str | None = None, encoding: str | None = None,
               observers: Sequence = (), say: Callable[[str], None] | None = None,
               tracker_ready: Callable[[MlflowTracker], None] | None = None,
               finalize_last: bool = False, register_name: str | None = None,
               diagnostics: bool = True, **overrides) -> WorkerResult:
    """Work on study ``study`` in ``storage`` (an Optuna RDB URL) until it holds ``n_trials``
    trials (all workers together; the first creates the study and the search run).
    ``overrides``: ``SearchSettings`` fields, checked to agree between workers.
    ``finalize_last``: the last worker to finish (no trial still running) finalizes, once."""
    from mlflow_agentic.frontdoor.api import load_dataset

    say = say or (lambda line: None)
    split = split or SplitOptions()
    dataset = load_dataset(data, target, encoding)
    base = SearchSettings.of(**overrides)
    agreed = shared_settings(dataset, base, split, keep_flagged_columns)
    settings = base.replace(max_iterations=None, patience=None, max_attempts=n_trials,
                            metric=agreed["metric"], trainers=tuple(agreed["trainers"]),
                            ensemble=False, refit=False)
    check_store(tracking_uri)
    shared = SharedStudy(study, open_storage(storage), storage)
    shared.open()
    label = worker_label()
    shared.register(label)
    task = seal(dataset, split=split, cv=base.cv, cv_scheme=base.cv_scheme,
                random_state=base.seed, keep_flagged_columns=keep_flagged_columns)
    run = _shared_run(shared, study, label, frame_digest(task.dataset.frame), agreed, say)
    tracker = MlflowTracker(experiment=experiment, tracking_uri=tracking_uri, say=say,
                            auto_finish=False, shared=run)
    if tracker_ready is not None:
        tracker_ready(tracker)
    # workers seed their samplers apart, or they would propose the same points
    proposer = SharedOptunaProposer(shared, seed=base.seed * 1000 + _worker_number(label),
                                    n_trials=n_trials, first=shared.created,
                                    portfolio=base.portfolio)
    automl = AgenticAutoML(proposer, settings.replace(cv_scheme=task.briefing.cv_scheme),
                           observers=[tracker, *observers], briefing=task.briefing,
                           extra_X=task.holdout.dataset.X)  # features only
    try:
        result = automl.solve(task.dataset)
    except BaseException:
        proposer.abandon()
        shared.unregister(label, "stopped")
        raise
    proposer.close()
    shared.unregister(label)
    run_id = tracker.parent_run_id
    assert run_id is not None, "the tracker made the shared search run when the search started"
    done = WorkerResult(result, run_id, shared.created)
    full = len(shared.study.get_trials(deepcopy=False)) >= n_trials  # not stopped early
    if finalize_last and full and not shared.running_trials() and shared.claim_finalize():
        say("this worker finished last: finalizing the search")
        done.finalized = _finalize(dataset, study, storage, tracking_uri, register_name,
                                   diagnostics, base.n_jobs, observers, say)
    return done


def _finalize(dataset: Dataset, study: str, storage: str, tracking_uri: str | None,
              register_name: str | None, diagnostics: bool, n_jobs: int | None,
              observers: Sequence, say: Callable[[str], None]) -> SearchResult:
    from mlflow_agentic.distributed.finalize import finalize

    return finalize(dataset, study=study, storage=storage, tracking_uri=tracking_uri,
                    register_name=register_name, diagnostics=diagnostics, n_jobs=n_jobs,
                    observers=observers, say=say)


def _shared_run(shared: SharedStudy, study: str, label: str, digest: str, agreed: dict,
                say: Callable[[str], None]) -> SharedRun:
    """The first worker records what every worker must agree on and will create the search
    run; the others check they agree and join it."""
    if shared.created:
        shared.record(digest, agreed)
        say(f"created study {study!r}; this worker creates the search run")
        return SharedRun(None, shared.publish_run, study, label)
    shared.check(digest, agreed)
    run = SharedRun(shared.run_id(), None, study, label)
    say(f"joined study {study!r} and search run {run.run_id}")
    return run


def _worker_number(label: str) -> int:
    import zlib

    return zlib.crc32(label.encode()) % 997
