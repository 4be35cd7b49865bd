"""Name -> Trainer: the built-ins plus whatever the ``mlflow_agentic.trainers`` entry points add.

A broken entry point warns and is skipped; it never breaks the search.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Iterable
from importlib.metadata import entry_points

from mlflow_agentic.core.errors import UserInputError, did_you_mean
from mlflow_agentic.core.types import COMBINERS, AttemptRecord
from mlflow_agentic.trainers.base import Trainer
from mlflow_agentic.trainers.builtin import builtin_trainers

ENTRY_POINT_GROUP = "mlflow_agentic.trainers"
_registry: dict[str, Trainer] | None = None


def _load_entry_points() -> list[Trainer]:
    found: list[Trainer] = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            obj = ep.load()
            if not isinstance(obj, Trainer) and callable(obj):
                obj = obj()
            items = obj if isinstance(obj, (list, tuple)) else [obj]
            for item in items:
                if not isinstance(item, Trainer):
                    raise TypeError(f"expected a Trainer, got {type(item).__name__}")
                package = ep.dist.name if ep.dist is not None else ep.value
                found.append(dataclasses.replace(item, source=package))
        except Exception as exc:  # a plugin must never break the search
            warnings.warn(f"skipping trainer entry point {ep.name!r} ({ep.value}): {exc}",
                          stacklevel=2)
    return found


def trainer_registry(refresh: bool = False) -> dict[str, Trainer]:
    """All known trainers by name (built-ins first; a plugin cannot shadow a built-in)."""
    global _registry
    if _registry is None or refresh:
        registry = {t.name: t for t in builtin_trainers()}
        for trainer in _load_entry_points():
            if trainer.name in registry:
                warnings.warn(f"trainer entry point {trainer.name!r} shadows an existing trainer;"
                              " ignored", stacklevel=2)
                continue
            registry[trainer.name] = trainer
        _registry = registry
    return _registry


def register_trainer(trainer: Trainer) -> None:
    """Add a trainer in-process (tests, notebooks). Packages should use the entry-point group."""
    trainer_registry()[trainer.name] = trainer


def get_trainer(name: str) -> Trainer:
    registry = trainer_registry()
    if name not in registry:
        raise UserInputError(f"unknown trainer {name!r}. {did_you_mean(name, list(registry))}")
    return registry[name]


def resolve_trainers(names: Iterable[str] | None, task: str) -> list[str]:
    """The allowed trainer names for a task, in registry order, checked; by default (``names``
    None) every trainer for the task except those searched on request only."""
    registry = trainer_registry()
    if names is None:
        return [n for n, t in registry.items() if t.supports(task) and not t.on_request]
    names = list(dict.fromkeys(n.strip() for n in names if n and n.strip()))
    if not names:
        raise UserInputError(f"no trainers given. Valid: {', '.join(registry)}")
    for name in names:
        trainer = get_trainer(name)
        if not trainer.supports(task):
            raise UserInputError(f"trainer {name!r} does not support a {task} task "
                                 f"(it supports {', '.join(sorted(trainer.tasks))})")
    return names


def model_requirements(record: AttemptRecord) -> tuple[str, ...]:
    """Distributions a logged model of this attempt needs: its trainer's, or for an ensemble or
    a stack (params ``trainers``: the members' trainer names) every member's."""
    combined = record.candidate.trainer in COMBINERS
    names = record.params.get("trainers") if combined else None
    names = names or [record.candidate.trainer]
    registry = trainer_registry()
    return tuple(dict.fromkeys(r for n in names if n in registry
                               for r in registry[n].requirements))
