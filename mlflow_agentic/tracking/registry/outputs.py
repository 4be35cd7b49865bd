"""What a loaded model answers for rows: labels, or probabilities and their classes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd


def model_outputs(model: Any, features: pd.DataFrame,
                  model_type: str) -> tuple[np.ndarray | None, np.ndarray | None, tuple]:
    """``(y_pred, proba, classes)``: probabilities from the raw model when it has
    ``predict_proba`` (sklearn and friends, or our ``ServedModel`` pyfunc), else the pyfunc's
    predictions."""
    raw = None
    if model_type == "classifier":
        for unwrap in ("get_raw_model", "unwrap_python_model"):
            try:
                raw = getattr(model, unwrap)()
                break
            except Exception:  # not every flavor exposes its model
                raw = None
    if raw is not None and hasattr(raw, "predict_proba") and hasattr(raw, "classes_"):
        return None, np.asarray(raw.predict_proba(features)), tuple(raw.classes_)
    predicted = model.predict(features)
    if isinstance(predicted, pd.DataFrame):
        predicted = predicted.iloc[:, 0]
    return np.asarray(predicted).ravel(), None, ()
