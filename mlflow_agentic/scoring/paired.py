"""Is one model better than another beyond the noise of the rows they are judged on?

Both models predict the same rows; a paired bootstrap resamples those rows (the same resample
for both) and recomputes the metric difference each time. The rows are the only source of noise
it knows: it says how much the comparison could move had other rows been sealed. No MLflow here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from mlflow_agentic.core.labels import labels_of
from mlflow_agentic.core.metrics import METRICS

RESAMPLES = 1000
CONFIDENCE = 0.95
"""One-sided: 'better beyond noise' means the improvement's lower 5% bound is above the
minimum improvement (a one-sided test at 5%)."""


@dataclass(frozen=True)
class Outputs:
    """A model's predictions on the evaluation rows: labels, probabilities in ``classes`` order
    (classifiers), or values (regressors)."""

    y_pred: np.ndarray | None
    proba: np.ndarray | None
    classes: tuple = ()

    def labelled(self) -> Outputs:
        """The same outputs with labels (the most probable class when only probabilities were
        given), as arrays: what ``take`` indexes."""
        labels = self.y_pred
        if labels is None and self.proba is not None:
            labels = labels_of(self.proba, self.classes)
        return Outputs(None if labels is None else np.asarray(labels),
                       None if self.proba is None else np.asarray(self.proba), self.classes)

    def take(self, rows: np.ndarray) -> Outputs:
        """These rows of ``labelled()`` outputs."""
        return Outputs(None if self.y_pred is None else self.y_pred[rows],
                       None if self.proba is None else self.proba[rows], self.classes)


@dataclass(frozen=True)
class PairedComparison:
    """The challenger's improvement over the incumbent (positive = better, in the metric's own
    units, whatever its direction), with its 90% interval (whose lower end is the one-sided 5%
    bound)."""

    metric: str
    improvement: float
    interval: tuple[float, float]
    n_rows: int
    resamples: int

    @property
    def lower_bound(self) -> float:
        """The pessimistic end: the improvement's one-sided 5% bound."""
        return self.interval[0]

    def beyond(self, min_improvement: float = 0.0) -> bool:
        """Better beyond the noise: even the pessimistic end of the bootstrap clears
        ``min_improvement``."""
        return math.isfinite(self.lower_bound) and self.lower_bound > min_improvement

    def describe(self) -> str:
        low, high = self.interval
        return (f"{self.metric} improvement {self.improvement:+.4f}, 90% interval "
                f"[{low:+.4f}, {high:+.4f}] ({self.resamples} paired resamples of "
                f"{self.n_rows} rows)")


def paired_bootstrap(metric: str, y_true: np.ndarray, ours: Outputs, theirs: Outputs, *,
                     resamples: int = RESAMPLES, seed: int = 0) -> PairedComparison:
    """Compare ``ours`` with ``theirs`` on the rows of ``y_true`` (seeded: the same inputs give
    the same interval). Resamples on which the metric is undefined (one class only) are
    skipped."""
    m = METRICS[metric]
    y = np.asarray(y_true)
    ours, theirs = ours.labelled(), theirs.labelled()  # once, not per resample
    sign = 1.0 if m.greater_is_better else -1.0

    def difference(rows: np.ndarray) -> float:
        a, b = ours.take(rows), theirs.take(rows)
        return sign * (m.score(y[rows], a.y_pred, a.proba, a.classes)
                       - m.score(y[rows], b.y_pred, b.proba, b.classes))

    everything = np.arange(len(y))
    observed = difference(everything)
    rng = np.random.default_rng(seed)
    resampled = [rng.integers(0, len(y), len(y)) for _ in range(resamples)]
    fast = _WEIGHTED.get(metric)
    if fast is not None:  # the same resamples, as row counts: one pass for all of them
        draws = [float(d) for d in sign * (fast(y, ours, resampled) - fast(y, theirs, resampled))
                 if math.isfinite(d)]
    else:
        draws = []
        for rows in resampled:
            try:
                value = difference(rows)
            except ValueError:  # e.g. ROC AUC of a resample holding one class
                continue
            if math.isfinite(value):
                draws.append(value)
    if not draws:
        return PairedComparison(metric, observed, (math.nan, math.nan), len(y), 0)
    low, high = np.quantile(draws, [1 - CONFIDENCE, CONFIDENCE])
    return PairedComparison(metric, observed, (float(low), float(high)), len(y), len(draws))


BLOCK = 64
"""Resamples weighed at once (a block of row counts is ``BLOCK`` x rows)."""


def _counts(resampled: list[np.ndarray], n: int) -> Iterator[np.ndarray]:
    """Blocks of row counts: how often each row is in each resample."""
    for start in range(0, len(resampled), BLOCK):
        block = resampled[start:start + BLOCK]
        counts = np.zeros((len(block), n))
        for i, rows in enumerate(block):
            counts[i] = np.bincount(rows, minlength=n)
        yield counts


def _weighted_auc(y: np.ndarray, outputs: Outputs, resampled: list[np.ndarray]) -> np.ndarray:
    """ROC AUC of every resample (NaN where it holds one class only), as ``roc_auc_score`` on
    the resampled rows: ties count a half."""
    positive = np.asarray(y == outputs.classes[1], dtype=float)
    assert outputs.proba is not None, "ROC AUC needs probabilities"
    score = outputs.proba[:, 1]
    order = np.argsort(score, kind="mergesort")
    starts = np.flatnonzero(np.r_[True, np.diff(score[order]) != 0])  # groups of equal scores
    out = []
    for counts in _counts(resampled, len(y)):
        w = counts[:, order]
        pos = np.add.reduceat(w * positive[order], starts, axis=1)
        neg = np.add.reduceat(w * (1 - positive[order]), starts, axis=1)
        below = np.cumsum(neg, axis=1) - neg  # negatives scored strictly lower
        pairs = pos.sum(axis=1) * neg.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            out.append(np.where(pairs > 0, (pos * (below + 0.5 * neg)).sum(axis=1) / pairs,
                                np.nan))
    return np.concatenate(out)


def _weighted_error(power: int) -> Callable[[np.ndarray, Outputs, list[np.ndarray]], np.ndarray]:
    def error(y: np.ndarray, outputs: Outputs, resampled: list[np.ndarray]) -> np.ndarray:
        residual = np.abs(np.asarray(y, dtype=float) - np.asarray(outputs.y_pred, dtype=float))
        out = []
        for counts in _counts(resampled, len(y)):
            mean = counts @ residual ** power / counts.sum(axis=1)
            out.append(np.sqrt(mean) if power == 2 else mean)
        return np.concatenate(out)

    return error


_WEIGHTED = {"roc_auc": _weighted_auc, "rmse": _weighted_error(2), "mae": _weighted_error(1)}
"""Metrics computed for a whole block of resamples at once (row counts as weights): the same
values as scoring each resample's rows, in a fraction of the time (a thousand resamples scored
one by one take seconds of a short budget)."""
