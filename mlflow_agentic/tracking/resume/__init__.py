"""Reading a killed search back to continue it: its finished attempts, its LLM calls, what must
match (point).

Its public face: the names other parts use, imported lazily (MLflow loads on first use)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mlflow_agentic.core.lazy import lazy_getattr

_EXPORTS = {
    "DIGEST_TAG": "mlflow_agentic.tracking.resume.point",
    "LAST": "mlflow_agentic.tracking.resume.point",
    "MUST_MATCH": "mlflow_agentic.tracking.resume.point",
    "OUTPUTS_ARTIFACT": "mlflow_agentic.tracking.resume.point",
    "ResumePoint": "mlflow_agentic.tracking.resume.point",
    "last_unfinished": "mlflow_agentic.tracking.resume.point",
    "read_search": "mlflow_agentic.tracking.resume.point",
    "write_outputs": "mlflow_agentic.tracking.resume.point",
}
__all__ = [
    "DIGEST_TAG",
    "LAST",
    "MUST_MATCH",
    "OUTPUTS_ARTIFACT",
    "ResumePoint",
    "last_unfinished",
    "read_search",
    "write_outputs",
]

if TYPE_CHECKING:
    from mlflow_agentic.tracking.resume.point import (
        DIGEST_TAG,
        LAST,
        MUST_MATCH,
        OUTPUTS_ARTIFACT,
        ResumePoint,
        last_unfinished,
        read_search,
        write_outputs,
    )

__getattr__ = lazy_getattr(__name__, _EXPORTS)
