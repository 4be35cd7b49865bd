"""Serve what the holdout vouched for, fitted on every labelled row (AutoGluon's ``refit_full``
idea): once the holdout has scored the selected model, the same recipe (trainer, params,
ensemble weights) is refit on the training and holdout rows. The holdout's evidence stays that
of the model it scored, which is kept beside the served one (the promotion gate scores it)."""

from __future__ import annotations

import dataclasses
import time
import warnings
from typing import TYPE_CHECKING

import pandas as pd

from mlflow_agentic.core.types import EngineeringRun
from mlflow_agentic.data.split import Holdout
from mlflow_agentic.engine.after.refit import refit_on, refit_pool
from mlflow_agentic.engine.search.reserves import full_refit_share
from mlflow_agentic.engine.workers.parallel import WorkerPool

if TYPE_CHECKING:
    from mlflow_agentic.data import Dataset


def all_rows(train: Dataset, holdout: Holdout) -> Dataset:
    """The training rows and the holdout rows as one dataset, typed as the training rows."""
    frame = pd.concat([train.frame, holdout.dataset.frame[train.frame.columns]],
                      ignore_index=True)
    return dataclasses.replace(train, frame=frame, cv_groups=None, infinite_cells={})


def why_not(run: EngineeringRun, train_rows: int, holdout: Holdout,
            end: float | None) -> str:
    """Why the selected model cannot be refit on every row ('' when it can); ``train_rows``:
    how many rows its refit took (the time estimate scales from it); ``end``: when the refit
    must end (a ``time.perf_counter()`` value; None: no time budget)."""
    best = run.best_attempt
    if run.model is None or best is None:
        return "nothing to refit"
    if run.bagged:
        return "the served model is the average of its fold models (--bag), not a refit"
    if best.candidate.code is not None:
        return "a code-mode pipeline is refit in its sandbox on the training rows only"
    if holdout.blanked_columns:
        return ("the holdout's post-outcome columns are blanked, so its rows are not "
                "training rows")
    if end is not None:
        # the share the loop kept back for it (engine.search.reserves: one figure for both)
        expected = full_refit_share(train_rows, holdout.n_rows) * run.refit_seconds
        if time.perf_counter() + expected > end:
            return (f"the refit on all rows (about {expected:.0f}s) would not fit the time "
                    "left")
    return ""


def serve_on_all_rows(run: EngineeringRun, train: Dataset, holdout: Holdout,
                      pool: WorkerPool | None = None, random_state: int = 0,
                      end: float | None = None) -> str:
    """Refit ``run``'s selected attempt on ``train`` + ``holdout`` rows and serve that
    (``run.model``), keeping the model the holdout scored as ``run.evidence_model``; on the
    search's ``pool`` (``refit_pool``: this process when a spent budget stopped its workers,
    as for the first refit; default: this process). Returns
    why it was not done ('' when it was): the training-rows model is then served."""
    reason = why_not(run, train.n_rows, holdout, end)
    if reason or run.best_attempt is None:  # (why_not says so when there is none)
        return reason
    data = all_rows(train, holdout)
    by_index = {a.index: a for a in run.attempts}
    start = time.perf_counter()
    try:
        model = refit_on(run.best_attempt, by_index, data, refit_pool(pool or WorkerPool(1)),
                         random_state)
    except Exception as exc:  # the model the holdout scored is served instead: nothing lost
        warnings.warn(f"refit on all {data.n_rows} rows failed ({type(exc).__name__}: {exc}); "
                      "serving the model fitted on the training rows", stacklevel=2)
        return f"the refit on all rows failed: {type(exc).__name__}"
    run.evidence_model, run.model = run.model, model
    run.served_rows = data.n_rows
    run.refit_seconds += time.perf_counter() - start
    return ""
