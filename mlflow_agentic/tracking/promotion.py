"""The promotion gate's MLflow side: read the challenger's evidence from the runs its search
recorded (``provenance``: never from the version's own tags, which anyone can write), refuse a
version whose tags disagree with its runs, score challenger and champion on the same
evaluation data (the holdout recorded with the challenger's search, or a file), move the alias
only if the decision says so, and record the decision, both scores and the data digest as
model-version tags either way. A code-mode version is promoted only with
``accept_generated_code`` (recorded with who and when), and scored in the sandbox."""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass

import mlflow
from mlflow.exceptions import MlflowException

from mlflow_agentic import evidence as ev
from mlflow_agentic.data.split import frame_digest
from mlflow_agentic.errors import UserInputError
from mlflow_agentic.scoring.external import evaluate_predictions
from mlflow_agentic.scoring.promotion import DEFAULT_MAX_GAP, Decision, decide
from mlflow_agentic.tracking.evaluation import model_outputs
from mlflow_agentic.tracking.provenance import provenance

HOLDOUT_ARTIFACT = ev.HOLDOUT_ARTIFACT


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
            accept_generated_code: bool = False) -> Promotion:
    client = mlflow.MlflowClient()
    challenger = _version_by_alias(client, model, from_alias, required=True)
    champion = _version_by_alias(client, model, to_alias, required=False)
    origin = provenance(client, challenger)
    tags = origin.evidence
    refusal = _untrusted(origin, tags, accept_generated_code, challenger.version)
    if refusal:  # nothing is loaded or scored for a version its runs do not vouch for
        outcome = Promotion(model, str(challenger.version),
                            None if champion is None else str(champion.version),
                            Decision(False, refusal, tags.get(ev.METRIC, "")),
                            "not evaluated", "-", 0, to_alias)
        _record(client, outcome, math.nan)
        return outcome
    frame_source, path = _evaluation_data(tags, data)
    from mlflow_agentic.data import Dataset

    dataset = Dataset.from_path(path, tags.get(ev.TARGET) or None)
    task = tags.get(ev.TASK) or dataset.task
    model_type = "regressor" if task == "regression" else "classifier"
    metric = tags.get(ev.METRIC) or None
    mine = _score(model, challenger, dataset, model_type, metric)
    metric = mine.metric
    if champion is not None and champion.version == challenger.version:
        decision = Decision(False, [f"version {challenger.version} is already @{to_alias}"],
                            metric, mine.score, mine.score)
    else:
        theirs = (None if champion is None else
                  _score(model, champion, dataset, model_type, metric).score)
        decision = decide(tags, metric=metric, challenger_score=mine.score,
                          challenger_beats_baseline=mine.verdict.valid,
                          baseline_reason=mine.verdict.reason, champion_score=theirs,
                          max_gap=max_gap)
    outcome = Promotion(model, str(challenger.version),
                        None if champion is None else str(champion.version), decision,
                        frame_source, frame_digest(dataset.frame), dataset.n_rows, to_alias)
    _record(client, outcome, mine.baseline)
    if decision.promoted:
        if tags.get(ev.GENERATED_CODE) == "true":
            _record_acceptance(client, model, challenger.version)
        client.set_registered_model_alias(model, to_alias, challenger.version)
    return outcome


def _untrusted(origin, evidence: dict, accept_generated_code: bool, version) -> list[str]:
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


def _record_acceptance(client, model: str, version) -> None:
    import getpass
    import socket

    try:
        who = f"{getpass.getuser()}@{socket.gethostname()}"
    except (KeyError, OSError):
        who = f"uid {os.getuid()}@{socket.gethostname()}"
    client.set_model_version_tag(model, version, ev.ACCEPTED_BY, who)
    client.set_model_version_tag(model, version, ev.ACCEPTED_AT,
                                 time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))


def _version_by_alias(client, model: str, alias: str, *, required: bool):
    try:
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


def _evaluation_data(tags: dict, data: str | None) -> tuple[str, str]:
    """(description, local path) of the rows both models are scored on."""
    if data:
        return f"file {data}", data
    run_id = tags.get(ev.SEARCH_RUN_ID)
    if not run_id:
        raise UserInputError("this version records no search run (no search_run_id tag), so "
                             "there is no recorded holdout to evaluate on: pass --data PATH")
    try:
        path = mlflow.artifacts.download_artifacts(run_id=run_id,
                                                   artifact_path=HOLDOUT_ARTIFACT)
    except (MlflowException, OSError) as exc:
        raise UserInputError(f"search run {run_id} has no {HOLDOUT_ARTIFACT}: pass --data "
                             f"PATH ({exc})") from exc
    return f"holdout of search run {run_id}", path


def _score(model: str, mv, dataset, model_type: str, metric: str | None):
    """Version ``mv`` judged on ``dataset``: it gets the columns its signature names. A
    code-mode version predicts in the sandbox (its code never runs here)."""
    version = mv.version
    if mv.tags.get(ev.GENERATED_CODE) == "true":
        return _score_generated(model, version, dataset, model_type, metric)
    loaded = mlflow.pyfunc.load_model(f"models:/{model}/{version}")
    schema = loaded.metadata.get_input_schema()
    X = dataset.X
    if schema is not None and schema.has_input_names():
        wanted = [c for c in schema.input_names() if c in X.columns]
        X = X[wanted]
    try:
        y_pred, proba, classes = model_outputs(loaded, X, model_type)
    except Exception as exc:
        raise UserInputError(f"version {version} of {model!r} cannot score the evaluation "
                             f"data: {type(exc).__name__}: {exc}") from exc
    return evaluate_predictions(X, dataset.y, model_type=model_type, y_pred=y_pred,
                                proba=proba, classes=classes, metric=metric)


def _score_generated(model: str, version, dataset, model_type: str, metric: str | None):
    """A code-mode version's artifacts (code, the pipeline's pickle as bytes, the engine's
    input step), predicting ``dataset`` in a fresh sandbox container."""
    import json
    from pathlib import Path

    import cloudpickle

    from mlflow_agentic.sandbox import make_sandbox
    from mlflow_agentic.sandbox.model import SandboxedModel

    folder = Path(mlflow.artifacts.download_artifacts(f"models:/{model}/{version}")) / "artifacts"
    meta = json.loads((folder / "meta.json").read_text())
    inputs = cloudpickle.loads((folder / "inputs.pkl").read_bytes())  # the engine's own step
    sandboxed = SandboxedModel(make_sandbox(), (folder / "candidate.py").read_text(),
                               (folder / "model.pkl").read_bytes(), inputs, meta["task"],
                               tuple(meta["classes"]))
    X = dataset.X
    try:
        if model_type == "classifier":
            y_pred, proba, classes = None, sandboxed.predict_proba(X), sandboxed.classes
        else:
            y_pred, proba, classes = sandboxed.predict(X), None, ()
    except Exception as exc:
        raise UserInputError(f"version {version} of {model!r} cannot score the evaluation "
                             f"data in the sandbox: {type(exc).__name__}: {exc}") from exc
    return evaluate_predictions(X, dataset.y, model_type=model_type, y_pred=y_pred,
                                proba=proba, classes=classes, metric=metric)


def _record(client, outcome: Promotion, baseline: float) -> None:
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
            "promotion.data": outcome.data,
            "promotion.data_digest": outcome.data_digest,
            "promotion.data_rows": str(outcome.data_rows),
            "promotion.at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    for key, value in tags.items():
        client.set_model_version_tag(outcome.model, outcome.challenger_version, key, value)
