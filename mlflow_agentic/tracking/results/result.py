"""Recording a finished search: holdout scores and rows, the leaderboard, the data profile, the
LLM recording; then the model, logged on the selected attempt's run with its holdout
diagnostics and (with holdout evidence) registered from it; then the search run ended.

One step, after the loop and the holdout scoring, on the run an ``AttemptRecorder`` opened.
Registration comes last, with all the evidence, so nothing half-written is registered.
"""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlflow_agentic.core import evidence as ev
from mlflow_agentic.core.settings import register_policy
from mlflow_agentic.core.types import AttemptRecord, EngineeringRun
from mlflow_agentic.scoring.holdout import explain_gap
from mlflow_agentic.tracking.registry import (
    DEFAULT_ALIAS,
    against_alias,
    log_model,
    version_of_search,
)
from mlflow_agentic.tracking.registry import register as register_model
from mlflow_agentic.tracking.results.leaderboard import log_leaderboard
from mlflow_agentic.tracking.store import model_sha256
from mlflow_agentic.trainers.registry import model_requirements


@dataclass
class Registration:
    """What became of the model: logged (``model_uri``), registered (``model_version``)."""

    model_uri: str | None = None
    model_version: Any = None
    alias_note: str = ""


def record_result(rec, run: EngineeringRun, report=None, holdout=None, *,
                  register: bool | str = True,
                  register_name: str | None = None, alias: str = DEFAULT_ALIAS,
                  log_model: bool = True, deadline: float | None = None,
                  diagnostics: bool = True) -> Registration:
    """Record ``run`` (and its holdout ``report`` and sealed ``holdout`` rows) on the search
    run of ``rec`` (an ``AttemptRecorder``), log and register the model, end the run."""
    from mlflow_agentic.tracking.results.profile import profile_html

    started = time.perf_counter()
    policy = register_policy(register)
    m, best = run.metric, run.best_attempt
    metrics: dict[str, float] = {}
    tags: dict[str, str] = {"status": "finished"}
    note = [f"### {run.summary()}", "", f"Stopped: {run.stop_reason}.", "",
            f"[This search's attempts, best CV first]({rec.runs_link()})."]
    selected_id = rec.child_run_ids.get(best.index) if best is not None else None
    if best is not None and selected_id:
        note += ["", f"**Selected attempt: [{best.index:02d}-{best.candidate.title}]"
                     f"({rec.run_link(selected_id)})** (CV {m} {best.score:.4f} ± "
                     f"{best.score_std:.4f}); it holds the model, its holdout diagnostics and "
                     "explanations."]
    if holdout is not None and log_model and run.model is not None:  # after scoring: for the
        _log_holdout_rows(rec, holdout)  # promotion gate, which scores a registered version
    _record_holdout(rec, run, report, metrics, tags, note)
    log_leaderboard(rec, run, report)
    rec.client.log_text(rec.parent_run_id, profile_html(rec.context.dataset), "data_profile.html")
    if rec.llm_exchanges:
        metrics.update(_llm_totals(rec.llm_exchanges))
        _write_llm_exchanges(rec)
    outcome = _record_model(rec, run, report, holdout, note, tags, policy=policy,
                            register_name=register_name, alias=alias, log_model=log_model,
                            deadline=deadline, diagnostics=diagnostics,
                            selected_id=selected_id)
    tags["mlflow.note.content"] = "\n".join(note)
    metrics["recording_seconds"] = time.perf_counter() - started  # all of the above
    rec.log(rec.parent_run_id, metrics, {}, tags)
    rec.end("FINISHED")
    return outcome


def _log_on_selected(rec, run: EngineeringRun, report, holdout,
                     deadline: float | None = None) -> Registration:
    """The model, the training dataset and (with a holdout) the diagnostics, on the selected
    attempt's run: the run the registered version points back to."""
    import mlflow

    from mlflow_agentic.tracking.results.diagnostics import log_diagnostics

    best, ctx = run.chosen, rec.context
    with rec.attempt_run(best.index) as run_id:
        info = rec.call("logging the model", log_model, run.model, ctx.dataset,
                        model_requirements(best), name=_model_name(best))
        rec.call("logging the training dataset", mlflow.log_input, rec.dataset_input,
                 context="training")
        tags = {"model_uri": info.model_uri, "mlflow.note.content": _selected_note(run, report)}
        params = {ev.MODEL_SHA256: rec.call("reading the logged model back", model_sha256,
                                            info.model_uri)}
        scored, scored_id = run.model, info.model_id
        if run.evidence_model is not None:  # refit on all rows: the holdout judged this one
            evidence = rec.call("logging the model the holdout scored", log_model,
                                run.evidence_model, ctx.dataset, model_requirements(best),
                                name="holdout-evidence")
            params.update({ev.EVIDENCE_MODEL_URI: evidence.model_uri,
                           ev.EVIDENCE_MODEL_SHA256: rec.call(
                               "reading the logged model back", model_sha256,
                               evidence.model_uri)})
            scored, scored_id = run.evidence_model, evidence.model_id
        if run.served_rows:
            params[ev.SERVED_ROWS] = run.served_rows
        metrics = {}
        if holdout is not None:
            tags.update(log_diagnostics(rec, scored, ctx.dataset, holdout, run.metric,
                                        model_id=scored_id, seed=ctx.search.seed,
                                        deadline=deadline, **_scored_output(report)))
            s = report.selected if report is not None else None
            if s is not None and s.error is None:  # MLflow's evaluator logs its own, unrounded
                metrics[ev.holdout(run.metric)] = ev.shown(s.holdout)
        rec.log(run_id, metrics, params, tags)
    return Registration(info.model_uri)


