"""The leaderboard of a search: every attempt best first, rounded, as ``leaderboard.csv`` and
as an MLflow table (``leaderboard.json``) with a link to each attempt's run."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pandas as pd

from mlflow_agentic.core import evidence as ev
from mlflow_agentic.core.types import AttemptRecord, EngineeringRun

DECIMALS = 4


def leaderboard_frame(rec, run: EngineeringRun, report=None) -> pd.DataFrame:
    m = run.metric
    best = run.best_attempt
    rows = []
    for rank, a in enumerate(run.leaderboard(), start=1):
        run_id = rec.child_run_ids.get(a.index, "")
        rows.append({
            "rank": rank, "attempt": a.index, "run_name": f"{a.index:02d}-{a.candidate.title}",
            "trainer": a.candidate.trainer, "status": a.status,
            "selected": best is not None and a.index == best.index,
            "tie": run.tied(a), "phase": a.phase,
            ev.cv(m): None if a.failed else a.score,
            f"{ev.cv(m)}_std": None if a.failed else a.score_std,
            **_holdout_columns(m, a, report),
            "fit_seconds": round(a.fit_seconds, 2), "reason": a.verdict.reason,
            "params": json.dumps(dict(a.params), default=str),
            "rationale": a.candidate.rationale, "run_id": run_id,
            "run_link": rec.run_link(run_id) if run_id else ""})
    return pd.DataFrame(rows).round(DECIMALS)


def log_leaderboard(rec, run: EngineeringRun, report=None) -> None:
    frame = leaderboard_frame(rec, run, report)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "leaderboard.csv"
        frame.to_csv(path, index=False)
        summary = Path(tmp) / "summary.txt"
        summary.write_text(run.summary() + f"\nstopped: {run.stop_reason}\n")
        rec.client.log_artifact(rec.parent_run_id, str(path))
        rec.client.log_artifact(rec.parent_run_id, str(summary))
    if len(frame):
        rec.client.log_table(rec.parent_run_id, frame, "leaderboard.json")


def _holdout_columns(metric: str, attempt: AttemptRecord, report) -> dict:
    if report is None:
        return {}
    score = report.scores.get(attempt.index)
    if score is None or score.error is not None:
        return {ev.holdout(metric): None, ev.GAP: None}
    return {ev.holdout(metric): score.holdout, ev.GAP: score.gap}
