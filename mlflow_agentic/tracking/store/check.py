"""A search must not start against a store it cannot write (an unwritable sqlite path, a
server that is down, a disk that fills while the store is made): that is refused, with what to
do instead, before the holdout is sealed; a new sqlite store is initialised once, under a file
lock (a copy of a cached empty store when there is one: ``template``)."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from mlflow_agentic.core.errors import UserInputError
from mlflow_agentic.tracking.store import template
from mlflow_agentic.tracking.store.retry import reason_of
from mlflow_agentic.tracking.store.uri import default_uri

if TYPE_CHECKING:
    from collections.abc import Iterator

KNOWN_SCHEMES = {"http", "https", "sqlite", "file", "postgresql", "mysql", "mssql", "databricks",
                 "databricks-uc", "uc"}
"""The tracking URI schemes MLflow's tracking and registry stores take."""


def check_store(uri: str | None = None) -> str:
    """Refuse a store this process cannot use, with what to do instead; initialise a new
    sqlite store once (under a file lock, so two first searches do not race in the schema
    migration). Returns the URI checked."""
    uri = uri or default_uri()
    use_local = ("or use a local store: --tracking-uri sqlite:///mlflow.db (the default when "
                 "MLFLOW_TRACKING_URI is unset)")
    if uri.startswith(("http://", "https://")):
        import requests

        try:
            requests.get(uri.rstrip("/") + "/health", timeout=10)
        except requests.RequestException as exc:
            raise UserInputError(
                f"the tracking server {uri} is not answering ({reason_of(exc)}). Start it (e.g. "
                f"mlflow server --backend-store-uri sqlite:///mlflow.db --port 5000), "
                f"{use_local}") from exc
        return uri
    if uri.startswith("sqlite:///"):
        path = Path(uri.removeprefix("sqlite:///"))
        _check_writable(path, uri, use_local)
        with file_lock(path.with_name(path.name + ".lock")):
            _make_or_open(uri, path)
        return uri
    if uri.startswith("file:") or "://" not in uri:
        path = Path(uri.removeprefix("file://").removeprefix("file:"))
        _check_writable(path / "x", uri, use_local)
        return uri
    scheme = uri.split("://", 1)[0].split("+", 1)[0].lower()
    if scheme not in KNOWN_SCHEMES:
        raise UserInputError(f"tracking URI {uri!r}: MLflow has no store for {scheme!r}:// "
                             f"(expected one of {', '.join(sorted(KNOWN_SCHEMES))}); "
                             f"{use_local}")
    return uri


def _make_or_open(uri: str, path: Path) -> None:
    """A new store is a copy of the cached empty one when there is one (``template``: no
    migrations to run), else MLflow's migrations make it and it is kept as that copy."""
    new = not path.exists() or path.stat().st_size == 0
    if new and template.seed(path):
        try:
            _initialise(uri, new=True)  # a copy that does not open is removed, and said
        except UserInputError:
            template.forget()  # so is the empty store: the next new store is migrated
            raise
        return
    _initialise(uri, new=new)
    if new:
        template.keep(path)


def _initialise(uri: str, tries: int = 5, *, new: bool) -> None:
    """Create the tables and run the migrations. Another program opening the new store at
    the same moment (``mlflow ui``, a script) migrates it too, without our lock: its half-done
    schema (a duplicate column, a table already there or not yet there, a version row moved
    under alembic) is waited out; a store still failing after ``tries`` seconds is reported."""
    import mlflow

    from mlflow_agentic.core.errors import disk_full

    path = Path(uri.removeprefix("sqlite:///"))
    for attempt in range(1, tries + 1):
        try:
            mlflow.MlflowClient(tracking_uri=uri).search_experiments(max_results=1)
            return
        except Exception as exc:
            full = disk_full(exc) or (new and _disk_full_at(path))
            if attempt < tries and not full:  # sqlite or alembic mid-migration elsewhere
                time.sleep(1.0)
                continue
            if new:  # a half-made store would fail every later run: it goes
                _dispose_store(uri, path)
            if full:
                raise UserInputError(
                    f"the disk is full (No space left on device): the tracking store {uri} "
                    "could not be created" + (" and its half-made file was removed" if new
                                              else "") + ". Free space on that disk, or "
                    "point --tracking-uri at another, and run the command again") from exc
            raise UserInputError(f"cannot open the tracking store {uri}: {exc}" + (
                " (the half-made file was removed)" if new else "")) from exc


def _disk_full_at(path: Path) -> bool:
    """Whether the folder of ``path`` has (almost) no room left: sqlite and alembic do not
    always say that a failed create was a full disk."""
    try:
        stats = os.statvfs(path.parent if str(path.parent) else ".")
    except OSError:
        return False
    return stats.f_bavail * stats.f_frsize < 256 * 1024


def _dispose_store(uri: str, path: Path) -> None:
    """Remove the store file this call began (and sqlite's side files)."""
    import contextlib

    for leftover in (path, path.with_name(path.name + "-journal"),
                     path.with_name(path.name + "-wal")):
        with contextlib.suppress(OSError):
            leftover.unlink()


def _check_writable(path: Path, uri: str, instead: str) -> None:
    folder = path.parent if path.parent != Path("") else Path(".")
    if path.exists() and not os.access(path, os.W_OK):
        raise UserInputError(f"cannot write the tracking store {uri}: {path} is read-only; "
                             f"make it writable, {instead}")
    existing = folder
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise UserInputError(f"cannot write the tracking store {uri}: {existing} is not a "
                             f"writable directory; pass a writable location, {instead}")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with open(path.parent / f".mlflow-agentic-write-check-{os.getpid()}", "w"):
            pass
        os.remove(path.parent / f".mlflow-agentic-write-check-{os.getpid()}")
    except OSError as exc:
        raise UserInputError(f"cannot write the tracking store {uri}: {exc.strerror or exc} "
                             f"({exc.filename or folder}); pass a writable location, "
                             f"{instead}") from exc


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` for the block (other processes on this machine wait)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock, MLflow's own retry
        yield
        return
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
