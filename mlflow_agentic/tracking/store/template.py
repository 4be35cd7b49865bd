"""A new sqlite store made from a copy of an empty one, instead of MLflow's schema migrations.

MLflow makes a new sqlite store by running every alembic migration since 1.0: 1.29 s on an
idle core here, 2.55 s with the other core busy, out of a 20 s budget; a copy takes 0.06-0.09 s
(``benchmarks/new_store.py``).
The first new store on a machine is made that way and kept, emptied, in the user's cache
(one per MLflow version); a later new store is a copy of it. The copy holds no experiment:
MLflow adds its Default experiment when it opens the copy, with the artifact location of *this*
store, so nothing of the store the copy came from leaks into it. MLflow's own test suite makes
its sqlite stores the same way (a cached, migrated database copied per test).

No cache folder, a full disk while copying, or a cached store cut short or of another schema
only means the store is made by the migrations, as it would have been. A copy MLflow then
cannot open (``check._make_or_open``) is removed and its error said, and the cached store is
forgotten, so the next new store is migrated.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import sqlite3
from pathlib import Path

log = logging.getLogger(__name__)

CACHE_ENV = "MLFLOW_AGENTIC_CACHE_DIR"
"""Where the empty store is kept (default: ``$XDG_CACHE_HOME/mlflow-agentic``, else
``~/.cache/mlflow-agentic``); an empty value turns the copy off."""


def template_path() -> Path | None:
    """The empty store for the installed MLflow, or None when copying is off."""
    import mlflow

    folder = os.environ.get(CACHE_ENV)
    if folder == "":
        return None
    if folder is None:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"),
                                                                 ".cache")
        folder = os.path.join(base, "mlflow-agentic")
    return Path(folder) / f"empty-store-mlflow-{mlflow.__version__}.db"


def _is_empty_store(template: Path) -> bool:
    """Whether ``template`` is a store at the installed MLflow's schema with no experiment
    (not a file cut short, another program's, or one an MLflow build of the same version
    number migrated differently)."""
    if not template.is_file():
        return False
    try:
        from mlflow.store.db.utils import _get_latest_schema_revision

        head = _get_latest_schema_revision()  # MLflow reads it again to open the copy
        with contextlib.closing(sqlite3.connect(f"file:{template}?mode=ro", uri=True)) as db:
            versions = db.execute("SELECT version_num FROM alembic_version").fetchall()
            experiments = db.execute("SELECT COUNT(*) FROM experiments").fetchone()[0]
    except Exception:  # noqa: BLE001 - no copy; the migrations make the store
        return False
    return versions == [(head,)] and experiments == 0


def seed(path: Path) -> bool:
    """Put a copy of the empty store at ``path`` (a new store); True if there was one to copy.
    The copy is written beside ``path`` and moved into place, so ``path`` is never half a
    copy."""
    template = template_path()
    if template is None or not _is_empty_store(template):
        return False
    part = path.with_name(f".{path.name}.{os.getpid()}.part")
    try:
        with open(template, "rb") as source, open(part, "xb") as copy:  # the umask's mode
            shutil.copyfileobj(source, copy)
        os.replace(part, path)
        return True
    except OSError as exc:  # a full disk, say: the migrations will name it
        log.debug("not copying the empty store %s: %s", template, exc)
        return False
    finally:
        with contextlib.suppress(OSError):
            os.unlink(part)


def keep(path: Path) -> None:
    """Keep the store MLflow has just made at ``path`` as the empty store, its experiments
    removed (MLflow adds its Default one to each copy it opens)."""
    template = template_path()
    if template is None:
        return
    part = template.with_name(f".{template.name}.{os.getpid()}.part")
    try:
        template.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.closing(sqlite3.connect(path)) as made, \
                contextlib.closing(sqlite3.connect(part)) as empty:
            made.backup(empty)  # a consistent snapshot, whatever MLflow's pool holds open
            empty.execute("DELETE FROM experiment_tags")
            empty.execute("DELETE FROM experiments")
            empty.commit()
        os.replace(part, template)
    except (OSError, sqlite3.Error) as exc:
        log.debug("not keeping an empty store at %s: %s", template, exc)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(part)


def forget() -> None:
    """Remove the empty store (a copy of it did not open)."""
    template = template_path()
    if template is not None:
        with contextlib.suppress(OSError):
            template.unlink()
