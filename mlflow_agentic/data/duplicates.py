"""Near-duplicate rows: rows equal on every feature (numbers within 1% of a std) form a cluster.

Used by the sealed split (a cluster stays on one side) and by the leakage checks (how many
rows straddle the CV folds). Plain arithmetic on the table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from mlflow_agentic.data.dataset import Dataset

DUPLICATE_SHARE_WARNING = 0.15
"""From this share of rows in clusters, the split keeps clusters whole (and the check warns)."""
DUPLICATE_QUANTUM = 0.01


def numeric_view(dataset: Dataset, column: str) -> np.ndarray:
    """A column as numbers: numeric (text coerced), datetime as days, categorical as codes."""
    from mlflow_agentic.trainers.transforms import to_datetime_features, to_numeric_frame

    kind = dataset.columns[column].kind
    values = dataset.frame[column]
    if (kind != "datetime" and pd.api.types.is_numeric_dtype(values)
            and not pd.api.types.is_bool_dtype(values)):  # typed when read: no parsing (wide data)
        x = values.to_numpy(dtype=float, na_value=np.nan)
        return np.where(np.isinf(x), np.nan, x)
    series = dataset.frame[[column]]
    if kind == "datetime":
        return to_datetime_features(series).iloc[:, 0].to_numpy(dtype=float)
    return to_numeric_frame(series).iloc[:, 0].to_numpy(dtype=float)


def near_duplicate_clusters(dataset: Dataset) -> np.ndarray:
    """Cluster id per row: rows equal on every feature (numbers within 1% of a std) share one."""
    parts = {}
    for column in dataset.feature_columns:
        if dataset.columns[column].kind == "categorical":
            parts[column] = dataset.frame[column].astype(str).to_numpy()
        else:
            x = numeric_view(dataset, column)
            std = np.nanstd(x) or 1.0
            parts[column] = np.where(np.isnan(x), -1e18, np.round(x / (DUPLICATE_QUANTUM * std)))
    frame = pd.DataFrame(parts)
    return pd.factorize(pd.util.hash_pandas_object(frame, index=False))[0]


def duplicate_share(clusters: np.ndarray) -> float:
    sizes = np.bincount(clusters)
    return float(sizes[clusters].__gt__(1).mean()) if len(clusters) else 0.0
