"""The promotion gate's MLflow side: read the challenger's evidence from the runs its search
recorded (``provenance``: never from the version's own tags, which anyone can write), refuse a
version whose tags disagree with its runs, score challenger and champion on the same
evaluation data (the holdout recorded with the challenger's search, or a file), move the alias
only if the decision says so, and record the decision, both scores and the data digest as
model-version tags either way. A code-mode version is promoted only with
``accept_generated_code`` (recorded with who and when), and scored in the sandbox."""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, overload

import mlflow
from mlflow.exceptions import MlflowException

from mlflow_agentic.core import evidence as ev
from mlflow_agentic.core.errors import UserInputError
from mlflow_agentic.core.types import is_regression
from mlflow_agentic.data.split import frame_digest
from mlflow_agentic.scoring.external import ExternalEvaluation, evaluate_predictions
from mlflow_agentic.scoring.holdout import gap_of
from mlflow_agentic.scoring.paired import Outputs, paired_bootstrap
from mlflow_agentic.scoring.promotion import DEFAULT_MAX_GAP, Decision, decide
from mlflow_agentic.tracking.registry.provenance import provenance
from mlflow_agentic.tracking.registry.versions import version_outputs
from mlflow_agentic.tracking.store import downloaded, file_lock

if TYPE_CHECKING:
    from mlflow.entities.model_registry import ModelVersion

    from mlflow_agentic.data import Dataset
    from mlflow_agentic.tracking.registry.provenance import Provenance

HOLDOUT_ARTIFACT = ev.HOLDOUT_ARTIFACT
SCORE_TOLERANCE = 1e-3
"""How far a fresh holdout score may sit from the recorded one (the recorded one is rounded to
4 decimals; relative to the score's size above 1, e.g. RMSE)."""


@dataclass(frozen=True)
class Scored:
    evaluation: ExternalEvaluation
    outputs: Outputs


@dataclass
class Promotion:
    model: str
    challenger_version: str
    champion_version: str | None
    decision: Decision
    data: str
    data_digest: str
    data_rows: int
    target_alias: str


def promote(model: str, *, from_alias: str = "challenger", to_alias: str = "champion",
            data: str | None = None, max_gap: float = DEFAULT_MAX_GAP,
            min_improvement: float = 0.0, accept_generated_code: bool = False,
            dry_run: bool = False) -> Promotion:
    """Move ``to_alias`` to the ``from_alias`` version only if its runs vouch for it and it
    beats the ``to_alias`` version on the same rows beyond the noise (a paired bootstrap:
    its pessimistic 5% bound must clear ``min_improvement``); record the decision either
    way (``dry_run``: decide and change nothing). One promotion of a model at a time on a
    local store (a lock beside it): a second one waits, then decides against the moved alias;
    on a server the alias is checked again right before it is moved."""
    with _promotion_lock(model):
        return _promote(model, from_alias, to_alias, data, max_gap, min_improvement,
                        accept_generated_code, dry_run)


def _promote(model: str, from_alias: str, to_alias: str, data: str | None, max_gap: float,
             min_improvement: float, accept_generated_code: bool,
             dry_run: bool) -> Promotion:
    client = mlflow.MlflowClient()
    challenger = _version_by_alias(client, model, from_alias, required=True)
    champion = _version_by_alias(client, model, to_alias, required=False)
    origin = provenance(client, challenger)
    tags = origin.evidence
    refusal = (_untrusted(origin, tags, accept_generated_code, challenger.version)
               or _other_model(model, challenger, tags) or _champion_files(client, model,
                                                                          champion))
    if refusal:  # nothing is loaded or scored for a version its runs do not vouch for
        outcome = Promotion(model, str(challenger.version),
                            None if champion is None else str(champion.version),
                            Decision(False, refusal, tags.get(ev.METRIC, "")),
                            "not evaluated", "-", 0, to_alias)
        if not dry_run:
            _record(client, outcome, math.nan)
        return outcome
    outcome, baseline = _decide(model, challenger, champion, tags, data, max_gap,
                                min_improvement, to_alias)
    if dry_run:
        return outcome
    _record(client, outcome, baseline)
    if outcome.decision.promoted:
        _still(client, model, to_alias, champion)
        if tags.get(ev.GENERATED_CODE) == "true":
            _record_acceptance(client, model, challenger.version)
        client.set_registered_model_alias(model, to_alias, challenger.version)
    return outcome


