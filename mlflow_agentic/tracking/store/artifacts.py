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
    import os

    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")  # not for our users
    with tempfile.TemporaryDirectory(prefix=f"mlflow-agentic-{purpose}-") as tmp:
        yield Path(mlflow.artifacts.download_artifacts(
            artifact_uri=artifact_uri, run_id=run_id, artifact_path=artifact_path, dst_path=tmp))


ADDED_ON_DOWNLOAD = {"registered_model_meta"}
"""What MLflow writes into a registered version's download (its name and number): not the
model's files."""


def folder_sha256(folder: Path) -> str:
    """One digest of a folder's files: their relative paths and contents, in path order."""
    import hashlib

    digest = hashlib.sha256()
    for path in sorted(p for p in Path(folder).rglob("*")
                       if p.is_file() and p.name not in ADDED_ON_DOWNLOAD):
        digest.update(str(path.relative_to(folder)).encode() + b"\0")
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        digest.update(b"\0")
    return digest.hexdigest()


def model_sha256(model_uri: str) -> str:
    """The digest of a logged model's (or a version's) files as the store holds them."""
    with downloaded(model_uri, purpose="digest") as folder:
        return folder_sha256(folder)
