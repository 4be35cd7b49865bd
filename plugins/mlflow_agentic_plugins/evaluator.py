"""``mlflow.model_evaluator`` entry point ``agentic``: judge any model the way a search judges
its own (metric, trivial baseline on the same rows, verdict, leakage findings)::

    mlflow.models.evaluate(model_uri, data, targets="y", model_type="classifier",
                           evaluators=["agentic"])
"""

from __future__ import annotations

from mlflow.models.evaluation.base import ModelEvaluator


class AgenticEvaluator(ModelEvaluator):
    @classmethod
    def can_evaluate(cls, *, model_type, evaluator_config, **kwargs) -> bool:
        return model_type in ("classifier", "regressor")

    def evaluate(self, *, model_type, dataset, run_id, evaluator_config, model=None,
                 extra_metrics=None, custom_artifacts=None, predictions=None, **kwargs):
        from mlflow_agentic.tracking.results import evaluate_with_agentic

        return evaluate_with_agentic(model=model, model_type=model_type, dataset=dataset,
                                     run_id=run_id, config=evaluator_config or {},
                                     predictions=predictions)
