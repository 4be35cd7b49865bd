"""The sealed split: holdout rows are set aside before any proposer exists.

Only the scorer (``mlflow_agentic.scoring``) reads a ``Holdout``; the loop never receives one.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from sklearn.model_selection import GroupShuffleSplit, train_test_split

from mlflow_agentic.core.errors import UserInputError
from mlflow_agentic.core.types import is_classification
from mlflow_agentic.data.dataset import Dataset
from mlflow_agentic.data.duplicates import (
    DUPLICATE_SHARE_WARNING,
    duplicate_share,
    near_duplicate_clusters,
)

DEFAULT_FRACTION = 0.2
GROUP_FRACTION = 0.25
MIN_GROUPS = 4
TIME_UNPARSEABLE_MAX = 0.0
"""Share of non-blank time values allowed not to parse (none: a bad time column is an error)."""


@dataclass(frozen=True)
class Holdout:
    """Rows sealed away from the search, scored once at the end."""

    dataset: Dataset
    scheme: str
    fraction: float
    blanked_columns: tuple[str, ...] = ()
    rows: np.ndarray | None = field(default=None, compare=False, repr=False)
    """The holdout's positions among the dataset's rows (what ``attempt.py`` leaves out)."""
    training_rows: np.ndarray | None = field(default=None, compare=False, repr=False)
    """The training rows' positions, in the order the search holds them."""

    @property
    def n_rows(self) -> int:
        return self.dataset.n_rows

    def positions(self) -> dict[str, list[int]]:
        """Where the training and the holdout rows sit among the dataset's rows ({}: not
        known, a holdout made elsewhere)."""
        if self.rows is None or self.training_rows is None:
            return {}
        return {"training": self.training_rows.tolist(), "holdout": self.rows.tolist()}

    @property
    def digest(self) -> str:
        """Identifies the holdout rows (for records), without revealing them."""
        return frame_digest(self.dataset.frame)


def frame_digest(frame: pd.DataFrame) -> str:
    """A short content hash of a frame's rows: names the data without revealing it."""
    hashed = pd.util.hash_pandas_object(frame, index=False).to_numpy()
    return hashlib.sha256(hashed.tobytes()).hexdigest()[:16]


def seal_holdout(
    dataset: Dataset,
    *,
    time_column: str | None = None,
    group_column: str | None = None,
    holdout_fraction: float | None = None,
    post_outcome_columns: Sequence[str] = (),
    random_state: int = 0,
) -> tuple[Dataset, Holdout]:
    """Split ``dataset`` into training rows (with roles set) and a sealed holdout.

    Time column: the latest rows are the holdout. Group column: whole groups. Otherwise stratified
    (random for regression), with near-duplicate rows kept on one side. Post-outcome columns are
    blanked in the holdout, as they would be at prediction time.
    """
    fraction = _checked(dataset, time_column, group_column, holdout_fraction,
                        post_outcome_columns)
    n = dataset.n_rows
    n_holdout = math.ceil(fraction * n)
    if n - n_holdout < 2 or n_holdout < 1:
        raise UserInputError(f"{n} rows is too few to seal a {fraction:.0%} holdout")
    clusters = None
    if time_column:
        times = parse_time(dataset.frame[time_column], time_column)
        order = np.argsort(times.fillna(times.min()).to_numpy(), kind="stable")
        train_rows, hold_rows, scheme = order[: n - n_holdout], order[n - n_holdout:], "time"
    elif group_column:
        train_rows, hold_rows = _by_group(dataset, group_column, fraction, random_state)
        scheme = "group"
    else:
        train_rows, hold_rows, scheme, clusters = _by_rows(dataset, fraction, n_holdout,
                                                           random_state)
    train_rows, hold_rows = np.sort(train_rows), np.sort(hold_rows)

    train = dataset.take(train_rows).with_roles(
        time_column=time_column, group_column=group_column,
        cv_groups=clusters[train_rows] if clusters is not None else None)
    held = dataset.take(hold_rows)
    if post_outcome_columns:
        frame = held.frame.copy()
        for column in post_outcome_columns:
            frame[column] = np.nan
        held = dataclasses.replace(held, frame=frame)
    return train, Holdout(held, scheme, float(fraction), tuple(post_outcome_columns),
                          rows=hold_rows, training_rows=train_rows)


