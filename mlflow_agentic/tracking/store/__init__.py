"""The store and durability: which store (uri), its names (names) and checks (check), calls retried
while it does not answer (retry), the connection a search holds, records journaled on disk until
the store has them (journal), delivered once (delivery) by a background writer (writer),
artifacts read back (artifacts), the search's context on this thread (context), the UI's
shared runs view and model-training kind (views).

Its public face: the names other parts use, imported lazily (MLflow loads on first use)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mlflow_agentic.core.lazy import lazy_getattr

_EXPORTS = {
    "view_state": "mlflow_agentic.tracking.store.views",
    "share_view": "mlflow_agentic.tracking.store.views",
    "search_tags": "mlflow_agentic.tracking.store.context",
    "runs_path": "mlflow_agentic.tracking.store.views",
    "new_search_id": "mlflow_agentic.tracking.store.context",
    "mark_model_training": "mlflow_agentic.tracking.store.views",
    "end": "mlflow_agentic.tracking.store.context",
    "begin": "mlflow_agentic.tracking.store.context",
    "active_search": "mlflow_agentic.tracking.store.context",
    "SHARED_VIEW": "mlflow_agentic.tracking.store.views",
    "AGAIN": "mlflow_agentic.tracking.store.retry",
    "BackgroundWriter": "mlflow_agentic.tracking.store.writer",
    "Connection": "mlflow_agentic.tracking.store.connection",
    "JOURNAL_TAG": "mlflow_agentic.tracking.store.journal",
    "Journal": "mlflow_agentic.tracking.store.journal",
    "Retrying": "mlflow_agentic.tracking.store.retry",
    "TAG_MAX": "mlflow_agentic.tracking.store.journal",
    "TraceRefused": "mlflow_agentic.tracking.store.delivery",
    "TrackingUnavailable": "mlflow_agentic.tracking.store.retry",
    "check_experiment_live": "mlflow_agentic.tracking.store.names",
    "check_names": "mlflow_agentic.tracking.store.names",
    "check_project_run": "mlflow_agentic.tracking.store.uri",
    "check_store": "mlflow_agentic.tracking.store.check",
    "current_uri": "mlflow_agentic.tracking.store.uri",
    "deleted_while_running": "mlflow_agentic.tracking.store.retry",
    "deliver_trace": "mlflow_agentic.tracking.store.delivery",
    "downloaded": "mlflow_agentic.tracking.store.artifacts",
    "file_lock": "mlflow_agentic.tracking.store.check",
    "find_journals": "mlflow_agentic.tracking.store.journal",
    "flush_journal": "mlflow_agentic.tracking.store.delivery",
    "journal_dir": "mlflow_agentic.tracking.store.journal",
    "model_sha256": "mlflow_agentic.tracking.store.artifacts",
    "project_run": "mlflow_agentic.tracking.store.uri",
    "restore_command": "mlflow_agentic.tracking.store.retry",
    "send": "mlflow_agentic.tracking.store.delivery",
    "send_pending": "mlflow_agentic.tracking.store.delivery",
    "store_option": "mlflow_agentic.tracking.store.uri",
    "use_store": "mlflow_agentic.tracking.store.uri",
}
__all__ = [
    "view_state",
    "share_view",
    "search_tags",
    "runs_path",
    "new_search_id",
    "mark_model_training",
    "end",
    "begin",
    "active_search",
    "SHARED_VIEW",
    "AGAIN",
    "BackgroundWriter",
    "Connection",
    "JOURNAL_TAG",
    "Journal",
    "Retrying",
    "TAG_MAX",
    "TraceRefused",
    "TrackingUnavailable",
    "check_experiment_live",
    "check_names",
    "check_project_run",
    "check_store",
    "current_uri",
    "deleted_while_running",
    "deliver_trace",
    "downloaded",
    "file_lock",
    "find_journals",
    "flush_journal",
    "journal_dir",
    "model_sha256",
    "project_run",
    "restore_command",
    "send",
    "send_pending",
    "store_option",
    "use_store",
]

if TYPE_CHECKING:
    from mlflow_agentic.tracking.store.artifacts import downloaded, model_sha256
    from mlflow_agentic.tracking.store.check import check_store, file_lock
    from mlflow_agentic.tracking.store.connection import Connection
    from mlflow_agentic.tracking.store.context import (
        active_search,
        begin,
        end,
        new_search_id,
        search_tags,
    )
    from mlflow_agentic.tracking.store.delivery import (
        TraceRefused,
        deliver_trace,
        flush_journal,
        send,
        send_pending,
    )
    from mlflow_agentic.tracking.store.journal import (
        JOURNAL_TAG,
        TAG_MAX,
        Journal,
        find_journals,
        journal_dir,
    )
    from mlflow_agentic.tracking.store.names import check_experiment_live, check_names
    from mlflow_agentic.tracking.store.retry import (
        AGAIN,
        Retrying,
        TrackingUnavailable,
        deleted_while_running,
        restore_command,
    )
    from mlflow_agentic.tracking.store.uri import (
        check_project_run,
        current_uri,
        project_run,
        store_option,
        use_store,
    )
    from mlflow_agentic.tracking.store.views import (
        SHARED_VIEW,
        mark_model_training,
        runs_path,
        share_view,
        view_state,
    )
    from mlflow_agentic.tracking.store.writer import BackgroundWriter

__getattr__ = lazy_getattr(__name__, _EXPORTS)