def _decide(model: str, challenger: ModelVersion, champion: ModelVersion | None, tags: dict,
            data: str | None, max_gap: float, min_improvement: float,
            to_alias: str) -> tuple[Promotion, float]:
    """Score the challenger (and the champion) on the evaluation rows and decide; the gap is
    the gate's own (the recorded CV minus the holdout score it just computed), never the
    recorded one, which a tag or metric edit could change."""
    frame_source, dataset = _evaluation_data(tags, data)
    task = tags.get(ev.TASK) or dataset.task
    model_type = "regressor" if is_regression(task) else "classifier"
    metric = tags.get(ev.METRIC) or None
    on_holdout = frame_source.startswith("holdout of")
    mine = _score(model, challenger, dataset, model_type, metric, on_holdout)
    metric = mine.evaluation.metric
    if on_holdout and ev.cv(metric) in tags and math.isfinite(mine.evaluation.score):
        gap = gap_of(metric, float(tags[ev.cv(metric)]), mine.evaluation.score)[0]
        tags = {**tags, ev.GAP: f"{gap:.4f}"}
    moved = _score_moved(tags, metric, mine.evaluation.score, frame_source)
    if moved:
        decision = Decision(False, [moved], metric, mine.evaluation.score)
    elif champion is not None and champion.version == challenger.version:
        decision = Decision(False, [f"version {challenger.version} is already @{to_alias}"],
                            metric, mine.evaluation.score, mine.evaluation.score)
    else:
        theirs = None if champion is None else _score(
            model, champion, dataset, model_type, metric,
            on_holdout and champion.tags.get(ev.HOLDOUT_DIGEST) == tags.get(ev.HOLDOUT_DIGEST))
        comparison = None if theirs is None else paired_bootstrap(
            metric, dataset.y, mine.outputs, theirs.outputs)
        decision = decide(tags, metric=metric, challenger_score=mine.evaluation.score,
                          challenger_beats_baseline=mine.evaluation.verdict.valid,
                          baseline_reason=mine.evaluation.verdict.reason,
                          champion_score=None if theirs is None else theirs.evaluation.score,
                          max_gap=max_gap, comparison=comparison,
                          min_improvement=min_improvement,
                          caveat=_unlike(tags, champion, frame_source))
    outcome = Promotion(model, str(challenger.version),
                        None if champion is None else str(champion.version), decision,
                        frame_source, frame_digest(dataset.frame), dataset.n_rows, to_alias)
    return outcome, mine.evaluation.baseline


def _champion_files(client: mlflow.MlflowClient, model: str,
                    champion: ModelVersion | None) -> list[str]:
    """Why the champion may not be loaded ([] when it may): its files are not the model its
    search logged (a swapped pickle would run its code here, and a worse one flip the
    decision)."""
    if champion is None:
        return []
    problems = _other_model(model, champion, provenance(client, champion).evidence)
    return [f"the @champion (version {champion.version}) cannot be compared: {p}; nothing "
            "was loaded" for p in problems]


def _still(client: mlflow.MlflowClient, model: str, alias: str,
           champion: ModelVersion | None) -> None:
    """Refuse to move ``alias`` when another promotion moved it since this one read it."""
    now = _version_by_alias(client, model, alias, required=False)
    before = None if champion is None else champion.version
    if (None if now is None else now.version) != before:
        moved = now.version if now is not None else "-"
        raise UserInputError(f"@{alias} of {model!r} moved to version {moved} while this "
                             f"promotion decided against version {before or '-'}: run promote "
                             "again")


