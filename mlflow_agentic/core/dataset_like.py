"""``DatasetLike``: what the loop, the proposers and the trainers read of a dataset.

``data.Dataset`` is one; a proposer or a trainer written against this protocol sees every field
it may use with its type (the task is a ``Task``, not any string)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from mlflow_agentic.core.types import Task


class ColumnLike(Protocol):
    """What is known of one column (aggregates only, never values)."""

    @property
    def kind(self) -> str: ...  # numeric, categorical, datetime, id, constant, excluded

    @property
    def n_unique(self) -> int: ...

    @property
    def missing_rate(self) -> float: ...

    @property
    def dayfirst(self) -> bool: ...  # a date column written day before month


class DatasetLike(Protocol):
    """A supervised table: its rows (``frame``, ``X``, ``y``), its target and task, and its
    columns typed once."""

    @property
    def name(self) -> str: ...

    @property
    def target(self) -> str: ...

    @property
    def task(self) -> Task: ...

    @property
    def classes(self) -> tuple[Any, ...]: ...

    @property
    def frame(self) -> Any: ...  # a pandas DataFrame

    @property
    def columns(self) -> Mapping[str, ColumnLike]: ...

    @property
    def n_rows(self) -> int: ...

    @property
    def X(self) -> Any: ...  # noqa: N802 - the sklearn convention

    @property
    def y(self) -> Any: ...

    def columns_of(self, kind: str) -> list[str]: ...

    @property
    def feature_columns(self) -> list[str]: ...

    @property
    def excluded_columns(self) -> dict[str, str]: ...  # not features, with why