def _scored_output(report) -> dict:
    """The holdout scoring's output of the model the diagnostics show (the one it scored), so
    they need not predict the holdout again."""
    if report is None or report.selected_output is None:
        return {}
    return {"output": report.selected_output, "output_seconds": report.selected_seconds}


def _no_better(rec, run: EngineeringRun, holdout, report, register_name: str | None,
               alias: str) -> str:
    """Why the selected model earns no new version ('' when it does): it is not better than
    the version ``alias`` points at beyond the noise of the same sealed rows (a paired
    bootstrap). A registry that moved on every search would fill with copies of one model."""
    if holdout is None or report.selected is None or report.selected.error is not None:
        return ""
    name = _name(rec, register_name)
    try:
        found = rec.call("comparing with the registered model", against_alias, name,
                         alias, run.evidence_model or run.model, holdout.dataset, run.metric,
                         report.digest)
    except Exception as exc:  # no comparison is no reason to withhold the version
        rec.say(f"could not compare with {name}@{alias} ({type(exc).__name__}: {exc}); "
                "registering a new version")
        return ""
    if found is None:
        return ""
    standing, comparison = found
    if comparison.beyond(0.0):
        return ""
    return (f"not better beyond the noise than {name} version {standing.version} (@{alias}) "
            f"on the same sealed rows: {comparison.describe()}; `--register always` registers "
            "every search")


def _selected_note(run: EngineeringRun, report) -> str:
    best, m = run.chosen, run.metric
    lines = [f"**selected** ({best.status}; rule `{run.selection}`): {best.verdict.reason}",
             "", f"CV {m} {best.score:.4f} ± {best.score_std:.4f} over "
             f"{len(best.fold_scores)} folds{run.tie_note()}."]
    s = report.selected if report is not None else None
    if s is not None and s.error is None:
        lines.append(f"Sealed holdout {m} {s.holdout:.4f}; {explain_gap(m, s.cv, s.gap)}.")
    lines.append(served_rows_line(run, report) if report is not None else "")
    lines += ["", f"Rationale: {best.candidate.rationale or '-'}", "",
              f"Artifacts: the logged model `{_model_name(best)}` (served with labels, or "
              "with `params: {\"output\": \"probabilities\"}`), holdout plots and metrics "
              "(`holdout_*`), `holdout/predictions.json`, `explanations/`."]
    return "\n".join(lines)


def served_rows_line(run: EngineeringRun, report) -> str:
    """Which rows the served model saw, said where its scores are read."""
    if run.evidence_model is not None:
        return (f"Served model: refit on all {run.served_rows} labelled rows (training + "
                f"holdout) after the holdout scored the same recipe fitted on the "
                f"{run.served_rows - report.n_rows} training rows; that model is logged beside "
                "it (`holdout-evidence`) and is what the promotion gate scores on this holdout.")
    note = f" (not refit on all rows: {run.served_note})" if run.served_note else ""
    if run.bagged:
        return f"Served model: the average of its fold models{note}."
    return f"Served model: fitted on the {run.served_rows} training rows{note}."


def _model_name(best: AttemptRecord) -> str:
    """The logged model is named after what it is (``ensemble``, ``xgboost``; ``generated``
    for code mode), so the Models tab tells them apart."""
    trainer = best.candidate.trainer
    return "generated" if trainer == "code" else trainer.replace("_", "-")


def _name(rec, register_name: str | None) -> str:
    return register_name or f"{rec.context.dataset.name}-agentic"


