"""Cross-validation schemes and the advice on which one fits the data.

``stratified`` (classification) / ``kfold`` (regression): shuffled K-fold. ``group``: whole groups
per fold (the group column, or near-duplicate clusters). ``time``: forward-chaining folds in time
order, so no model is scored on rows older than its training rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from sklearn.model_selection import (
    GroupKFold,
    KFold,
    StratifiedGroupKFold,
    StratifiedKFold,
    TimeSeriesSplit,
)

from mlflow_agentic.core.errors import UserInputError
from mlflow_agentic.core.settings import CV_SCHEMES
from mlflow_agentic.core.types import is_classification, is_regression

if TYPE_CHECKING:
    from mlflow_agentic.data import Dataset


Splits = list[tuple[np.ndarray, np.ndarray]]
"""Fixed (train row positions, test row positions) pairs, one per fold."""


@dataclass(frozen=True)
class CVAdvice:
    scheme: str
    reason: str


def advise_cv(dataset: Dataset) -> CVAdvice:
    """Group when groups are known, time order when a time column is, else (stratified) K-fold."""
    if dataset.group_column is not None:
        return CVAdvice("group", f"group column {dataset.group_column!r}: whole groups per fold")
    if dataset.time_column is not None:
        return CVAdvice("time", f"time column {dataset.time_column!r}: folds train on the past "
                                "and test on the future")
    if dataset.cv_groups is not None:
        return CVAdvice("group", "near-duplicate rows: each cluster of copies stays in one fold")
    if is_regression(dataset.task):
        return CVAdvice("kfold", "no groups or time order known: shuffled K-fold")
    return CVAdvice("stratified", "no groups or time order known: stratified K-fold keeps the "
                                  "class balance in every fold")


def resolve_scheme(dataset: Dataset, scheme: str | None) -> tuple[str, str]:
    """The scheme to use and why (``auto`` follows the advice)."""
    if scheme in (None, "", "auto"):
        advice = advise_cv(dataset)
        return advice.scheme, f"advice: {advice.reason}"
    if scheme not in CV_SCHEMES:
        raise UserInputError(f"unknown cv scheme {scheme!r}. Valid: {', '.join(CV_SCHEMES)}")
    if scheme == "group" and dataset.group_column is None and dataset.cv_groups is None:
        raise UserInputError("--cv-scheme group needs --group-column")
    if scheme == "time" and dataset.time_column is None:
        raise UserInputError("--cv-scheme time needs --time-column")
    if scheme == "stratified" and is_regression(dataset.task):
        scheme = "kfold"
    return scheme, "chosen by the user (overrides the advice)"


def cv_groups(dataset: Dataset) -> np.ndarray:
    if dataset.group_column is not None:
        return dataset.frame[dataset.group_column].astype(str).to_numpy()
    return np.asarray(dataset.cv_groups)


class FixedSplits:
    """Precomputed (train, test) index pairs, as an sklearn splitter: hand the same folds to
    several searches (a comparison) so every proposer is judged on identical data."""

    def __init__(self, splits: Iterable[tuple[Any, Any]], scheme: str, reason: str) -> None:
        self.splits = [(np.asarray(tr), np.asarray(te)) for tr, te in splits]
        self.scheme = scheme
        self.reason = reason

    @classmethod
    def for_dataset(cls, dataset: Dataset, cv: int, random_state: int = 0, scheme: str = "auto"
                    ) -> FixedSplits:
        resolved, reason = resolve_scheme(dataset, scheme)
        return cls(make_splits(dataset, cv, random_state, resolved), resolved, reason)

    def get_n_splits(self, X: Any = None, y: Any = None, groups: Any = None) -> int:
        return len(self.splits)

    def split(self, X: Any = None, y: Any = None,
              groups: Any = None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        yield from self.splits


@dataclass(frozen=True)
class KnownFolds:
    """Folds already built (the briefing's) with what they were built from, so that the loop
    takes them instead of building the same folds again: grouped folds over many near-duplicate
    clusters take a second or more, which a 20 s budget feels."""

    splits: Splits
    cv: int
    random_state: int
    scheme: str
    y: np.ndarray
    groups: np.ndarray | None

    @classmethod
    def of(cls, dataset: Dataset, cv: int, random_state: int, scheme: str,
           splits: Splits) -> KnownFolds:
        groups = cv_groups(dataset) if scheme == "group" else None
        return cls(splits, cv, random_state, scheme, dataset.y.to_numpy(), groups)

    def same(self, dataset: Dataset, cv: Any, random_state: int, scheme: str) -> bool:
        """Whether ``make_splits(dataset, cv, random_state, scheme)`` would build these folds:
        the same settings and rows (target, and groups for the group scheme; never time order)."""
        return (scheme != "time" and (cv, random_state, scheme) == (self.cv, self.random_state,
                                                                    self.scheme)
                and dataset.n_rows == len(self.y) and np.array_equal(dataset.y.to_numpy(), self.y)
                and (self.groups is None or np.array_equal(cv_groups(dataset), self.groups)))


def make_splits(dataset: Dataset, cv: Any, random_state: int = 0, scheme: str = "auto",
                known: KnownFolds | None = None) -> Splits:
    """Fixed (train, test) index pairs shared by the baseline and every candidate.

    ``cv`` is a fold count (used with ``scheme``) or any sklearn splitter; ``known``: folds
    already built, returned when they are these (``KnownFolds.same``).
    """
    if known is not None and known.same(dataset, cv, random_state, scheme):
        return known.splits
    y = dataset.y
    if not isinstance(cv, (int, np.integer)):
        return [(np.asarray(tr), np.asarray(te)) for tr, te in cv.split(dataset.X, y)]
    k = int(cv)
    if k < 2:
        raise UserInputError(f"cv must be at least 2 folds, got {k}")
    classification = is_classification(dataset.task)
    if dataset.n_rows < k:
        limit = int(y.value_counts().min()) if classification else dataset.n_rows
        fix = (f"use --cv {limit} or fewer, or more data" if limit >= 2 else "more data")
        raise UserInputError(f"{dataset.n_rows} training rows is fewer than cv={k} folds; {fix}")
    scheme, _ = resolve_scheme(dataset, scheme)
    if classification:
        counts = y.value_counts()
        if counts.min() < k:
            least = int(counts.min())
            fix = (f"use --cv {least} or fewer, or drop or merge that class" if least >= 2
                   else "one row cannot be cross-validated at any --cv: drop or merge that "
                        "class")
            raise UserInputError(
                f"class {counts.idxmin()!r} of target {dataset.target!r} has {least} "
                f"training row{'s' if least != 1 else ''}, fewer than cv={k} folds; {fix}")
    if scheme == "time":
        from mlflow_agentic.data.split import parse_time

        column = dataset.time_column
        if column is None:
            raise UserInputError("--cv-scheme time needs --time-column")
        times = parse_time(dataset.frame[column], column)
        order = np.argsort(times.fillna(times.min()).to_numpy(), kind="stable")
        return [(order[tr], order[te]) for tr, te in TimeSeriesSplit(n_splits=k).split(order)]
    if scheme == "group":
        groups = cv_groups(dataset)
        n_groups = len(np.unique(groups))
        if n_groups < k:
            raise UserInputError(f"{n_groups} groups is fewer than cv={k} folds; lower --cv")
        splitter = (StratifiedGroupKFold(n_splits=k, shuffle=True, random_state=random_state)
                    if classification else GroupKFold(n_splits=k))
        return [(tr, te) for tr, te in splitter.split(dataset.X, y, groups)]
    splitter = (StratifiedKFold(n_splits=k, shuffle=True, random_state=random_state)
                if classification and scheme == "stratified"
                else KFold(n_splits=k, shuffle=True, random_state=random_state))
    return [(tr, te) for tr, te in splitter.split(dataset.X, y)]
