"""Metrics with their direction, computed from a fitted model's outputs on held-out rows."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn import metrics as skm

from mlflow_agentic.core.errors import UserInputError, did_you_mean


@dataclass(frozen=True)
class Metric:
    """A named score; ``bounded`` ones take an absolute verifier margin, others a relative one."""

    name: str
    greater_is_better: bool
    tasks: tuple[str, ...]
    needs_proba: bool
    bounded: bool
    fn: Callable[[np.ndarray, Any, Any, tuple[Any, ...]], float]

    @property
    def direction(self) -> str:
        return "maximize" if self.greater_is_better else "minimize"

    @property
    def worst(self) -> float:
        """The score a failed attempt gets: never better than anything real."""
        return float("-inf") if self.greater_is_better else float("inf")

    def better(self, a: float, b: float) -> bool:
        """True if ``a`` is strictly better than ``b``."""
        return a > b if self.greater_is_better else a < b

    def utility(self, score: float) -> float:
        """Higher-is-better version of the score (for samplers and ranking)."""
        if not np.isfinite(score):
            return float("-inf")
        return score if self.greater_is_better else -score

    def score(self, y_true: Any, y_pred: Any = None, proba: Any = None,
              classes: tuple[Any, ...] = ()) -> float:
        return float(self.fn(np.asarray(y_true), y_pred, proba, classes))


def _pos(classes: tuple[Any, ...]) -> Any:
    return classes[1]


def rank_aucs(scores: np.ndarray, positive: np.ndarray) -> np.ndarray:
    """Per column, binary ROC AUC by ranks (Mann-Whitney's U; ties count a half):
    scikit-learn's number without its per-call checks, which cost more than the AUC on a fold
    (500 rows: 1.5 ms a call against 0.09 ms, ``benchmarks/scoring.py``; 10 classes, 2,000
    rows: 13.9 against 2.1 ms); the search scores every fold on its main thread and the
    greedy ensemble hundreds of blends. ``scores`` and ``positive`` are (rows, columns); every
    column of ``positive`` must hold both classes."""
    from scipy.stats import rankdata

    return _auc_of_ranks(rankdata(scores, axis=0), positive)


def rank_auc(scores: np.ndarray, positive: np.ndarray) -> float:
    """Binary ROC AUC by ranks of one score column (``rank_aucs``; 1-D ranking is faster)."""
    from scipy.stats import rankdata

    return float(_auc_of_ranks(rankdata(scores), positive))


def _auc_of_ranks(ranks: np.ndarray, positive: np.ndarray) -> np.ndarray:
    """Mann-Whitney's U over n_pos * n_neg. Rank sums are half-integers, so exact: a column's
    AUC is the same number ranked alone or among others (a greedy selection's ties hold)."""
    n, n_pos = len(positive), positive.sum(axis=0).astype(float)
    u = (ranks * positive).sum(axis=0) - n_pos * (n_pos + 1) / 2
    return np.asarray(u / (n_pos * (n - n_pos)))


def _roc_auc(y: Any, pred: Any, proba: Any, classes: tuple[Any, ...]) -> float:
    positive = np.asarray(y) == _pos(classes)
    scores = np.asarray(proba, dtype=float)[:, 1]
    if positive.all() or not positive.any() or not np.isfinite(scores).all():
        # scikit-learn's own error: one class only, or a NaN/inf among the probabilities
        return float(skm.roc_auc_score(positive, scores))
    return rank_auc(scores, positive)


def one_vs_rest(y: Any, classes: tuple[Any, ...]) -> tuple[np.ndarray, np.ndarray]:
    """``(positive, held)``: per class, which rows are of it (rows, classes), and which
    classes the rows hold with both positives and negatives (the ones with an AUC)."""
    y = np.asarray(y, dtype=object)
    positive = y[:, None] == np.asarray(list(classes), dtype=object)[None, :]
    n_pos = positive.sum(axis=0)
    return positive, (n_pos > 0) & (n_pos < len(y))


def _roc_auc_ovr(y: Any, pred: Any, proba: Any, classes: tuple[Any, ...]) -> float:
    """Macro one-vs-rest ROC AUC over the classes the rows hold (each with positives and
    negatives): scikit-learn's ``multi_class="ovr"`` when every class is there; a class absent
    from these rows (a rare one in a fold or a small holdout) has no AUC and is left out, not
    made a NaN that sinks the whole score."""
    positive, held = one_vs_rest(y, classes)
    if not held.any():
        return float("nan")
    scores = np.asarray(proba, dtype=float)[:, held]
    return float(np.mean(rank_aucs(scores, positive[:, held])))


def _log_loss(y: Any, pred: Any, proba: Any, classes: tuple[Any, ...]) -> float:
    return float(skm.log_loss(y, np.clip(proba, 1e-15, 1), labels=list(classes)))


def _f1(y: Any, pred: Any, proba: Any, classes: tuple[Any, ...]) -> float:
    if len(classes) == 2:
        return float(skm.f1_score(y == _pos(classes), pred == _pos(classes)))
    return float(skm.f1_score(y, pred, average="macro", labels=list(classes)))


CLASSIFICATION = ("binary", "multiclass")
METRICS: dict[str, Metric] = {
    m.name: m
    for m in (
        Metric("roc_auc", True, ("binary",), True, True, _roc_auc),
        Metric("roc_auc_ovr", True, ("multiclass",), True, True, _roc_auc_ovr),
        Metric("log_loss", False, CLASSIFICATION, True, False, _log_loss),
        Metric("accuracy", True, CLASSIFICATION, False, True,
               lambda y, p, pr, c: skm.accuracy_score(y, p)),
        Metric("balanced_accuracy", True, CLASSIFICATION, False, True,
               lambda y, p, pr, c: skm.balanced_accuracy_score(y, p)),
        Metric("f1", True, CLASSIFICATION, False, True, _f1),
        Metric("rmse", False, ("regression",), False, False,
               lambda y, p, pr, c: skm.root_mean_squared_error(y, p)),
        Metric("mae", False, ("regression",), False, False,
               lambda y, p, pr, c: skm.mean_absolute_error(y, p)),
        Metric("r2", True, ("regression",), False, True, lambda y, p, pr, c: skm.r2_score(y, p)),
    )
}
DEFAULT_METRIC = {"binary": "roc_auc", "multiclass": "roc_auc_ovr", "regression": "rmse"}


def resolve_metric(name: str | None, task: str) -> Metric:
    """The metric for a task: the named one (checked against the task) or the task's default."""
    if name is None or name == "":
        return METRICS[DEFAULT_METRIC[task]]
    if name not in METRICS:
        raise UserInputError(f"unknown metric {name!r}. {did_you_mean(name, list(METRICS))}")
    metric = METRICS[name]
    if task not in metric.tasks:
        fitting = [m for m, v in METRICS.items() if task in v.tasks]
        raise UserInputError(
            f"metric {name!r} does not fit a {task} task (it is for {'/'.join(metric.tasks)}). "
            f"Metrics for {task}: {', '.join(fitting)}"
        )
    return metric
