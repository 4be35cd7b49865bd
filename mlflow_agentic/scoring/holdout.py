"""Holdout scoring: every attempt that finished its folds, scored on the sealed holdout by the
mean prediction of its fold models (no refit), and the selected model by itself (the refit that
is registered). The loop and the proposers never import this module."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from mlflow_agentic.core.metrics import METRICS
from mlflow_agentic.core.observer import SearchObserver
from mlflow_agentic.core.types import AttemptRecord, EngineeringRun, is_classification
from mlflow_agentic.engine.evaluate.folds import model_output, score_output

if TYPE_CHECKING:
    from mlflow_agentic.data import Dataset
    from mlflow_agentic.data.split import Holdout

SELF_DECEPTION_GAP = 0.05
"""CV minus holdout above this (bounded metrics; 5% of the CV score for RMSE/MAE/log loss)."""


@dataclass(frozen=True)
class HoldoutScore:
    index: int
    trainer: str
    cv: float
    holdout: float
    gap: float
    """How much CV flattered the model: CV - holdout (holdout - CV for minimised metrics)."""
    self_deceived: bool
    error: str | None = None


@dataclass
class HoldoutReport:
    metric: str
    scores: dict[int, HoldoutScore]
    selected: HoldoutScore | None
    n_rows: int
    scheme: str
    digest: str
    fit_seconds: float = 0.0
    """Time spent scoring after the search (the selected model predicting the holdout)."""
    selected_output: np.ndarray | None = None
    """The selected model's output on the holdout rows (probabilities aligned to the classes,
    or predictions): its predictions table shows these, so the holdout is predicted once."""
    selected_seconds: float = 0.0
    """What predicting every holdout row with the selected model took (``selected_output``)."""

    def line(self) -> str:
        if self.selected is None:
            return f"holdout ({self.n_rows} rows, {self.scheme}): no selected model"
        s = self.selected
        return (f"holdout ({self.n_rows} rows, {self.scheme}): selected {s.trainer} "
                f"{self.metric} CV {s.cv:.4f} vs holdout {s.holdout:.4f}, "
                f"{explain_gap(self.metric, s.cv, s.gap)}")


def gap_limit(metric_name: str, cv: float, threshold: float = SELF_DECEPTION_GAP) -> float:
    """The largest acceptable gap: ``threshold`` for bounded metrics, a share of |CV| else."""
    metric = METRICS.get(metric_name)
    return threshold if metric is None or metric.bounded else threshold * abs(cv)


def explain_gap(metric_name: str, cv: float, gap: float) -> str:
    """The gap with its sign explained, for people (the CLI, descriptions, notes)."""
    limit = gap_limit(metric_name, cv)
    what = ("CV minus holdout" if METRICS[metric_name].greater_is_better
            else "holdout minus CV")
    if not math.isfinite(gap):
        return (f"gap {gap:+.4f} ({what}; the holdout score is undefined on these rows, so "
                "nothing can be said of how CV held)")
    if gap > limit:
        verdict = f"above the {limit:.4f} limit, so CV flattered this model (self-deceived)"
    elif gap > 0:
        verdict = f"positive but within the {limit:.4f} limit: CV was slightly optimistic"
    else:
        verdict = "zero or negative: the sealed holdout scored at least as well as CV"
    return f"gap {gap:+.4f} ({what}; {verdict})"


def gap_of(metric_name: str, cv: float, holdout: float) -> tuple[float, bool]:
    metric = METRICS[metric_name]
    gap = cv - holdout if metric.greater_is_better else holdout - cv
    return float(gap), bool(gap > gap_limit(metric_name, cv))


class HoldoutScorer(SearchObserver):
    """Scores each attempt on the holdout as it finishes, from the mean output of its fold
    models on the holdout rows (the loop predicts them without ever holding their labels):
    no refit per attempt. Nothing it computes reaches the loop or the proposer."""

    def __init__(self, holdout: Holdout, classes: tuple = ()) -> None:
        self.holdout = holdout
        self.classes = tuple(classes)
        self.outputs: dict[int, np.ndarray] = {}
        self.seconds = 0.0

    def on_attempt_predictions(self, record: AttemptRecord, predictions: np.ndarray) -> None:
        self.outputs[record.index] = np.asarray(predictions)

    def score(self, record: AttemptRecord) -> float:
        metric = METRICS[record.metric]
        return score_output(metric, self.holdout.dataset.y.to_numpy(),
                            self.outputs[record.index], self.classes)


def score_on_holdout(run: EngineeringRun, train: Dataset, holdout: Holdout,
                     scorer: HoldoutScorer | None = None) -> HoldoutReport:
    """Every attempt's holdout score (its fold models' mean prediction, from ``scorer``), and
    the selected attempt's from the registered model itself (``run.model``, refit on ``train``).
    Without a scorer (or for an attempt it has no predictions for) only the model is scored."""
    metric = METRICS[run.metric]
    hd = holdout.dataset
    scores: dict[int, HoldoutScore] = {}
    started = time.perf_counter()
    best_index = run.best_attempt.index if run.best_attempt is not None else None
    selected_output, selected_seconds = None, 0.0
    for attempt in run.attempts:
        if attempt.failed or attempt.pruned is not None or not math.isfinite(attempt.score):
            continue
        try:
            if attempt.index == best_index and run.model is not None:
                begun = time.perf_counter()
                output = model_output(run.model, hd.X, train.classes, is_classification(train.task))
                selected_output, selected_seconds = output, time.perf_counter() - begun
                value = score_output(metric, hd.y.to_numpy(), output, train.classes)
            elif scorer is not None and attempt.index in scorer.outputs:
                value = scorer.score(attempt)
            else:
                continue
            gap, deceived = gap_of(run.metric, attempt.score, value)
            scores[attempt.index] = HoldoutScore(attempt.index, attempt.candidate.title,
                                                 attempt.score, float(value), gap, deceived)
        except Exception as exc:  # recorded, never fatal
            scores[attempt.index] = HoldoutScore(
                attempt.index, attempt.candidate.title, attempt.score, float("nan"),
                float("nan"), False, f"{type(exc).__name__}: {exc}")
    selected = scores.get(best_index) if best_index is not None else None
    return HoldoutReport(run.metric, scores, selected, hd.n_rows, holdout.scheme,
                         holdout.digest, time.perf_counter() - started, selected_output,
                         selected_seconds)
