"""Whether a near-perfect CV score is earned on this data, asked by the verifier at the first
score too good to be true. A leak is a column: a model without the columns that could be one
(each alone separates the classes or tracks the target, as the briefing's single-feature and
missing-value findings say; for many classes, on average over the classes) still scores
near-perfect when the task is that easy (handwritten digits from their pixels), and falls far
below when the score came from those columns."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from mlflow_agentic.core.metrics import Metric
from mlflow_agentic.core.observer import SearchContext
from mlflow_agentic.engine.evaluate.evaluation import cross_validate
from mlflow_agentic.verify import leakage
from mlflow_agentic.verify.verifier import DeterministicVerifier, Scorer

if TYPE_CHECKING:
    from mlflow_agentic.data import Dataset

PROBE_TRAINER = "hist_gradient_boosting"
"""The model fitted without the suspect columns: sturdy on any table, with its defaults."""
PROBE_PARAMS = {"max_iter": 50}
"""Fewer rounds than its default: enough to tell 0.99 from 0.85, at a multiclass table's cost."""
PROBE_FOLDS = 2
"""Of the search's own folds."""
PROBE_ROWS = 5_000
"""At most this many of each fold's training rows (a seeded sample): seconds on any table."""
SUSPECT_CHECKS = ("single_feature", "missing_separation")


def verifier_for(dataset: Dataset, splits: Sequence,
                 context: SearchContext) -> DeterministicVerifier:
    """The search's verifier: at a near-perfect score it asks whether it is earned."""
    findings = None if context.briefing is None else context.briefing.findings
    return DeterministicVerifier(context.search.margin, earned=NearPerfect(
        dataset, splits, context.metric, context.baseline_score, findings, context.search.seed))


class NearPerfect:
    """Whether a near-perfect score is earned, by the models behind it (``Scorer``s: a trainer
    and its params; an ensemble's members). Earned when a model without the suspect columns
    still scores near-perfect: the fixed probe (a task that easy for any model), or the family
    that scored, with the params it scored with (a target that is a formula of the columns: a
    linear model reaches it where trees cannot). Each family is probed once, at its first
    near-perfect score."""

    def __init__(self, dataset: Dataset, splits: Sequence, metric: Metric, baseline: float,
                 findings: Sequence[leakage.Finding] | None, seed: int = 0) -> None:
        self.dataset, self.splits, self.metric, self.baseline = dataset, splits, metric, baseline
        self.findings, self.seed = findings, seed
        self._probed: dict[str, str | None] = {}

    def __call__(self, scorers: Sequence[Scorer] = ()) -> str | None:
        from mlflow_agentic.trainers import trainer_registry

        known = trainer_registry()
        for trainer, params in [*((t, p) for t, p in scorers if t in known and t != PROBE_TRAINER),
                                (PROBE_TRAINER, PROBE_PARAMS)]:
            if trainer not in self._probed:
                self._probed[trainer] = earned_without_suspects(
                    self.dataset, self.splits, self.metric, self.baseline, self.findings,
                    self.seed, trainer=trainer, params=params)
            if self._probed[trainer] is not None:
                return self._probed[trainer]
        return None


def suspects(dataset: Dataset, findings: Sequence[leakage.Finding] | None) -> list[str]:
    """The features a leak could hide in: those with a single-feature or missing-value
    finding (a warning or worse), from the briefing when there is one."""
    if findings is None:
        findings = (leakage.check_single_feature(dataset)
                    + leakage.check_missing_separation(dataset))
    features = set(dataset.feature_columns)
    found = {f.column for f in findings if f.column is not None
             and f.check in SUSPECT_CHECKS and f.severity != "info" and f.column in features
             and not (f.check == "single_feature" and dataset.task == "multiclass"
                      and _separates_few(dataset, f.column))}
    return sorted(found)


def _separates_few(dataset: Dataset, column: str) -> bool:
    """A multiclass column that separates some classes from the rest, not all of them: with
    32 leaf species, most shape columns single out one species (the finding's maximum), as
    learning does; a leak encodes the target, every class (the mean over classes)."""
    separations = leakage.class_separations(dataset, column)
    return not separations or (sum(separations) / len(separations)
                               < leakage.SINGLE_FEATURE_AUC_WARNING)


def earned_without_suspects(dataset: Dataset, splits: Sequence, metric: Metric, baseline: float,
                            findings: Sequence[leakage.Finding] | None, seed: int = 0, *,
                            trainer: str = PROBE_TRAINER,
                            params: Mapping[str, Any] = PROBE_PARAMS) -> str | None:
    """Why a near-perfect score counts on ``dataset`` (None: it may be a leak, quarantine it):
    ``trainer`` with ``params``, fitted without the suspect columns, scores near-perfect too."""
    from mlflow_agentic.trainers import get_trainer

    columns = suspects(dataset, findings)
    if not columns:
        return ("no column alone separates the classes or tracks the target: the score comes "
                "from the columns together")
    if len(columns) == len(dataset.feature_columns):
        return None
    probe = dataset.exclude({c: "set aside: could a leak explain a near-perfect score?"
                             for c in columns})
    model = get_trainer(trainer)
    rng = np.random.default_rng(seed)
    folds = [(train if len(train) <= PROBE_ROWS else np.sort(rng.choice(train, PROBE_ROWS,
                                                                           replace=False)), test)
             for train, test in list(splits)[:PROBE_FOLDS]]
    try:
        cv = cross_validate(lambda: model.pipeline(probe, dict(params), seed), probe, folds,
                            metric)
    except Exception:  # noqa: BLE001 - no evidence either way: the quarantine stands
        return None
    score = float(np.mean(cv.fold_scores))
    if leakage.check_too_good(metric.name, score, baseline) is None:
        return None
    named = ", ".join(repr(c) for c in columns[:3]) + (
        f" and {len(columns) - 3} more" if len(columns) > 3 else "")
    return (f"{trainer} without the {len(columns)} column(s) that alone come close "
            f"({named}) scores {metric.name} {score:.4f} too")
