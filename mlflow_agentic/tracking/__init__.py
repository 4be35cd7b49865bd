"""The one place that talks to MLflow: runs, models, registry, artifacts.

Split by concern, each sub-package with a public face (its ``__init__``) that the rest of the
package imports; a module of one sub-package is imported only from inside it
(``tests/test_architecture.py``):

- ``store``: which store, its checks and retries, the journal and delivery (durability);
- ``live``: recording a search while it runs (the tracker, the search run, attempt runs, traces);
- ``resume``: reading a killed search back to continue it;
- ``results``: after the loop (the result, leaderboard, diagnostics, comparisons, past searches);
- ``registry``: models, versions, provenance, the promotion gate, serving.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mlflow_agentic.core.lazy import lazy_getattr

_EXPORTS = {"MlflowTracker": "mlflow_agentic.tracking.live"}
__all__ = ["MlflowTracker"]

if TYPE_CHECKING:
    from mlflow_agentic.tracking.live import MlflowTracker

__getattr__ = lazy_getattr(__name__, _EXPORTS)
