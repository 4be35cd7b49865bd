"""What the LLM is told: aggregates and column names only, never rows or cell values."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from mlflow_agentic.core.types import is_classification

if TYPE_CHECKING:
    from mlflow_agentic.core.observer import SearchContext

TOP_HISTORY = 8

SYSTEM = (
    "You are an AutoML assistant. Propose ONE candidate model for a tabular task as a JSON "
    'object {"trainer": str, "params": object, "rationale": str, "expected_score": number}. '
    "Use only the listed trainers and parameters, inside their ranges. Prefer changes the "
    "history suggests will improve the cross-validated score. Answer with JSON only."
)


def build_messages(context: SearchContext, history: Sequence,
                   trainers: Sequence[str]) -> list[dict]:
    from mlflow_agentic.trainers.registry import get_trainer

    dataset = context.dataset
    spaces = {t: {k: spec.describe() for k, spec in get_trainer(t).space(dataset).items()}
              for t in trainers}
    facts = {**task_facts(context), "trainers": spaces}
    ranked = sorted(history, key=lambda a: (not a.verdict.valid, -a.utility, a.index))
    past = [{"trainer": a.candidate.trainer, "params": dict(a.params),
             "cv_score": None if a.failed else round(a.score, 4), "verdict": a.verdict.reason}
            for a in ranked[:TOP_HISTORY]]
    user = ("Task facts:\n" + json.dumps(facts, default=str) + "\n\nBest attempts so far "
            "(best first):\n" + json.dumps(past, default=str) + "\n\nPropose the next candidate.")
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def task_facts(context: SearchContext) -> dict:
    """The task as every prompt states it: aggregates and column names, no cell value."""
    dataset, metric = context.dataset, context.metric
    brief = context.briefing
    return {
        "task": dataset.task,
        "metric": metric.name,
        "direction": metric.direction,
        "trivial_baseline": round(context.baseline_score, 4),
        "cv_folds": context.n_splits,
        "rows": dataset.n_rows,
        "columns": {c: {"kind": i.kind, "missing_rate": round(i.missing_rate, 3),
                        "distinct": i.n_unique} for c, i in dataset.columns.items()},
        # class shares without the labels: labels are cell values
        "class_shares": sorted((round(float(v), 3) for v in
                                dataset.y.value_counts(normalize=True)), reverse=True)
        if is_classification(dataset.task) else None,
        "leakage_findings": [f"{f.severity}: {f.check}" + (f" on {f.column!r}" if f.column
                             else "") for f in brief.findings] if brief is not None else [],
        "excluded_columns": sorted(dataset.excluded_columns),
    }
