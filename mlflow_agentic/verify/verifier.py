"""The deterministic verifier: plain arithmetic decides whether a score counts. No I/O, no LLM."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mlflow_agentic.core.types import Verdict
from mlflow_agentic.verify.leakage import check_too_good

DEFAULT_MARGIN = 0.01

Scorer = tuple[str, Mapping[str, Any]]
"""A model behind a score: its trainer's name and the params it scored with."""


class DeterministicVerifier:
    """Valid only if the score is finite, not too good to be true, and beats the trivial
    baseline by ``margin``.

    For bounded metrics (AUC, accuracy, F1, R2) the margin is absolute; for unbounded ones (RMSE,
    MAE, log loss) it is relative to the baseline, so it means the same at any scale.

    ``earned``: asked at a score too good to be true, once per set of trainers behind it
    (``by``), whether such a score is earned on this data without a leak
    (``engine.search.near_perfect``: the reason, or None). Some tasks are that easy
    (handwritten digits: ROC AUC 0.999 from 64 pixels); a leak is a column, and a model without
    the columns that could be one tells the two apart. Without ``earned`` every such score is
    quarantined.
    """

    def __init__(self, margin: float = DEFAULT_MARGIN,
                 earned: Callable[[Sequence[Scorer]], str | None] | None = None) -> None:
        if not (0 <= margin < 1):
            raise ValueError(f"margin must be in [0, 1), got {margin!r}")
        self.margin = margin
        self._earned = earned
        self._reasons: dict[tuple[str, ...], str | None] = {}

    def earned_reason(self, by: Sequence[Scorer] = ()) -> str | None:
        """Why a near-perfect score of ``by`` counts here (None: it is quarantined); asked once
        per set of trainers."""
        if self._earned is None:
            return None
        key = tuple(sorted({trainer for trainer, _ in by}))
        if key not in self._reasons:
            self._reasons[key] = self._earned(by)
        return self._reasons[key]

    def threshold(self, baseline: float, *, greater_is_better: bool, bounded: bool) -> float:
        """The score a candidate must strictly beat."""
        step = self.margin if bounded else self.margin * abs(baseline)
        return baseline + step if greater_is_better else baseline - step

    def verify(self, score: float, baseline: float, *, greater_is_better: bool = True,
               bounded: bool = True, metric: str | None = None,
               by: Sequence[Scorer] = ()) -> Verdict:
        """The verdict on ``score``; ``by``: the models behind it, asked about when the score
        is near-perfect."""
        if score is None or not math.isfinite(score):
            return Verdict(False, f"score is not finite ({score})", float("nan"))
        earned = ""
        if metric is not None:
            finding = check_too_good(metric, score, baseline)
            if finding is not None:
                reason = self.earned_reason(by)
                if reason is None:
                    return Verdict(False, f"quarantined: {finding.message}", score,
                                   quarantined=True)
                earned = f"; near-perfect and earned: {reason}"
        bar = self.threshold(baseline, greater_is_better=greater_is_better, bounded=bounded)
        beats = score > bar if greater_is_better else score < bar
        if not beats:
            cmp = "<=" if greater_is_better else ">="
            sign = "+" if greater_is_better else "-"
            kind = "" if bounded else f"{self.margin:.0%} of "
            return Verdict(False, f"does not beat the trivial baseline ({score:.4f} {cmp} "
                           f"{baseline:.4f} {sign} margin {kind}{abs(bar - baseline):.4f})",
                           score)
        cmp = ">" if greater_is_better else "<"
        sign = "+" if greater_is_better else "-"
        kind = "" if bounded else f"{self.margin:.0%} of "
        return Verdict(True, f"beats the trivial baseline ({score:.4f} {cmp} {baseline:.4f} "
                       f"{sign} margin {kind}{abs(bar - baseline):.4f}){earned}", score)
