"""Which search (or comparison) this process is running, for the run-context provider plugin
and for the runs the tracker creates itself (child runs, resumed project runs)."""

from __future__ import annotations

import contextlib
import uuid
from contextvars import ContextVar, Token

from mlflow_agentic.core.version import __version__

_ACTIVE: ContextVar[dict[str, str] | None] = ContextVar("mlflow_agentic_search", default=None)


def active_search() -> dict[str, str] | None:
    return _ACTIVE.get()


def new_search_id() -> str:
    return uuid.uuid4().hex[:12]


def begin(**identity) -> Token:
    """From now on, runs started in this context are mlflow-agentic's (``identity``: search id,
    proposer, dataset...), on top of an enclosing comparison's. Pass the token to ``end``."""
    return _ACTIVE.set({**(_ACTIVE.get() or {}), **{k: str(v) for k, v in identity.items()}})


def end(token: Token | None) -> None:
    if token is not None:
        with contextlib.suppress(ValueError):  # created in another context: nothing to undo
            _ACTIVE.reset(token)


def search_tags() -> dict[str, str]:
    """``agentic.version`` and the active search's identity as ``agentic.<key>`` tags."""
    identity = _ACTIVE.get() or {}
    return {"agentic.version": __version__, **{f"agentic.{k}": v for k, v in identity.items()}}
