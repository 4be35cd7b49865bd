"""The deterministic verifier: plain arithmetic decides whether a score counts. No I/O, no LLM."""

from __future__ import annotations

import math

from mlflow_agentic.core.types import Verdict
from mlflow_agentic.verify.leakage import check_too_good

DEFAULT_MARGIN = 0.01


class DeterministicVerifier:
    """Valid only if the score is finite, not too good to be true, and beats the trivial
    baseline by ``margin``.

    For bounded metrics (AUC, accuracy, F1, R2) the margin is absolute; for unbounded ones (RMSE,
    MAE, log loss) it is relative to the baseline, so it means the same at any scale.
    """

    def __init__(self, margin: float = DEFAULT_MARGIN) -> None:
        if not (0 <= margin < 1):
            raise ValueError(f"margin must be in [0, 1), got {margin!r}")
        self.margin = margin

    def threshold(self, baseline: float, *, greater_is_better: bool, bounded: bool) -> float:
        """The score a candidate must strictly beat."""
        step = self.margin if bounded else self.margin * abs(baseline)
        return baseline + step if greater_is_better else baseline - step

    def verify(self, score: float, baseline: float, *, greater_is_better: bool = True,
               bounded: bool = True, metric: str | None = None) -> Verdict:
        if score is None or not math.isfinite(score):
            return Verdict(False, f"score is not finite ({score})", float("nan"))
        if metric is not None:
            finding = check_too_good(metric, score, baseline)
            if finding is not None:
                return Verdict(False, f"quarantined: {finding.message}", score, quarantined=True)
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
                       f"{sign} margin {kind}{abs(bar - baseline):.4f})", score)
