"""The label a classifier's output means: the most probable class. One function, so the labels a
search scores, the ones its tables show and the ones its served models answer are the same."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def labels_of(output: Any, classes: Sequence[Any]) -> np.ndarray:
    """Per row of ``output`` (probabilities, one column per class in ``classes``' order) the
    most probable class, as an object array holding ``classes``' own values (a class ``1``
    stays the integer 1 beside a class ``"a"``; NumPy would make both text). Ties go to the
    first class."""
    labels: np.ndarray = np.asarray(list(classes), dtype=object)[
        np.argmax(np.asarray(output), axis=1)]
    return labels
