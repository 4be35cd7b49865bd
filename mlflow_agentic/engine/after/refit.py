"""Refit what will be registered, and only that: the selected attempt on all training rows (an
ensemble: each of its members, in parallel on the worker pool). Or, when that refit would not
fit the time left, no refit: ``bagged`` serves the average of the models its CV folds fitted."""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from mlflow_agentic.core.types import (
    COMBINERS,
    STACK,
    AttemptRecord,
    best_first,
    is_classification,
)
from mlflow_agentic.engine.workers.parallel import WorkerPool, single_threaded
from mlflow_agentic.trainers.registry import get_trainer

if TYPE_CHECKING:
    from sklearn.pipeline import Pipeline

    from mlflow_agentic.data import Dataset
    from mlflow_agentic.engine.evaluate.folds import FoldData


def combine(record: AttemptRecord, models: list, dataset: Dataset) -> Any:
    """The served model of a combining ``record`` from its members' fitted ``models``: their
    weighted average (an ensemble) or its stacker over them (params ``coef``, ``intercept``)."""
    from mlflow_agentic.trainers.stacked import StackedEnsemble
    from mlflow_agentic.trainers.transforms import WeightedEnsemble

    classes = list(dataset.classes) if is_classification(dataset.task) else None
    if record.candidate.trainer == STACK:
        return StackedEnsemble(models, record.params["coef"], record.params["intercept"],
                               classes, dataset.task)
    return WeightedEnsemble(models, list(record.params["weights"]), classes)


def fit_pipeline(pipeline: Pipeline, X: Any, y: Any) -> Pipeline:
    """Worker task: fit and return ``pipeline``."""
    return pipeline.fit(X, y)


def refit_pool(pool: WorkerPool) -> WorkerPool:
    """The workers a refit after the search runs on: the search's, unless a spent time budget
    stopped them mid-fold; then this process, one fit after another (fresh workers spend about
    2 s importing the scientific stack under load, more than the refits of a 20 s search)."""
    return pool if pool.warm else WorkerPool(1)


def refit(history: Sequence[AttemptRecord], best: AttemptRecord | None, dataset: Dataset,
          pool: WorkerPool, random_state: int,
          code_refit: Callable[[AttemptRecord], Any]) -> tuple[Any, float, AttemptRecord | None]:
    """``(model, seconds, record)``: the best verified attempt refit on all rows; if that fails,
    the next best (an ensemble falls back to the best single attempt). ``code_refit(record)``:
    the fitted pipeline of a code-mode attempt (its sandbox refit it)."""
    ranked = best_first(history)
    if best is not None and best in ranked:
        ranked.remove(best)
        ranked.insert(0, best)
    by_index = {a.index: a for a in history}
    pool = refit_pool(pool)
    for record in ranked:
        start = time.perf_counter()
        try:
            model = (code_refit(record) if record.candidate.code is not None
                     else refit_on(record, by_index, dataset, pool, random_state))
        except Exception as exc:
            warnings.warn(f"refit of attempt {record.index} ({record.candidate.trainer}) "
                          f"failed: {exc}; trying the next verified attempt", stacklevel=2)
            continue
        return model, time.perf_counter() - start, record
    return None, 0.0, None


def refit_on(record: AttemptRecord, by_index: dict[int, AttemptRecord], dataset: Dataset,
             pool: WorkerPool, random_state: int = 0) -> Any:
    """``record`` (an attempt, or a combination of the attempts in ``by_index``) fitted on
    every row of ``dataset``; raises what the fit raises."""
    if record.candidate.trainer in COMBINERS:
        members = [by_index[i] for i in record.params["members"]]
        return combine(record, _refit_one(members, dataset, pool, random_state), dataset)
    return _refit_one([record], dataset, pool, random_state)[0]


def _refit_one(records: list[AttemptRecord], dataset: Dataset, pool: WorkerPool,
               random_state: int) -> list:
    futures = []
    for record in records:
        pipeline = get_trainer(record.candidate.trainer).pipeline(dataset, record.params,
                                                                  random_state)
        futures.append(pool.submit(fit_pipeline, single_threaded(pipeline), dataset.X,
                                   dataset.y))
    models: list[Any] = [None] * len(futures)
    for i, future in pool.in_order(futures):  # no deadline: every future comes back
        if future is not None:
            models[i] = future.result()
    return models


def bagged(record: AttemptRecord, history: Sequence[AttemptRecord], folds: FoldData,
           dataset: Dataset) -> Any:
    """``record`` as the average of the models its folds fitted (an ensemble or a stack: of
    each member's, combined as it combines them): no refit. None when a fold model was not kept."""
    from mlflow_agentic.trainers.transforms import WeightedEnsemble

    classes = list(dataset.classes) if is_classification(dataset.task) else None
    by_index = {a.index: a for a in history}

    def bag(attempt: AttemptRecord) -> Any:
        if attempt.candidate.code is not None:  # its folds ran in the sandbox
            return None
        style = get_trainer(attempt.candidate.trainer).preprocessing
        pipelines = folds.fold_pipelines(attempt.index, style)
        return None if pipelines is None else WeightedEnsemble(pipelines, [1.0] * len(pipelines),
                                                               classes)

    if record.candidate.trainer not in COMBINERS:
        return bag(record)
    members = [bag(by_index[i]) for i in record.params["members"]]
    if any(m is None for m in members):
        return None
    return combine(record, members, dataset)
