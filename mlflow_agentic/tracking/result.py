"""Recording a finished search: holdout scores and rows, the leaderboard, the LLM recording,
then the model logged and (with holdout evidence) registered, then the search run ended.

One step, after the loop and the holdout scoring, on the run an ``AttemptRecorder`` opened.
Registration comes last, with all the evidence, so nothing half-written is registered.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlflow_agentic import evidence as ev
from mlflow_agentic.engine.types import AttemptRecord, EngineeringRun
from mlflow_agentic.tracking import models
from mlflow_agentic.trainers.registry import model_requirements


@dataclass
class Registration:
    """What became of the model: logged (``model_uri``), registered (``model_version``)."""

    model_uri: str | None = None
    model_version: Any = None
    alias_note: str = ""


def record_result(rec, run: EngineeringRun, report=None, holdout=None, *, register: bool = True,
                  register_name: str | None = None, alias: str = models.DEFAULT_ALIAS,
                  log_model: bool = True) -> Registration:
    """Record ``run`` (and its holdout ``report`` and sealed ``holdout`` rows) on the search
    run of ``rec`` (an ``AttemptRecorder``), log and register the model, end the run."""
    m, best = run.metric, run.best_attempt
    outcome = Registration()
    metrics: dict[str, float] = {}
    tags: dict[str, str] = {"status": "finished"}
    note = [f"### {run.summary()}", "", f"Stopped: {run.stop_reason}."]
    if holdout is not None and log_model:  # after scoring: for the promotion gate
        _log_holdout_rows(rec, holdout)
    if report is not None:
        _log_holdout(rec, run, report)
        if report.selected is not None and report.selected.error is None:
            metrics[ev.holdout(m)] = report.selected.holdout
            metrics[ev.GAP] = report.selected.gap
            tags[ev.SELF_DECEIVED] = str(report.selected.self_deceived).lower()
            note.append(f"Selected model: CV {m} {report.selected.cv:.4f}, holdout "
                        f"{report.selected.holdout:.4f}, gap {report.selected.gap:+.4f}.")
        tags["holdout"] = f"{report.n_rows} rows, {report.scheme}, digest {report.digest}"
    _write_leaderboard(rec, run, report)
    if rec.llm_exchanges:
        metrics.update(_llm_totals(rec.llm_exchanges))
        _write_llm_exchanges(rec)
    dataset = rec.context.dataset
    if run.model is not None and not log_model:
        note.append("Model not logged (a comparison run: evidence about the proposer).")
    elif run.model is not None and register and report is not None:
        outcome = _log_and_register(rec, run, best, report, register_name, alias)
        version = outcome.model_version
        note.append(f"Registered `{version.name}` version {version.version}: "
                    f"{outcome.alias_note}.")
        tags.update({"registered_model": version.name,
                     "registered_version": str(version.version)})
    elif run.model is not None:
        info = rec.call("logging the model", models.log_model, run.model, dataset,
                        model_requirements(best))
        outcome.model_uri = info.model_uri
        note.append("Model logged, not registered (registration disabled)." if not register
                    else "Model logged, not registered: no sealed-holdout evidence (a bare "
                    "engine loop); mlflow_agentic.search() seals a holdout first and registers.")
    else:
        tags["registered_model"] = "none"
        note.append("Nothing verified: no model was logged or registered.")
    tags["mlflow.note.content"] = "\n".join(note)
    rec.log(rec.parent_run_id, metrics, {}, tags)
    rec.end("FINISHED")
    return outcome


def _log_and_register(rec, run: EngineeringRun, best: AttemptRecord, report,
                      register_name: str | None, alias: str) -> Registration:
    ctx = rec.context
    info = rec.call("logging the model", models.log_model, run.model, ctx.dataset,
                    model_requirements(best))
    name = register_name or f"{ctx.dataset.name}-agentic"
    m = run.metric
    tags = {
        ev.METRIC: m, ev.cv(m): f"{run.best_score:.6f}",
        ev.baseline(m): f"{run.baseline_score:.6f}",
        ev.VERDICT: best.verdict.reason, ev.TRAINER: best.candidate.trainer,
        ev.RUN_ID: rec.child_run_ids.get(best.index, ""), ev.SEARCH_RUN_ID: rec.parent_run_id,
        ev.PROPOSER: ctx.proposer_name, ev.DATASET: ctx.dataset.name,
        ev.CV_SCHEME: ctx.cv_scheme, ev.VERDICT_STATUS: best.status,
        ev.QUARANTINED: str(best.verdict.quarantined).lower(),
        ev.TARGET: ctx.dataset.target, ev.TASK: ctx.dataset.task,
    }
    if report.selected is not None and report.selected.error is None:
        tags.update({ev.holdout(m): f"{report.selected.holdout:.6f}",
                     ev.GAP: f"{report.selected.gap:.6f}",
                     ev.SELF_DECEIVED: str(report.selected.self_deceived).lower(),
                     ev.HOLDOUT_ROWS: str(report.n_rows), ev.HOLDOUT_DIGEST: report.digest})
    briefing = ctx.briefing
    if briefing is not None:
        tags[ev.EXCLUDED_COLUMNS] = ",".join(briefing.excluded) or "none"
        tags[ev.CRITICAL_FINDINGS] = str(len(briefing.critical))
    version, alias_note = rec.call(
        "registering the model", models.register, info.model_uri, name, tags, alias=alias,
        description=f"{run.summary()}\n\nSearch run {rec.parent_run_id}.")
    return Registration(info.model_uri, version, alias_note)


def _log_holdout(rec, run: EngineeringRun, report) -> None:
    from mlflow_agentic.scoring.plot import plot_cv_vs_holdout

    m = run.metric
    for index, score in report.scores.items():
        run_id = rec.child_run_ids.get(index)
        if run_id is None:
            continue
        if score.error is not None:
            rec.log(run_id, {}, {}, {"holdout_error": score.error})
            continue
        rec.log(run_id, {ev.holdout(m): score.holdout, ev.GAP: score.gap}, {},
                {ev.SELF_DECEIVED: str(score.self_deceived).lower()})
    with tempfile.TemporaryDirectory() as tmp:
        path = plot_cv_vs_holdout(report, run, Path(tmp) / "cv_vs_holdout.png")
        rec.client.log_artifact(rec.parent_run_id, str(path))


def _log_holdout_rows(rec, holdout) -> None:
    """The sealed rows as read (post-outcome columns blanked), for the promotion gate."""
    folder, name = ev.HOLDOUT_ARTIFACT.rsplit("/", 1)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        holdout.dataset.frame.to_csv(path, index=False)
        rec.client.log_artifact(rec.parent_run_id, str(path), folder)


def _write_leaderboard(rec, run: EngineeringRun, report=None) -> None:
    import pandas as pd

    rows = []
    for rank, a in enumerate(run.leaderboard(), start=1):
        rows.append({
            "rank": rank, "attempt": a.index, "run_id": rec.child_run_ids.get(a.index, ""),
            "trainer": a.candidate.trainer, "status": a.status, "phase": a.phase,
            f"cv_{run.metric}": None if a.failed else a.score,
            f"cv_{run.metric}_std": None if a.failed else a.score_std,
            **_holdout_columns(run.metric, a, report),
            "fit_seconds": round(a.fit_seconds, 3), "reason": a.verdict.reason,
            "params": json.dumps(dict(a.params), default=str), "rationale":
            a.candidate.rationale})
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "leaderboard.csv"
        pd.DataFrame(rows).to_csv(path, index=False)
        summary = Path(tmp) / "summary.txt"
        summary.write_text(run.summary() + f"\nstopped: {run.stop_reason}\n")
        rec.client.log_artifact(rec.parent_run_id, str(path))
        rec.client.log_artifact(rec.parent_run_id, str(summary))


def _llm_totals(exchanges: list) -> dict[str, float]:
    return {"llm_calls": len(exchanges),
            "llm_failed_calls": sum(e.error is not None for e in exchanges),
            "llm_prompt_tokens": sum(e.prompt_tokens for e in exchanges),
            "llm_completion_tokens": sum(e.completion_tokens for e in exchanges),
            "llm_seconds": sum(e.seconds for e in exchanges),
            "llm_cost_usd": sum(e.cost_usd for e in exchanges)}


def _write_llm_exchanges(rec) -> None:
    """Every exchange as one JSON line: the recording ``--replay`` reads back."""
    from mlflow_agentic.llm.replay import EXCHANGES_ARTIFACT

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / EXCHANGES_ARTIFACT
        path.write_text("".join(json.dumps(e.to_record(), default=str) + "\n"
                                for e in rec.llm_exchanges))
        rec.client.log_artifact(rec.parent_run_id, str(path))


def _holdout_columns(metric: str, attempt: AttemptRecord, report) -> dict:
    if report is None:
        return {}
    score = report.scores.get(attempt.index)
    if score is None or score.error is not None:
        return {ev.holdout(metric): None, ev.GAP: None}
    return {ev.holdout(metric): score.holdout, ev.GAP: score.gap}
