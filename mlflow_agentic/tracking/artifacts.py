"""Artifacts read back from the store, with no copy outliving the read.

On a remote store MLflow downloads into a new temporary folder per call and leaves it there;
every read-back here goes into a folder removed when the ``with`` block ends.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import mlflow


@contextmanager
def downloaded(artifact_uri: str | None = None, *, run_id: str | None = None,
               artifact_path: str | None = None, purpose: str = "artifact") -> Iterator[Path]:
    """The local path of an artifact (``artifact_uri``, e.g. ``models:/name/3``, or
    ``run_id`` + ``artifact_path``), valid inside the block only. ``purpose`` names the
    temporary folder (``mlflow-agentic-<purpose>-``), so a leftover says what left it."""
    with tempfile.TemporaryDirectory(prefix=f"mlflow-agentic-{purpose}-") as tmp:
        yield Path(mlflow.artifacts.download_artifacts(
            artifact_uri=artifact_uri, run_id=run_id, artifact_path=artifact_path, dst_path=tmp))
