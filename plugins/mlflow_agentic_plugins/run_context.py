"""``mlflow.run_context_provider``: runs that mlflow-agentic starts are tagged with its version
and the search's identity; any other run gets nothing from it."""

from __future__ import annotations

import warnings

from mlflow.tracking.context.abstract_context import RunContextProvider


class AgenticRunContext(RunContextProvider):
    def in_context(self) -> bool:
        try:
            from mlflow_agentic.tracking.store import active_search

            return active_search() is not None
        except Exception as exc:  # never break run creation
            warnings.warn(f"mlflow-agentic run context unavailable: {exc}", stacklevel=2)
            return False

    def tags(self) -> dict[str, str]:
        from mlflow_agentic.tracking.store import search_tags

        return search_tags()