@contextlib.contextmanager
def _promotion_lock(model: str) -> Iterator[None]:
    """An exclusive lock per model beside a local sqlite store (others: no lock; ``_still``)."""
    uri = mlflow.get_tracking_uri()
    if not uri.startswith("sqlite:///"):
        yield
        return
    import hashlib
    from pathlib import Path

    store = Path(uri.removeprefix("sqlite:///"))
    name = hashlib.sha256(model.encode()).hexdigest()[:16]
    with file_lock(store.with_name(f"{store.name}.promote-{name}.lock")):
        yield


def _unlike(tags: dict, champion: ModelVersion | None, data: str) -> str:
    """Why champion and challenger are not compared like for like ('' when they are): the
    champion's search sealed other rows, so it may have trained on some of these."""
    if champion is None or not data.startswith("holdout of"):
        return ""
    theirs = champion.tags.get(ev.HOLDOUT_DIGEST)
    ours = tags.get(ev.HOLDOUT_DIGEST)
    if theirs and ours and theirs == ours:
        return ""
    return (f"not like for like: the champion (version {champion.version}) was sealed on other "
            f"rows (holdout digest {theirs or 'unknown'} vs {ours or 'unknown'}), so it may "
            "have trained on some of these rows; pass --data with rows neither saw")


def _untrusted(origin: Provenance, evidence: dict, accept_generated_code: bool,
               version: str) -> list[str]:
    """Why the gate stops before loading anything: the runs do not vouch for the version, or
    it runs LLM-written code and the user did not accept that."""
    if not origin.trusted:
        return origin.problems
    if evidence.get(ev.GENERATED_CODE) == "true" and not accept_generated_code:
        return [f"version {version} is a code-mode model: loading or serving it runs "
                "LLM-written code (candidate.py). Pass --accept-generated-code to promote it "
                "anyway (recorded on the version with who and when), and serve it inside a "
                "container"]
    return []


def _other_model(model: str, version: ModelVersion, evidence: dict) -> list[str]:
    """Why the version's files are not the model its search logged ([] when they are): the
    digest recorded as a param of the attempt run when the model was logged."""
    from mlflow_agentic.tracking.store import model_sha256

    recorded = evidence.get(ev.MODEL_SHA256)
    if not recorded:
        return [f"version {version.version}'s source run records no {ev.MODEL_SHA256} (the "
                "digest of the model it logged), so its files cannot be checked; run the "
                "search again to register a version the gate can verify"]
    actual = model_sha256(f"models:/{model}/{version.version}")
    if actual != recorded:
        return [f"version {version.version}'s files (sha256 {actual[:12]}) are not the model "
                f"its search logged (sha256 {recorded[:12]}): refused"]
    return []


def _score_moved(evidence: dict, metric: str, fresh: float, data: str) -> str:
    """Why a fresh score on the recorded holdout contradicts the one the search recorded for
    this model ('' when it agrees, or when the rows are another file)."""
    recorded = evidence.get(ev.holdout(metric))
    if not data.startswith("holdout of") or recorded is None:
        return ""
    recorded_score = float(recorded)
    if math.isfinite(fresh) and abs(fresh - recorded_score) <= SCORE_TOLERANCE * max(
            1.0, abs(recorded_score)):
        return ""
    return (f"scored now on the search's own holdout, this version gives {metric} "
            f"{fresh:.4f}, but its search recorded {recorded_score:.4f} for the model it "
            "registered: the version is not that model; refused")


def _record_acceptance(client: mlflow.MlflowClient, model: str, version: str) -> None:
    import getpass
    import socket

    try:
        who = f"{getpass.getuser()}@{socket.gethostname()}"
    except (KeyError, OSError):
        who = f"uid {os.getuid()}@{socket.gethostname()}"
    client.set_model_version_tag(model, version, ev.ACCEPTED_BY, who)
    client.set_model_version_tag(model, version, ev.ACCEPTED_AT,
                                 time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))


