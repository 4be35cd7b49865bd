"""Holdout scoring, after the loop: every attempt that produced a model, refit on the training
rows and scored on the sealed holdout. The loop and the proposers never import this module."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from mlflow_agentic.engine.evaluation import predict_outputs
from mlflow_agentic.engine.types import EngineeringRun
from mlflow_agentic.metrics import METRICS
from mlflow_agentic.trainers.registry import get_trainer

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
    """Time spent refitting attempts on the training rows and predicting the holdout."""

    def line(self) -> str:
        if self.selected is None:
            return f"holdout ({self.n_rows} rows, {self.scheme}): no selected model"
        s = self.selected
        return (f"holdout ({self.n_rows} rows, {self.scheme}): selected {s.trainer} "
                f"{self.metric} CV {s.cv:.4f} vs holdout {s.holdout:.4f}, gap {s.gap:+.4f}"
                + (" (self-deceived)" if s.self_deceived else ""))


def gap_limit(metric_name: str, cv: float, threshold: float = SELF_DECEPTION_GAP) -> float:
    """The largest acceptable gap: ``threshold`` for bounded metrics, a share of |CV| else."""
    metric = METRICS.get(metric_name)
    return threshold if metric is None or metric.bounded else threshold * abs(cv)


def gap_of(metric_name: str, cv: float, holdout: float) -> tuple[float, bool]:
    metric = METRICS[metric_name]
    gap = cv - holdout if metric.greater_is_better else holdout - cv
    return float(gap), bool(gap > gap_limit(metric_name, cv))


def score_on_holdout(run: EngineeringRun, train, holdout, random_state: int = 0
                     ) -> HoldoutReport:
    """Refit each attempt on ``train`` (the rows and features the loop saw) and score it."""
    metric = METRICS[run.metric]
    hd = holdout.dataset
    scores: dict[int, HoldoutScore] = {}
    started = time.perf_counter()
    best_index = run.best_attempt.index if run.best_attempt is not None else None
    for attempt in run.attempts:
        if attempt.failed or not math.isfinite(attempt.score):
            continue
        try:
            if attempt.index == best_index and run.model is not None:
                model = run.model  # already refit on all training rows
            else:
                model = get_trainer(attempt.candidate.trainer).pipeline(
                    train, attempt.params, random_state).fit(train.X, train.y)
            y_pred, proba = predict_outputs(model, hd.X, metric, train.classes)
            value = metric.score(hd.y.to_numpy(), y_pred, proba, train.classes)
            gap, deceived = gap_of(run.metric, attempt.score, value)
            scores[attempt.index] = HoldoutScore(attempt.index, attempt.candidate.trainer,
                                                 attempt.score, float(value), gap, deceived)
        except Exception as exc:  # recorded, never fatal
            scores[attempt.index] = HoldoutScore(
                attempt.index, attempt.candidate.trainer, attempt.score, float("nan"),
                float("nan"), False, f"{type(exc).__name__}: {exc}")
    selected = scores.get(best_index) if best_index is not None else None
    return HoldoutReport(run.metric, scores, selected, hd.n_rows, holdout.scheme,
                         holdout.digest, time.perf_counter() - started)
