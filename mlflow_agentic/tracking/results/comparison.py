"""MLflow side of a comparison: the comparison run (report, tables, plots) that the proposer x
seed search runs nest under, and the look-up of a previous comparison's LLM recordings."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import mlflow

from mlflow_agentic.core import evidence as ev

TAG_ID = "agentic.comparison_id"
TAG_SEED = "agentic.seed"
SCORES = ("best_cv", "holdout", "gap")
"""Rounded to 4 decimals like every score people read; counts and seconds to 2."""


class ComparisonTracker:
    """Starts comparison runs (nested when a run is active, e.g. under ``mlflow run``) and logs
    the report. Search runs started while a comparison run is active nest under it."""

    def __init__(self, experiment: str | None = None, tracking_uri: str | None = None) -> None:
        self.experiment = experiment
        self.tracking_uri = tracking_uri
        self._configured = False
        self._tokens: list = []

    def configure(self) -> None:
        """Point MLflow at this comparison's store and experiment (once): before anything is read
        from or written to it."""
        if self._configured:
            return
        self._configured = True
        if self.tracking_uri:
            mlflow.set_tracking_uri(self.tracking_uri)
            mlflow.tracing.reset()  # traces follow the new store
        under_project = bool(os.environ.get("MLFLOW_RUN_ID"))
        if mlflow.active_run() is None and not under_project and self.experiment:
            mlflow.set_experiment(self.experiment)

    def start(self, name: str, tags: dict[str, str], params: dict[str, object]) -> str:
        """Start a comparison run; under ``mlflow run`` the outermost one is the project's."""
        from mlflow_agentic.tracking.store import begin as begin_context
        from mlflow_agentic.tracking.store import mark_model_training, search_tags

        self.configure()
        self._tokens.append(begin_context(comparison_id=tags.get(TAG_ID, "")))
        run = mlflow.start_run(run_name=name, nested=mlflow.active_run() is not None)
        client = mlflow.MlflowClient()
        given = client.get_run(run.info.run_id).data.params  # project params are immutable
        mlflow.log_params({(k if given.get(k, str(v)) == str(v) else f"resolved.{k}"): v
                           for k, v in params.items()})
        mlflow.set_tags({"mlflow.runName": name, **search_tags(), **tags})
        mark_model_training(client, run.info.experiment_id)
        return run.info.run_id

    def log_dataset_report(self, report, directory: Path, note: str) -> None:
        """Tables as MLflow tables and JSON, per-proposer metrics, the Markdown/HTML report and
        plots (already written in ``directory``) as artifacts; the summary as the run note."""
        import pandas as pd

        m = report.metric
        metrics = {}
        for row in report.summary:
            p = row["proposer"]
            for key, name in (("best_cv", f"best_cv_{m}"), ("holdout", f"holdout_{m}"),
                              ("gap", "gap"), ("attempts", "attempts"),
                              ("verified", "verified"), ("quarantined", "quarantined"),
                              ("wall_seconds", "wall_seconds"),
                              ("first_verified_seconds", "first_verified_seconds"),
                              ("cost_usd", "cost_usd")):
                if _finite(row[key]):
                    metrics[f"{p}.{name}"] = (ev.shown(row[key]) if key in SCORES
                                              else round(row[key], 2))
            metrics[f"{p}.tokens"] = row["prompt_tokens"] + row["completion_tokens"]
        for p, r in report.ranks.items():
            metrics[f"{p}.rank"] = r
        mlflow.log_metrics(metrics)
        mlflow.log_table(pd.DataFrame(report.summary), "comparison_table.json")
        mlflow.log_table(pd.DataFrame([a.row() for a in report.arms]), "comparison_arms.json")
        mlflow.log_artifacts(str(directory))
        mlflow.set_tags({"verdict": report.verdict,
                         "mlflow.note.content": note})

    def log_ranking(self, ranking: list[dict], directory: Path, note: str) -> None:
        import pandas as pd

        mlflow.log_metrics({f"{r['proposer']}.{k}": r[k] for r in ranking
                            for k in ("mean_rank", "wins")})
        mlflow.log_table(pd.DataFrame(ranking), "ranking_table.json")
        mlflow.log_artifacts(str(directory))
        mlflow.set_tag("mlflow.note.content", note)

    def end(self, status: str = "FINISHED") -> None:
        from mlflow_agentic.tracking.store import end as end_context

        mlflow.end_run(status=status)
        if self._tokens:
            end_context(self._tokens.pop())


def write_json(path: Path, data) -> Path:
    path.write_text(json.dumps(data, indent=1, default=str))
    return path


def find_llm_recordings(comparison_id: str, dataset: str) -> dict[int, str]:
    """``{seed: run_id}`` of the LLM search runs of an earlier comparison on ``dataset``."""
    client = mlflow.MlflowClient()
    experiments = [e.experiment_id for e in client.search_experiments()]
    runs = client.search_runs(
        experiments, filter_string=(f"tags.`{TAG_ID}` = '{comparison_id}' and "
                                    f"tags.proposer = 'llm' and tags.dataset = '{dataset}' and "
                                    "tags.`agentic.role` = 'search'"))
    return {int(r.data.tags[TAG_SEED]): r.info.run_id for r in runs
            if r.data.tags.get(TAG_SEED, "").lstrip("-").isdigit()}


def _finite(value) -> bool:
    import math

    return value is not None and math.isfinite(value)


def temporary_directory():
    return tempfile.TemporaryDirectory(prefix="agentic-compare-")