@overload
def _version_by_alias(client: mlflow.MlflowClient, model: str, alias: str, *,
                      required: Literal[True]) -> ModelVersion: ...


@overload
def _version_by_alias(client: mlflow.MlflowClient, model: str, alias: str, *,
                      required: Literal[False]) -> ModelVersion | None: ...


def _version_by_alias(client: mlflow.MlflowClient, model: str, alias: str, *,
                      required: bool) -> ModelVersion | None:
    """The version an alias points at (or, for a number, that version)."""
    try:
        if alias.isdigit():
            return client.get_model_version(model, alias)
        return client.get_model_version_by_alias(model, alias)
    except MlflowException as exc:
        if not required:
            return None
        try:
            client.get_registered_model(model)
        except MlflowException:
            names = [m.name for m in client.search_registered_models(max_results=50)]
            raise UserInputError(f"no registered model named {model!r}; registered: "
                                 f"{', '.join(names) or 'none'}") from exc
        raise UserInputError(f"model {model!r} has no version with alias @{alias}; register "
                             f"one with mlflow-agentic run, or pass --from ALIAS") from exc


def _evaluation_data(tags: dict, data: str | None) -> tuple[str, Dataset]:
    """(description, ``Dataset``) of the rows both models are scored on: ``data``, or the
    search's recorded holdout (read from a copy removed straight after)."""
    from mlflow_agentic.data import Dataset

    target = tags.get(ev.TARGET) or None
    if data:
        return f"file {data}", Dataset.from_path(data, target)
    run_id = tags.get(ev.SEARCH_RUN_ID)
    if not run_id:
        raise UserInputError("this version records no search run (no search_run_id tag), so "
                             "there is no recorded holdout to evaluate on: pass --data PATH")
    with contextlib.ExitStack() as folder:  # only the download's failure means "no holdout"
        try:
            path = folder.enter_context(downloaded(run_id=run_id, artifact_path=HOLDOUT_ARTIFACT,
                                                   purpose="holdout"))
        except (MlflowException, OSError) as exc:
            raise UserInputError(f"search run {run_id} has no {HOLDOUT_ARTIFACT}: pass --data "
                                 f"PATH ({exc})") from exc
        return f"holdout of search run {run_id}", Dataset.from_path(path, target)


def _score(model: str, mv: ModelVersion, dataset: Dataset, model_type: str, metric: str | None,
           own_holdout: bool = False) -> Scored:
    """Version ``mv`` judged on ``dataset``, with its predictions for the paired comparison
    (``own_holdout``: the rows are the holdout of ``mv``'s search: ``versions.scored_uri``)."""
    outputs = version_outputs(model, mv, dataset.X, model_type, own_holdout=own_holdout)
    evaluation = evaluate_predictions(dataset.X, dataset.y, model_type=model_type,
                                      y_pred=outputs.y_pred, proba=outputs.proba,
                                      classes=outputs.classes, metric=metric)
    return Scored(evaluation, outputs)


def _record(client: mlflow.MlflowClient, outcome: Promotion, baseline: float) -> None:
    d = outcome.decision
    tags = {"promotion.decision": "promoted" if d.promoted else "refused",
            "promotion.reason": "; ".join(d.reasons)[:5000],
            "promotion.target_alias": outcome.target_alias,
            "promotion.metric": d.metric,
            "promotion.challenger_score": f"{d.challenger_score:.6f}",
            "promotion.champion_score": ("none" if d.champion_score is None
                                         else f"{d.champion_score:.6f}"),
            "promotion.champion_version": outcome.champion_version or "none",
            "promotion.baseline_score": f"{baseline:.6f}",
            "promotion.comparison": "none" if d.comparison is None else d.comparison.describe(),
            "promotion.data": outcome.data,
            "promotion.data_digest": outcome.data_digest,
            "promotion.data_rows": str(outcome.data_rows),
            "promotion.at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    for key, value in tags.items():
        client.set_model_version_tag(outcome.model, outcome.challenger_version, key, value)
