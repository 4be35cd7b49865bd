"""Scale-out: worker processes on one Optuna study (RDB storage) recording into one MLflow
search run, and ``finalize``, which selects, refits, scores the holdout and registers once."""

from mlflow_agentic.distributed.finalize import finalize
from mlflow_agentic.distributed.worker import run_worker

__all__ = ["finalize", "run_worker"]