def _register(rec, run: EngineeringRun, best: AttemptRecord, report, logged: Registration,
              register_name: str | None, alias: str, earlier=None) -> Registration:
    ctx = rec.context
    name = _name(rec, register_name)
    m = run.metric
    tags = {
        ev.METRIC: m, ev.cv(m): f"{ev.shown(best.score):.4f}",
        ev.baseline(m): f"{run.baseline_score:.6f}",
        ev.VERDICT: best.verdict.reason, ev.TRAINER: best.candidate.trainer,
        ev.RUN_ID: rec.child_run_ids.get(best.index, ""), ev.SEARCH_RUN_ID: rec.parent_run_id,
        ev.PROPOSER: ctx.proposer_name, ev.DATASET: ctx.dataset.name,
        ev.CV_SCHEME: ctx.cv_scheme, ev.VERDICT_STATUS: best.status,
        ev.QUARANTINED: str(best.verdict.quarantined).lower(),
        ev.TARGET: ctx.dataset.target, ev.TASK: ctx.dataset.task,
        ev.EXCLUDED_COLUMNS: ",".join(ctx.dataset.excluded_columns) or "none",
        "selection": run.selection,
    }
    if report.selected is not None and report.selected.error is None:
        tags.update({ev.holdout(m): f"{ev.shown(report.selected.holdout):.4f}",
                     ev.GAP: f"{ev.shown(report.selected.gap):.4f}",
                     ev.SELF_DECEIVED: str(report.selected.self_deceived).lower(),
                     ev.HOLDOUT_ROWS: str(report.n_rows), ev.HOLDOUT_DIGEST: report.digest})
    if ctx.briefing is not None:
        tags[ev.CRITICAL_FINDINGS] = str(len(ctx.briefing.critical))
    if best.candidate.code is not None:
        tags[ev.GENERATED_CODE] = "true"
    version, alias_note = rec.call(
        "registering the model", register_model, logged.model_uri, name, tags, alias=alias,
        description=_version_description(rec, run, report, name),
        model_description=_model_description(name, ctx.dataset, m, alias), existing=earlier)
    return Registration(logged.model_uri, version, alias_note)


def _version_description(rec, run: EngineeringRun, report, name: str) -> str:
    best, m, ctx = run.chosen, run.metric, rec.context
    run_id = rec.child_run_ids.get(best.index, "")
    s = report.selected
    held = (f"holdout {m} {s.holdout:.4f}, " if s is not None and s.error is None else "")
    # the first line is what the registry's versions list shows, as plain text
    lines = [f"{best.candidate.trainer}: {held}CV {best.score:.4f} ± {best.score_std:.4f}, "
             f"attempt {best.index:02d} of {len(run.attempts)}", "",
             f"**{best.index:02d}-{best.candidate.title}**, selected from {len(run.attempts)} "
             f"attempts ({len(run.valid_attempts)} verified) by the `{run.selection}` rule, "
             f"proposer `{ctx.proposer_name}`.", "",
             f"- CV {m}: {best.score:.4f} ± {best.score_std:.4f} ({len(best.fold_scores)}-fold "
             f"{ctx.cv_scheme}); trivial baseline {run.baseline_score:.4f}."]
    if s is not None and s.error is None:
        lines.append(f"- Sealed holdout ({report.n_rows} rows, sealed before any proposer "
                     f"existed): {m} {s.holdout:.4f}; {explain_gap(m, s.cv, s.gap)}.")
    if run.ties:
        lines.append(f"- Ties: {run.tie_note().lstrip('; ')}.")
    lines.append(f"- {served_rows_line(run, report)}")
    lines += [f"- Features: {len(ctx.dataset.feature_columns)}; excluded: "
              f"{', '.join(ctx.dataset.excluded_columns) or 'none'} (optional in requests).",
              f"- Source run: the selected attempt [{run_id}]({rec.run_link(run_id)}); search "
              f"run [{rec.parent_run_id}]({rec.run_link(rec.parent_run_id)}).",
              "- Serving: labels by default; `\"params\": {\"output\": \"probabilities\"}` adds "
              "one probability column per class.",
              f"- Promotion: `mlflow-agentic promote --model {name}` moves `@champion` only when "
              "this version beats it beyond the noise of the same sealed rows; MLflow's own "
              "*Promote model* button and hand-set aliases bypass that gate. Check a version "
              f"first: `mlflow-agentic promote --model {name} --from <version> --dry-run`."]
    if best.candidate.code is not None:
        lines += ["", GENERATED_CODE_WARNING]
    return "\n".join(lines)


GENERATED_CODE_WARNING = (
    "**Loading this model runs LLM-written code** (code mode: `candidate.py` and its pickled "
    "pipeline). The search ran it only in its sandbox; `mlflow models serve` or "
    "`mlflow.pyfunc.load_model` run it in their own process. Serve it inside a container, and "
    "promote it only with `mlflow-agentic promote --accept-generated-code`.")


