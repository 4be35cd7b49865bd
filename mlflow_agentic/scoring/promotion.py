"""The promotion gate's decision, from evidence and scores only (no MLflow here).

A challenger becomes champion only if its own evidence holds (verified by its search, not
quarantined, CV-minus-holdout gap within a threshold), it beats the trivial baseline on the
evaluation data, and it beats the current champion on that same data.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from mlflow_agentic import evidence as ev
from mlflow_agentic.errors import UserInputError
from mlflow_agentic.metrics import METRICS
from mlflow_agentic.scoring.holdout import gap_limit

DEFAULT_MAX_GAP = 0.05
"""Same threshold as ``self_deceived``: absolute for bounded metrics, relative otherwise."""


@dataclass
class Decision:
    promoted: bool
    reasons: list[str] = field(default_factory=list)
    metric: str = ""
    challenger_score: float = math.nan
    champion_score: float | None = None

    @property
    def summary(self) -> str:
        verb = "promoted" if self.promoted else "refused"
        return f"{verb}: " + "; ".join(self.reasons)


def evidence_problems(tags: Mapping[str, str], max_gap: float = DEFAULT_MAX_GAP) -> list[str]:
    """Why a version's recorded evidence does not hold (empty when it does)."""
    check_max_gap(max_gap)
    status = tags.get(ev.VERDICT_STATUS)
    if status is None:
        return ["no verification evidence: this version was not registered by a verified "
                "mlflow-agentic search (no verdict.status tag)"]
    problems = []
    if status == "quarantined" or tags.get(ev.QUARANTINED) == "true":
        problems.append("quarantined: its score was flagged as too good to be true")
    elif status != "verified":
        problems.append(f"not verified by its search (verdict.status={status})")
    metric = tags.get(ev.METRIC, "")
    gap = _float(tags.get(ev.GAP))
    if gap is None:
        problems.append("no holdout evidence (no gap tag): the CV score was never checked on "
                        "sealed rows")
    else:
        limit = gap_limit(metric, _float(tags.get(ev.cv(metric))) or 0.0, max_gap)
        if gap > limit:
            problems.append(f"gap {gap:+.4f} exceeds {limit:.4f}: cross-validation flattered "
                            "it on its own holdout")
    return problems


def check_max_gap(max_gap: float) -> None:
    """A NaN or negative threshold would make every comparison false: refuse it."""
    if not (isinstance(max_gap, (int, float)) and math.isfinite(max_gap) and max_gap >= 0):
        raise UserInputError(f"{max_gap!r}: expected a finite number >= 0, e.g. 0.05")


def decide(tags: Mapping[str, str], *, metric: str, challenger_score: float,
           challenger_beats_baseline: bool, baseline_reason: str,
           champion_score: float | None, max_gap: float = DEFAULT_MAX_GAP) -> Decision:
    reasons = evidence_problems(tags, max_gap)
    if not challenger_beats_baseline:
        reasons.append(f"on the evaluation data it {baseline_reason}")
    m = METRICS[metric]
    if champion_score is not None and not m.better(challenger_score, champion_score):
        cmp = "<=" if m.greater_is_better else ">="
        reasons.append(f"does not beat the champion on the evaluation data ({metric} "
                       f"{challenger_score:.4f} {cmp} {champion_score:.4f})")
    if reasons:
        return Decision(False, reasons, metric, challenger_score, champion_score)
    why = (f"beats the champion ({metric} {challenger_score:.4f} vs {champion_score:.4f})"
           if champion_score is not None else
           f"no current champion; {metric} {challenger_score:.4f} on the evaluation data")
    return Decision(True, ["evidence holds (verified, not quarantined, gap within "
                           f"{max_gap:g})", why], metric, challenger_score, champion_score)


def _float(value) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None
