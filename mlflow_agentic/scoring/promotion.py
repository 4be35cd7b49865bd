"""The promotion gate's decision, from evidence and scores only (no MLflow here).

A challenger becomes champion only if its own evidence holds (verified by its search, not
quarantined, CV-minus-holdout gap within a threshold), it beats the trivial baseline on the
evaluation data, and it beats the current champion on that same data beyond the noise of its
rows (a paired bootstrap: ``scoring.paired``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mlflow_agentic.core import evidence as ev
from mlflow_agentic.core.errors import UserInputError
from mlflow_agentic.core.metrics import METRICS
from mlflow_agentic.scoring.holdout import gap_limit
from mlflow_agentic.scoring.paired import PairedComparison

DEFAULT_MAX_GAP = 0.05
"""Same threshold as ``self_deceived``: absolute for bounded metrics, relative otherwise."""


@dataclass
class Decision:
    promoted: bool
    reasons: list[str] = field(default_factory=list)
    metric: str = ""
    challenger_score: float = math.nan
    champion_score: float | None = None
    comparison: PairedComparison | None = None

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
           champion_score: float | None, max_gap: float = DEFAULT_MAX_GAP,
           comparison: PairedComparison | None = None, min_improvement: float = 0.0,
           caveat: str = "") -> Decision:
    """Promote only when the evidence holds, the challenger beats the trivial baseline, and
    (with a champion) it beats the champion beyond the noise of the evaluation rows: the
    paired ``comparison``'s pessimistic bound clears ``min_improvement``. A tie keeps the
    champion."""
    check_min_improvement(min_improvement)
    reasons = evidence_problems(tags, max_gap)
    if not challenger_beats_baseline:
        reasons.append(f"on the evaluation data it {baseline_reason}")
    notes = [caveat] if caveat else []
    if champion_score is not None:
        versus = f"{metric} {challenger_score:.4f} vs champion {champion_score:.4f}"
        if comparison is None:
            if not METRICS[metric].better(challenger_score, champion_score):
                reasons.append(f"does not beat the champion on the evaluation data ({versus})")
        elif not comparison.beyond(min_improvement):
            what = ("a tie within the noise" if comparison.improvement > min_improvement
                    else "not better")
            reasons.append(f"{what}: {versus}; {comparison.describe()}; the pessimistic 5% "
                           f"bound {comparison.lower_bound:+.4f} does not clear the minimum "
                           f"improvement {min_improvement:+.4f}, so the champion stays")
    if reasons:
        return Decision(False, reasons + notes, metric, challenger_score, champion_score,
                        comparison)
    if champion_score is None:
        why = f"no current champion; {metric} {challenger_score:.4f} on the evaluation data"
    else:
        why = (f"beats the champion beyond the noise ({metric} {challenger_score:.4f} vs "
               f"{champion_score:.4f}; "
               + (comparison.describe() if comparison is not None else "no paired test")
               + ")")
    return Decision(True, ["evidence holds (verified, not quarantined, gap within "
                           f"{max_gap:g})", why] + notes, metric, challenger_score,
                    champion_score, comparison)


def check_min_improvement(value: float) -> None:
    if not (isinstance(value, (int, float)) and math.isfinite(value)):
        raise UserInputError(f"--min-improvement {value!r}: expected a finite number in the "
                             "metric's units, e.g. 0 (better beyond the noise) or 0.005")


def _float(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None