def _model_description(name: str, dataset, metric: str, alias: str) -> str:
    return (f"Models of `{dataset.target}` ({dataset.task}) on `{dataset.name}`, registered by "
            f"mlflow-agentic. Each version's description holds its evidence: CV {metric}, the "
            "score on a holdout sealed before the search, and the gap between them (CV minus "
            "holdout in the better direction; positive means CV flattered the model). "
            f"A search adds a version only when it beats `@{alias}` beyond the noise of the "
            f"same sealed rows (`--register always`: every search), and `@{alias}` points at "
            f"the best on the same holdout; promote with `mlflow-agentic promote --model {name}`"
            ", a gate that knows noise too.")


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
        rec.log(run_id, {ev.holdout(m): ev.shown(score.holdout), ev.GAP: ev.shown(score.gap)}, {},
                {ev.SELF_DECEIVED: str(score.self_deceived).lower()})
    with tempfile.TemporaryDirectory() as tmp:
        path = plot_cv_vs_holdout(report, run, Path(tmp) / "cv_vs_holdout.png",
                                  rec.context.trainers)
        rec.client.log_artifact(rec.parent_run_id, str(path))


def _log_holdout_rows(rec, holdout) -> None:
    """The sealed rows as read (post-outcome columns blanked), for the promotion gate."""
    folder, name = ev.HOLDOUT_ARTIFACT.rsplit("/", 1)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        holdout.dataset.frame.to_csv(path, index=False)
        rec.client.log_artifact(rec.parent_run_id, str(path), folder)


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


def _unscored(report) -> str:
    """Why the selected model may not be registered for want of a holdout score ('' when it
    has one): a model whose sealed-holdout predictions failed (a code candidate that dodged
    its scoring container) has no evidence."""
    import math

    selected = report.selected
    if selected is None:
        return ""
    if selected.error is not None or not math.isfinite(selected.holdout):
        why = selected.error or f"the score is {selected.holdout}"
        return f"the selected model has no holdout score ({why[:200]}), so no evidence"
    return ""


def _record_model(rec, run: EngineeringRun, report, holdout, note: list[str], tags: dict, *,
                  policy: str, register_name, alias: str, log_model: bool, deadline,
                  diagnostics: bool, selected_id) -> Registration:
    """The selected model logged on its attempt's run and, by the registry policy and the
    evidence, registered (or why not: appended to the search run's ``note`` and ``tags``)."""
    register = policy != "never"
    outcome = Registration()
    if run.model is not None and not log_model:
        note.append("Model not logged (a comparison run: evidence about the proposer).")
    elif run.model is not None:
        earlier = (version_of_search(_name(rec, register_name), rec.parent_run_id,
                                            selected_id or "")
                   if register and report is not None else None)
        if earlier is not None:  # a resume of a search killed after it registered: reuse it
            outcome = Registration(earlier.source)
            note.append(f"Version {earlier.version} was registered from this search before it "
                        "was interrupted: kept, no second version.")
        else:
            outcome = _log_on_selected(rec, run, report, holdout if diagnostics else None,
                                       deadline)
        standing = (_unscored(report) if register and report is not None else "") or (
            _no_better(rec, run, holdout, report, register_name, alias)
            if policy == "better" and earlier is None and report is not None else "")
        if standing:
            outcome.alias_note = standing
            note.append(f"Not registered: {standing}.")
            tags.update({"registered_model": _name(rec, register_name),
                         "registered_version": "none (no holdout score)"
                         if standing.startswith("the selected model has no holdout")
                         else "none (within noise of the registered one)"})
        elif register and report is not None:
            outcome = _register(rec, run, run.chosen, report, outcome, register_name, alias,
                                earlier)
            version = outcome.model_version
            note.append(f"Registered `{version.name}` version {version.version} from the "
                        f"selected attempt's run: {outcome.alias_note}.")
            tags.update({"registered_model": version.name,
                         "registered_version": str(version.version)})
        else:
            note.append("Model logged on the selected attempt's run, not registered ("
                        + ("registration disabled)." if not register else
                           "no sealed-holdout evidence: a bare engine loop; "
                           "mlflow_agentic.search() seals a holdout first and registers)."))
    else:
        tags["registered_model"] = "none"
        note.append("Nothing verified: no model was logged or registered.")
    return outcome


def _record_holdout(rec, run: EngineeringRun, report, metrics: dict, tags: dict,
                    note: list[str]) -> None:
    """Every attempt's holdout score, and the selected model's beside its CV."""
    m = run.metric
    if report is not None:
        _log_holdout(rec, run, report)
        s = report.selected
        if s is not None and s.error is None:
            metrics[ev.holdout(m)] = ev.shown(s.holdout)
            metrics[ev.GAP] = ev.shown(s.gap)
            tags[ev.SELF_DECEIVED] = str(s.self_deceived).lower()
            note.append(f"Selected model on the sealed holdout ({report.n_rows} rows): {m} "
                        f"{s.holdout:.4f}; {explain_gap(m, s.cv, s.gap)}.")
        tags["holdout"] = f"{report.n_rows} rows, {report.scheme}, digest {report.digest}"
