"""Models and the registry: logging and registering (models), versions compared like for like
(versions), provenance and the promotion gate (provenance, promotion), the served pyfunc
(serving), a model predicting a file's rows (scoring_rows).

Its public face: the names other parts use, imported lazily (MLflow loads on first use)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mlflow_agentic.core.lazy import lazy_getattr

_EXPORTS = {
    "model_outputs": "mlflow_agentic.tracking.registry.outputs",
    "ACCEPT_ENV": "mlflow_agentic.tracking.registry.serving",
    "DEFAULT_ALIAS": "mlflow_agentic.tracking.registry.models",
    "ServedModel": "mlflow_agentic.tracking.registry.serving",
    "against_alias": "mlflow_agentic.tracking.registry.versions",
    "load_llm_recording": "mlflow_agentic.tracking.registry.models",
    "log_model": "mlflow_agentic.tracking.registry.models",
    "model_uri": "mlflow_agentic.tracking.registry.scoring_rows",
    "predict_rows": "mlflow_agentic.tracking.registry.scoring_rows",
    "promote": "mlflow_agentic.tracking.registry.promotion",
    "quiet_loggers": "mlflow_agentic.tracking.registry.models",
    "register": "mlflow_agentic.tracking.registry.models",
    "schema_sample": "mlflow_agentic.tracking.registry.models",
    "version_of_search": "mlflow_agentic.tracking.registry.models",
    "warm_up": "mlflow_agentic.tracking.registry.models",
}
__all__ = [
    "model_outputs",
    "ACCEPT_ENV",
    "DEFAULT_ALIAS",
    "ServedModel",
    "against_alias",
    "load_llm_recording",
    "log_model",
    "model_uri",
    "predict_rows",
    "promote",
    "quiet_loggers",
    "register",
    "schema_sample",
    "version_of_search",
    "warm_up",
]

if TYPE_CHECKING:
    from mlflow_agentic.tracking.registry.models import (
        DEFAULT_ALIAS,
        load_llm_recording,
        log_model,
        quiet_loggers,
        register,
        schema_sample,
        version_of_search,
        warm_up,
    )
    from mlflow_agentic.tracking.registry.outputs import model_outputs
    from mlflow_agentic.tracking.registry.promotion import promote
    from mlflow_agentic.tracking.registry.scoring_rows import model_uri, predict_rows
    from mlflow_agentic.tracking.registry.serving import ACCEPT_ENV, ServedModel
    from mlflow_agentic.tracking.registry.versions import against_alias

__getattr__ = lazy_getattr(__name__, _EXPORTS)
