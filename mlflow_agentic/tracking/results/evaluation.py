"""The MLflow side of the ``agentic`` model evaluator: read the evaluation dataset, get the
model's predictions (probabilities when the model has them), judge them with
``scoring.external``, and log metrics, tags and a JSON artifact on the evaluation run."""

from __future__ import annotations

import numpy as np
import pandas as pd
from mlflow import MlflowClient
from mlflow.entities import Metric, RunTag
from mlflow.models.evaluation.artifacts import JsonEvaluationArtifact
from mlflow.models.evaluation.base import EvaluationResult

from mlflow_agentic.scoring.external import evaluate_predictions
from mlflow_agentic.tracking.registry import model_outputs

ARTIFACT = "agentic_evaluation.json"


def evaluate_with_agentic(*, model, model_type: str, dataset, run_id: str, config: dict,
                          predictions=None) -> EvaluationResult:
    features = dataset.features_data
    if not isinstance(features, pd.DataFrame):
        features = pd.DataFrame(features, columns=dataset.feature_names)
    labels = pd.Series(np.asarray(dataset.labels_data), name=dataset.targets_name or "target")
    if model is not None:
        y_pred, proba, classes = model_outputs(model, features, model_type)
    else:  # a static dataset with a predictions column
        y_pred, proba, classes = np.asarray(dataset.predictions_data).ravel(), None, ()
    result = evaluate_predictions(features, labels, model_type=model_type, y_pred=y_pred,
                                  proba=proba, classes=classes, metric=config.get("metric"),
                                  margin=float(config.get("margin", 0.01)))
    client = MlflowClient()
    metrics = result.metrics()
    tags = {"agentic.verdict": ("quarantined" if result.verdict.quarantined else
                                "verified" if result.verdict.valid else "rejected"),
            "agentic.verdict.reason": result.verdict.reason[:5000],
            "agentic.findings": "; ".join(f"{f.severity}: {f.check}"
                                          + (f" ({f.column})" if f.column else "")
                                          for f in result.findings)[:5000] or "none"}
    client.log_batch(run_id, metrics=[Metric(k, float(v), 0, 0) for k, v in metrics.items()],
                     tags=[RunTag(k, v) for k, v in tags.items()])
    client.log_dict(run_id, result.to_dict(), ARTIFACT)
    uri = client.get_run(run_id).info.artifact_uri.rstrip("/") + "/" + ARTIFACT
    artifact = JsonEvaluationArtifact(uri=uri, content=result.to_dict())
    return EvaluationResult(metrics=metrics, artifacts={"agentic_evaluation": artifact},
                            run_id=run_id)