def parse_time(series: pd.Series, column: str) -> pd.Series:
    if pd.api.types.is_datetime64_any_dtype(series):
        return series.astype("int64").astype(float).where(series.notna())
    if pd.api.types.is_numeric_dtype(series):
        return series.astype(float)
    text = series.astype("object")
    present = text.notna() & (text.astype(str).str.strip() != "")
    parsed = pd.to_datetime(text.where(present), errors="coerce", format="mixed")
    bad = present & parsed.isna()
    if bad.any():
        example = text[bad].iloc[0]
        raise UserInputError(f"time column {column!r} does not parse as dates: {int(bad.sum())} "
                             f"value(s) like {example!r}. Use ISO dates such as 2024-01-31")
    return (parsed - pd.Timestamp("1970-01-01")).dt.total_seconds()


def check_holdout_fraction(fraction: float) -> None:
    """The share of rows sealed as the holdout: in (0, 0.5]."""
    if isinstance(fraction, bool) or not (isinstance(fraction, (int, float))
                                           and 0 < fraction <= 0.5):
        raise UserInputError(f"holdout fraction must be in (0, 0.5], got {fraction!r}")


def _checked(dataset: Dataset, time_column: str | None, group_column: str | None,
             holdout_fraction: float | None, post_outcome_columns: Sequence[str]) -> float:
    """The split's options checked against the data; the holdout fraction resolved."""
    for role, column in (("time", time_column), ("group", group_column)):
        if column is not None and column not in dataset.frame.columns:
            raise UserInputError(f"unknown {role} column {column!r}. Columns: "
                                 f"{', '.join(dataset.X.columns)}")
        if column is not None and column == dataset.target:
            raise UserInputError(f"the {role} column cannot be the target {column!r}")
    if dataset.target in post_outcome_columns:
        raise UserInputError(f"{dataset.target!r} is the target, not a post-outcome column: "
                             "the holdout's target is always sealed. Post-outcome columns are "
                             "features known only after the outcome")
    inputs = [c for c in dataset.frame.columns if c != dataset.target]
    unknown = [c for c in post_outcome_columns if c not in inputs]
    if unknown:
        raise UserInputError(f"unknown post-outcome column(s) {', '.join(map(repr, unknown))}. "
                             f"Columns: {', '.join(dataset.X.columns)}")
    fraction = holdout_fraction
    if fraction is None:
        fraction = GROUP_FRACTION if group_column else DEFAULT_FRACTION
    check_holdout_fraction(fraction)
    if is_classification(dataset.task):
        counts = dataset.y.value_counts()
        if counts.min() < 2:
            rare = counts[counts < 2]
            raise UserInputError(
                f"class{'es' if len(rare) > 1 else ''} "
                f"{', '.join(repr(c) for c in rare.index[:5])} of target {dataset.target!r} "
                f"{'have' if len(rare) > 1 else 'has'} a single row: a class needs rows to "
                "learn from and rows to score on the holdout. Drop or merge those rows")
    return fraction


def _by_group(dataset: Dataset, group_column: str, fraction: float,
              random_state: int) -> tuple[np.ndarray, np.ndarray]:
    """Whole groups held out."""
    groups = dataset.frame[group_column].astype(str).to_numpy()
    n_groups = len(np.unique(groups))
    if n_groups < MIN_GROUPS:
        raise UserInputError(f"group column {group_column!r} has {n_groups} groups; at least "
                             f"{MIN_GROUPS} are needed to hold whole groups out")
    splitter = GroupShuffleSplit(n_splits=1, test_size=fraction, random_state=random_state)
    return next(splitter.split(dataset.X, dataset.y, groups))


def _by_rows(dataset: Dataset, fraction: float, n_holdout: int, random_state: int,
             ) -> tuple[np.ndarray, np.ndarray, str, np.ndarray | None]:
    """Rows held out, stratified (random for regression); near-duplicate rows kept on one side
    when they are common (then the clusters are returned, for the CV folds too)."""
    clusters = near_duplicate_clusters(dataset)
    if duplicate_share(clusters) >= DUPLICATE_SHARE_WARNING:
        splitter = GroupShuffleSplit(n_splits=1, test_size=fraction, random_state=random_state)
        train_rows, hold_rows = next(splitter.split(dataset.X, dataset.y, clusters))
        return train_rows, hold_rows, "near-duplicate clusters", clusters
    stratify = dataset.y if is_classification(dataset.task) else None
    rows = np.arange(dataset.n_rows)
    try:
        train_rows, hold_rows = train_test_split(rows, test_size=n_holdout,
                                                 random_state=random_state, stratify=stratify)
    except ValueError:  # a class too small to stratify
        train_rows, hold_rows = train_test_split(rows, test_size=n_holdout,
                                                 random_state=random_state)
    return train_rows, hold_rows, "stratified" if stratify is not None else "random", None
