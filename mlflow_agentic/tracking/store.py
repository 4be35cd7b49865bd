"""The tracking store before and during a search: checked up front, initialised once, and
every call retried with backoff (and a message) while the store does not answer.

A search must not start against a store it cannot write (an unwritable sqlite path, a server
that is down): that is refused before the holdout is sealed. A store that stops answering
mid-search is retried with backoff, saying so on stderr: the attempts' records (journaled on
disk, ``tracking.journal``) until it answers again while the search goes on; a call the search
waits for, for ``MLFLOW_AGENTIC_TRACKING_RETRY_SECONDS`` (default 300 s). If the store does not
come back, ``TrackingUnavailable`` says what was recorded, and where the rest waits.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from mlflow_agentic.core.errors import AgenticError, UserInputError

RETRY_SECONDS_ENV = "MLFLOW_AGENTIC_TRACKING_RETRY_SECONDS"
DEFAULT_RETRY_SECONDS = 300.0
FIRST_WAIT = 1.0
MAX_WAIT = 30.0
T = TypeVar("T")
AGAIN = "run the search again when the store is back"
"""What to do after the store stopped answering, when nothing waits in a journal."""


class TrackingUnavailable(AgenticError):
    """The tracking store stopped answering and did not come back within the retry window."""


def default_uri() -> str:
    return os.environ.get("MLFLOW_TRACKING_URI") or "sqlite:///mlflow.db"


MAX_EXPERIMENT_NAME = 500
"""MLflow's limits, checked before the search so nothing is computed for a name it refuses."""


def current_uri() -> str:
    """The tracking URI this process records to (what the commands print)."""
    import mlflow

    return mlflow.get_tracking_uri()


def project_run():
    """Under ``mlflow run``, the project's run as the outer run (work nests under it); else a
    context that does nothing."""
    import contextlib

    if not os.environ.get("MLFLOW_RUN_ID"):
        return contextlib.nullcontext()
    import mlflow

    return mlflow.start_run()


def use_store(uri: str | None) -> None:
    """Record to ``uri`` from now on (None: leave the current store)."""
    if uri:
        import mlflow

        mlflow.set_tracking_uri(uri)


def check_names(*, register_name: str | None, experiment: str | None, dataset_name: str,
                register: bool = True) -> None:
    """Refuse a registered-model or experiment name MLflow would refuse at the end of the
    search (``a/b`` searched 9 attempts, then failed at registration): before any fit."""
    model = register_name or f"{dataset_name}-agentic"
    given = "--register-name" if register_name else "the registered-model name (from the file)"
    if register:
        if not model.strip():
            raise UserInputError(f"{given} is blank: give a name, e.g. churn-agentic")
        bad = [c for c in ("/", ":") if c in model]
        if bad or model.strip() in (".", ".."):
            fixed = model.replace("/", "-").replace(":", "-").strip(".") or "my-model"
            raise UserInputError(f"{given} {model!r}: a registered model's name cannot contain "
                                 f"'/' or ':' or be '.' or '..' (MLflow's rule); e.g. "
                                 f"--register-name {fixed}")
    name = experiment or f"{dataset_name}-agentic"
    if not name.strip():
        raise UserInputError("--experiment is blank: give a name, or leave it out for "
                             f"{dataset_name}-agentic")
    if len(name) > MAX_EXPERIMENT_NAME:
        raise UserInputError(f"--experiment is {len(name)} characters; MLflow allows at most "
                             f"{MAX_EXPERIMENT_NAME}")


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
                f"the tracking server {uri} is not answering ({_reason(exc)}). Start it (e.g. "
                f"mlflow server --backend-store-uri sqlite:///mlflow.db --port 5000), "
                f"{use_local}") from exc
        return uri
    if uri.startswith("sqlite:///"):
        path = Path(uri.removeprefix("sqlite:///"))
        _check_writable(path, uri, use_local)
        with _file_lock(path.with_name(path.name + ".lock")):
            _initialise(uri)
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


def _initialise(uri: str, tries: int = 5) -> None:
    """Create the tables and run the migrations. Another program opening the new store at
    the same moment (``mlflow ui``, a script) migrates it too, without our lock: its half-done
    schema (a duplicate column, a table already there or not yet there, a version row moved
    under alembic) is waited out; a store still failing after ``tries`` seconds is reported."""
    import mlflow

    from mlflow_agentic.core.errors import disk_full

    path = Path(uri.removeprefix("sqlite:///"))
    new = not path.exists() or path.stat().st_size == 0
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
def _file_lock(path: Path):
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


