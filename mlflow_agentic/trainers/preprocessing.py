"""The ColumnTransformer in front of every model, chosen by the model's needs.

Styles: ``scaled`` (impute, scale, one-hot: linear models), ``ordinal`` (impute, ordinal codes:
bagged trees), ``native`` (keep NaN, ordinal codes: boosting libraries that handle missing values).
The transformer is built unfitted, so each CV fold fits its own preprocessing (no leakage).
"""

from __future__ import annotations

from sklearn.compose import ColumnTransformer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import (
    FunctionTransformer,
    OneHotEncoder,
    OrdinalEncoder,
    StandardScaler,
)

from mlflow_agentic.trainers import transforms as tf

STYLES = ("scaled", "ordinal", "native")
ONE_HOT_MAX_CATEGORIES = 20
NATIVE_MAX_LEVELS = 254
"""Categorical columns up to this many levels are split on as categories by the boosters that
can (histogram gradient boosting allows fewer than its 255 bins); above it, as ordinal codes."""


def category_columns(dataset, style: str) -> list[int]:
    """Output positions of the ``build_preprocessor(dataset, style)`` columns that are category
    codes a booster may split on as categories (``native`` style: numeric columns come first,
    one each, then the categorical ones in order)."""
    if style != "native":
        return []
    first = len(dataset.columns_of("numeric"))
    return [first + i for i, column in enumerate(dataset.columns_of("categorical"))
            if dataset.columns[column].n_unique <= NATIVE_MAX_LEVELS]


def build_preprocessor(dataset, style: str = "ordinal") -> ColumnTransformer:
    """Preprocessing for the dataset's feature columns; ID and constant columns are dropped."""
    if style not in STYLES:
        raise ValueError(f"unknown preprocessing style {style!r}; valid: {', '.join(STYLES)}")
    numeric = dataset.columns_of("numeric")
    categorical = dataset.columns_of("categorical")
    dates = dataset.columns_of("datetime")

    def numbers(*steps):
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
    cat = Pipeline([("as_text", FunctionTransformer(tf.to_category_text,
                                                    feature_names_out="one-to-one")),
                    ("encode", encoder)])
    date_steps = [("features", FunctionTransformer(tf.to_datetime_features,
                                                   feature_names_out=tf.datetime_feature_names))]
    date_steps += num_steps

    parts = []
    if numeric:
        parts.append(("numeric", numbers(*num_steps), numeric))
    if categorical:
        parts.append(("categorical", cat, categorical))
    if dates:
        parts.append(("datetime", Pipeline(date_steps), dates))
    return ColumnTransformer(parts, remainder="drop", verbose_feature_names_out=False)
