"""The ColumnTransformer in front of every model, chosen by the model's needs.

Styles: ``scaled`` (impute, scale, one-hot: linear models), ``ordinal`` (impute, ordinal codes:
bagged trees), ``native`` (keep NaN, ordinal codes: boosting libraries that handle missing values).
A categorical column with more levels than the style encodes as levels (``ONE_HOT_MAX_CATEGORIES``
one-hot columns, ``NATIVE_MAX_LEVELS`` categories a booster splits on) is target encoded instead,
cross-fitted on the training rows (sklearn's ``TargetEncoder``), so no row's own label feeds its
encoding. The transformer is built unfitted, so each CV fold fits its own preprocessing (no
leakage).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import (
    FunctionTransformer,
    OneHotEncoder,
    OrdinalEncoder,
    StandardScaler,
    TargetEncoder,
)

from mlflow_agentic.trainers import transforms as tf

if TYPE_CHECKING:
    from mlflow_agentic.core.dataset_like import DatasetLike

STYLES = ("scaled", "ordinal", "native")
ONE_HOT_MAX_CATEGORIES = 20
NATIVE_MAX_LEVELS = 254
"""Categorical columns up to this many levels are split on as categories by the boosters that
can (histogram gradient boosting allows fewer than its 255 bins); above it, target encoded."""


DEFAULT_BINS = 255
"""LightGBM's and XGBoost's histogram bins per numeric column unless told otherwise."""
CODE_MIN_ROWS_PER_VALUE = 5
MAX_VALUE_BINS = 4095


def value_bins(dataset: DatasetLike) -> int | None:
    """Histogram bins for the boosters that take more than ``DEFAULT_BINS`` (LightGBM, XGBoost):
    one per value of the whole-number feature column with the most values, when it has more
    than ``DEFAULT_BINS`` and each value recurs (``CODE_MIN_ROWS_PER_VALUE`` rows or more on
    average), up to ``MAX_VALUE_BINS``.

    Such a column is usually a code (a school, a lecturer, a postcode) whose values each carry an
    effect of their own, which quantile bins would merge with their neighbours'. ``None``: no
    such column, the library's default binning. Computed per model built (about 2 ms on a
    million-row code column)."""
    most = 0
    for name in dataset.columns_of("numeric"):
        info = dataset.columns[name]
        if (info.n_unique <= DEFAULT_BINS
                or dataset.n_rows < CODE_MIN_ROWS_PER_VALUE * info.n_unique):
            continue
        values = tf.to_numeric_frame(dataset.frame[[name]]).iloc[:, 0].dropna().to_numpy()
        if values.size and np.all(values == np.round(values)):
            most = max(most, info.n_unique)
    return min(MAX_VALUE_BINS, most + 1) if most else None


def category_columns(dataset: DatasetLike, style: str) -> list[int]:
    """Output positions of the ``build_preprocessor(dataset, style)`` columns that are category
    codes a booster may split on as categories (``native`` style: numeric columns come first,
    one each, then the categorical ones in order)."""
    if style != "native":
        return []
    first = len(dataset.columns_of("numeric"))
    return list(range(first, first + len(levelled(dataset, style)[0])))


def levelled(dataset: DatasetLike, style: str) -> tuple[list[str], list[str]]:
    """The categorical columns the style encodes as levels, and those with more levels than
    it can take (target encoded)."""
    limit = ONE_HOT_MAX_CATEGORIES if style == "scaled" else NATIVE_MAX_LEVELS
    categorical = dataset.columns_of("categorical")
    many = [c for c in categorical if dataset.columns[c].n_unique > limit]
    return [c for c in categorical if c not in many], many


def build_preprocessor(dataset: DatasetLike, style: str = "ordinal") -> ColumnTransformer:
    """Preprocessing for the dataset's feature columns; ID and constant columns are dropped."""
    if style not in STYLES:
        raise ValueError(f"unknown preprocessing style {style!r}; valid: {', '.join(STYLES)}")
    numeric = dataset.columns_of("numeric")
    categorical, many = levelled(dataset, style)
    dates = dataset.columns_of("datetime")

    def numbers(*steps: tuple[str, Any]) -> Pipeline:
        first = ("to_number", FunctionTransformer(tf.to_numeric_frame,
                                                  feature_names_out="one-to-one"))
        return Pipeline([first, *steps])

    num_steps = []
    if style != "native":
        num_steps.append(("impute", tf.MedianImputer()))
    if style == "scaled":
        num_steps.append(("scale", StandardScaler()))

    if style == "scaled":
        encoder = OneHotEncoder(handle_unknown="infrequent_if_exist",
                                max_categories=ONE_HOT_MAX_CATEGORIES, sparse_output=False)
    else:
        encoder = OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1,
                                 encoded_missing_value=-1)
    as_text = ("as_text", FunctionTransformer(tf.to_category_text, feature_names_out="one-to-one"))
    cat = Pipeline([as_text, ("encode", encoder)])
    target_encoded = Pipeline([as_text, ("encode", target_encoder(dataset.task)),
                               *([("scale", StandardScaler())] if style == "scaled" else [])])
    dayfirst = [c for c in dates if dataset.columns[c].dayfirst]
    date_steps = [("features", FunctionTransformer(tf.to_datetime_features,
                                                   kw_args={"dayfirst": dayfirst},
                                                   feature_names_out=tf.datetime_feature_names))]
    date_steps += num_steps

    parts = []
    if numeric:
        parts.append(("numeric", numbers(*num_steps), numeric))
    if categorical:
        parts.append(("categorical", cat, categorical))
    if dates:
        parts.append(("datetime", Pipeline(date_steps), dates))
    if many:  # after the levelled ones: ``category_columns`` counts on their positions
        parts.append(("many_levels", target_encoded, many))
    return ColumnTransformer(parts, remainder="drop", verbose_feature_names_out=False)


def target_encoder(task: str) -> TargetEncoder:
    """Each level's smoothed mean target (per class for multiclass), cross-fitted: the
    training rows get encodings learnt on the other folds of the training rows (seeded)."""
    from sklearn.model_selection import KFold, StratifiedKFold

    kind = {"regression": "continuous"}.get(task, task)
    if TargetEncoder().shuffle != "deprecated":  # scikit-learn < 1.9: an int cv only
        return TargetEncoder(target_type=kind, shuffle=True, random_state=0)
    folds = KFold if kind == "continuous" else StratifiedKFold
    return TargetEncoder(target_type=kind, cv=folds(5, shuffle=True, random_state=0))