def is_transient(exc: BaseException) -> bool:
    """A store that does not answer (refused, timed out, 502/503/504, sqlite locked), as
    opposed to a request it answered with an error."""
    import requests

    if isinstance(exc, (requests.ConnectionError, requests.Timeout, ConnectionError,
                        TimeoutError)):
        return True
    text = str(exc)
    return any(marker in text for marker in (
        "failed with exception", "Max retries exceeded", "Connection refused",
        "TEMPORARILY_UNAVAILABLE", "database is locked", "status code 502",
        "status code 503", "status code 504"))


def _reason(exc: BaseException) -> str:
    text = str(exc)
    for marker in ("Connection refused", "timed out", "Name or service not known",
                   "database is locked"):
        if marker in text:
            return marker.lower()
    return f"{type(exc).__name__}: {text[:200]}"


class Retrying:
    """Calls against the store, retried with exponential backoff while it does not answer.

    ``say`` gets one line per retry; after ``window`` seconds ``TrackingUnavailable`` is raised
    with ``recorded()`` (what is safely in the store) in its message. After that, calls fail
    at once (``down``), so error handling does not wait a second window.
    """

    def __init__(self, uri: str, recorded: Callable[[], str] = lambda: "",
                 say: Callable[[str], None] | None = None,
                 window: float | None = None, meanwhile: str = "",
                 next_step: Callable[[], str] = lambda: AGAIN) -> None:
        self.uri = uri
        self.recorded = recorded
        self.next_step = next_step
        self.say = say or (lambda line: print(line, file=sys.stderr, flush=True))
        self.window = float(os.environ.get(RETRY_SECONDS_ENV, DEFAULT_RETRY_SECONDS)
                            if window is None else window)
        self.meanwhile = meanwhile
        """With no window (``math.inf``): what goes on while it retries, for the retry line."""
        self.down = False
        self.stopped = threading.Event()
        """Set (``stop``): the retry under way gives up at once, and every later call."""

    def stop(self) -> None:
        self.down = True
        self.stopped.set()

    def call(self, what: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        started, wait, attempt = time.monotonic(), FIRST_WAIT, 0
        while True:
            try:
                result = fn(*args, **kwargs)
            except Exception as exc:
                if not is_transient(exc):
                    raise
                attempt += 1
                left = self.window - (time.monotonic() - started)
                if self.down or left <= 0:
                    self.down = True
                    raise TrackingUnavailable(self._gave_up(what, exc, attempt)) from exc
                wait = min(wait, max(left, 0.1))
                until = (f"giving up in {left:.0f}s" if math.isfinite(left)
                         else self.meanwhile or "retrying until it answers")
                self.say(f"tracking store {self.uri} is not answering ({_reason(exc)}) while "
                         f"{what}; retry {attempt} in {wait:.0f}s, {until}")
                self.stopped.wait(wait)
                wait = min(wait * 2, MAX_WAIT)
            else:
                if attempt:
                    self.say(f"tracking store {self.uri} is answering again; the search goes on")
                return result

    def _gave_up(self, what: str, exc: BaseException, attempts: int) -> str:
        recorded = self.recorded()
        over = f" over {self.window:.0f}s" if math.isfinite(self.window) else ""
        return (f"the tracking store {self.uri} stopped answering while {what} "
                f"({_reason(exc)}; {attempts} tries{over}). "
                + (f"Recorded there before it stopped: {recorded}. " if recorded else "")
                + f"Nothing was registered; {self.next_step()}")


class RetryingClient:
    """An ``MlflowClient`` whose every method goes through ``Retrying.call``."""

    def __init__(self, client, retrying: Retrying) -> None:
        self._client = client
        self._retrying = retrying

    def __getattr__(self, name: str):
        attr = getattr(self._client, name)
        if not callable(attr):
            return attr

        def call(*args, **kwargs):
            return self._retrying.call(f"calling {name}", attr, *args, **kwargs)

        return call


def deleted_while_running(exc: BaseException) -> str | None:
    """The id of the run MLflow refused to write because it (or its experiment) was deleted
    while the search ran, or None for any other error (MLflow says it only in words)."""
    import re

    match = re.search(r"The run (\w+) must be in the 'active' state\. Current state is "
                      r"deleted", str(exc))
    return match.group(1) if match else None


def restore_command(run_id: str) -> tuple[str, str | None]:
    """How to bring back a deleted run: its experiment's restore (or the run's, when the
    store cannot say which experiment), and the search run to resume then (the run's parent,
    or the run itself; None when the store cannot say)."""
    import mlflow

    try:
        run = mlflow.MlflowClient().get_run(run_id)
    except Exception:  # noqa: BLE001 - the store itself may be gone too
        return f"mlflow runs restore --run-id {run_id}", None
    search = run.data.tags.get("mlflow.parentRunId", run_id)
    return f"mlflow experiments restore --experiment-id {run.info.experiment_id}", search
