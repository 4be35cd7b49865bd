"""Greedy ensemble selection (Caruana et al., 2004) over out-of-fold predictions.

Members are verified attempts; weights are how often each is picked (with replacement) when
greedily adding the member that most improves the averaged prediction. The ensemble's CV score
is honest: for each fold, weights are chosen on the other folds' rows only and the fold is
scored with them. The final weights use every row.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from mlflow_agentic.core.metrics import Metric, one_vs_rest, rank_auc, rank_aucs
from mlflow_agentic.engine.evaluate.folds import score_output

if TYPE_CHECKING:
    from mlflow_agentic.engine.evaluate.cv import Splits

ROUNDS = 20
MAX_MEMBERS = 8
"""Candidates considered: the best verified attempts by CV score (as auto-sklearn's n_best)."""


class NestedScore:
    """The CV score of a combination (``fold_scores``: each fold scored with what was chosen
    without its rows) and its spread, as an attempt records them."""

    members: tuple[int, ...]
    """The attempts combined (their indices)."""
    fold_scores: tuple[float, ...]

    @property
    def score(self) -> float:
        return float(np.mean(self.fold_scores))

    @property
    def std(self) -> float:
        return float(np.std(self.fold_scores))


@dataclass(frozen=True)
class EnsembleChoice(NestedScore):
    members: tuple[int, ...]
    """Attempt indices with a non-zero weight."""
    weights: tuple[float, ...]
    fold_scores: tuple[float, ...]
    """Nested CV: each fold scored with weights chosen without its rows."""


def blend(outputs: Sequence[np.ndarray], weights: Sequence[float] | np.ndarray) -> np.ndarray:
    total = sum(w * o for w, o in zip(weights, outputs, strict=True))
    return np.asarray(total / float(sum(weights)))


def utility_of(metric: Metric, y: np.ndarray,
               classes: tuple) -> Callable[[np.ndarray], float]:
    """``output -> utility`` on fixed labels ``y``; binary ROC AUC by ranks (the same number as
    scikit-learn's, without its per-call checks: the greedy loop calls it hundreds of times)."""
    if metric.name == "roc_auc" and len(classes) == 2:
        positive = np.asarray(y) == classes[1]
        if positive.any() and not positive.all():
            return lambda output: rank_auc(output[:, 1], positive)
    if metric.name == "roc_auc_ovr" and len(classes) > 2:
        return _ovr_auc(np.asarray(y), classes) or (
            lambda output: metric.utility(score_output(metric, y, output, classes)))
    return lambda output: metric.utility(score_output(metric, y, output, classes))


def _ovr_auc(y: np.ndarray, classes: tuple) -> Callable[[np.ndarray], float] | None:
    """One-vs-rest ROC AUC, the macro mean over classes, by ranks (the metric's own formula,
    its class masks made once for the hundreds of blends). None when some class is absent
    from ``y`` (scikit-learn's rules then)."""
    positive, held = one_vs_rest(y, classes)
    if not held.all():
        return None
    return lambda output: float(np.mean(rank_aucs(output, positive)))


RANKED_ROWS = 20_000
"""Rows a ROC AUC greedy selection picks its weights on: a seeded sample of more. Every blend
it tries is ranked anew (160k rows: 10 ms a try, 640 tries a nested selection: 6 s of a 30 s
search's main thread, which ran it to 35-37 s); 20k rows rank in 1 ms and still tell members
apart. The ensemble's nested score still scores each fold on all of its rows."""


def greedy_rows(rows: np.ndarray, metric: Metric) -> np.ndarray:
    """``rows``, or a seeded sample of ``RANKED_ROWS`` of them (in order) for a rank metric."""
    if metric.name not in ("roc_auc", "roc_auc_ovr") or len(rows) <= RANKED_ROWS:
        return rows
    return np.sort(np.random.default_rng(0).choice(rows, RANKED_ROWS, replace=False))


def greedy_weights(outputs: Sequence[np.ndarray], y: np.ndarray, rows: np.ndarray,
                   metric: Metric, classes: tuple,
                   rounds: int = ROUNDS) -> np.ndarray:
    """Pick counts per member on ``rows`` (``greedy_rows`` of them): start empty, add the best
    member ``rounds`` times."""
    rows = greedy_rows(np.asarray(rows), metric)
    counts = np.zeros(len(outputs))
    current = None
    utility = utility_of(metric, y[rows], classes)
    subsets = [o[rows] for o in outputs]
    for _ in range(rounds):
        best_j, best_u = 0, float("-inf")
        for j, out in enumerate(subsets):
            trial = out if current is None else (current * counts.sum() + out) / (counts.sum() + 1)
            u = utility(trial)
            if u > best_u:
                best_j, best_u = j, u
        counts[best_j] += 1
        out = subsets[best_j]
        current = out if current is None else (current * (counts.sum() - 1) + out) / counts.sum()
    return counts


def select_ensemble(candidates: Sequence[tuple[int, np.ndarray]], y: np.ndarray, splits: Splits,
                    metric: Metric,
                    classes: tuple, rounds: int = ROUNDS) -> EnsembleChoice | None:
    """Choose an ensemble of ``candidates`` (attempt index, OOF output); None if it is one
    member (that is the single model itself) or there are fewer than two candidates."""
    if len(candidates) < 2:
        return None
    indices = [i for i, _ in candidates]
    outputs = [o for _, o in candidates]
    y = np.asarray(y)
    all_rows = np.arange(len(y))
    counts = greedy_weights(outputs, y, all_rows, metric, classes, rounds)
    if np.count_nonzero(counts) < 2:
        return None
    fold_scores = []
    for _, test in splits:
        train_rows = np.setdiff1d(all_rows, test)
        inner = greedy_weights(outputs, y, train_rows, metric, classes, rounds)
        fold_scores.append(score_output(metric, y[test], blend([o[test] for o in outputs], inner),
                                        classes))
    chosen = [k for k in range(len(outputs)) if counts[k] > 0]
    return EnsembleChoice(tuple(indices[k] for k in chosen),
                          tuple(float(counts[k] / counts.sum()) for k in chosen),
                          tuple(float(s) for s in fold_scores))
