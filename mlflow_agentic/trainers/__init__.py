"""Trainers: name -> unfitted sklearn Pipeline + search space, extensible by entry points."""

from mlflow_agentic.trainers.base import Trainer
from mlflow_agentic.trainers.registry import (
    ENTRY_POINT_GROUP,
    get_trainer,
    register_trainer,
    resolve_trainers,
    trainer_registry,
)
from mlflow_agentic.trainers.space import CategoricalParam, FloatParam, IntParam

__all__ = [
    "ENTRY_POINT_GROUP",
    "CategoricalParam",
    "FloatParam",
    "IntParam",
    "Trainer",
    "get_trainer",
    "register_trainer",
    "resolve_trainers",
    "trainer_registry",
]
