"""``Trainer``: a named recipe for an unfitted sklearn Pipeline plus its search space.

A third-party package adds one by exposing a ``Trainer`` (or a zero-argument callable returning
one or a list) under the entry-point group ``mlflow_agentic.trainers``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sklearn.pipeline import Pipeline

from mlflow_agentic.core.dataset_like import DatasetLike
from mlflow_agentic.core.errors import ProposerOutputError
from mlflow_agentic.trainers.preprocessing import (
    build_preprocessor,
    category_columns,
    value_bins,
)
from mlflow_agentic.trainers.space import ParamSpec

ALL_TASKS = frozenset({"binary", "multiclass", "regression"})


@dataclass(frozen=True)
class Trainer:
    """``build_model(task, params, random_state)`` returns an unfitted estimator.

    ``space(dataset)`` and ``defaults(dataset)`` may scale with the data size; every default must
    lie inside the space (Optuna is seeded with it).
    """

    name: str
    build_model: Callable[[str, dict[str, Any], int], Any]
    space: Callable[[DatasetLike], dict[str, ParamSpec]]
    defaults: Callable[[DatasetLike], dict[str, Any]]
    tasks: frozenset[str] = ALL_TASKS
    preprocessing: str = "ordinal"
    requirements: tuple[str, ...] = ()
    """Distributions a logged model of this trainer needs (pinned at logging time)."""
    description: str = ""
    cost: int = 2
    """Relative cost of one fit at the defaults (1 cheap .. 3 expensive): seeds run cheap first."""
    on_request: bool = False
    """Searched only when named (``--trainers``), not by default: a trainer the benchmark
    suite did not show to help on average for its fit time."""
    source: str = field(default="builtin", compare=False)

    def supports(self, task: str) -> bool:
        return task in self.tasks

    def resolve_params(self, dataset: DatasetLike, params: Mapping[str, Any] | None
                       ) -> dict[str, Any]:
        """Defaults overlaid with ``params``, each coerced to its declared type.

        Raises ``ProposerOutputError`` naming the bad parameter and the valid ones.
        """
        if params is None:
            params = {}
        if not isinstance(params, Mapping):
            raise ProposerOutputError(
                f"params for trainer {self.name!r} must be a mapping of name -> value, "
                f"got {type(params).__name__}: {params!r}"
            )
        space = self.space(dataset)
        resolved = dict(self.defaults(dataset))
        for key, value in params.items():
            if key not in space:
                raise ProposerOutputError(
                    f"unknown parameter {key!r} for trainer {self.name!r}. "
                    f"Valid: {', '.join(sorted(space))}"
                )
            try:
                resolved[key] = space[key].coerce(value)
            except (TypeError, ValueError) as exc:
                raise ProposerOutputError(
                    f"bad value for {self.name}.{key}: {exc} (space: {space[key].describe()})"
                ) from exc
        return resolved

    def model(self, dataset: DatasetLike, resolved: Mapping[str, Any], random_state: int = 0
              ) -> Any:
        """The unfitted model for ``dataset``'s preprocessed columns (``resolved`` params):
        a booster that can is told which columns are category codes, and bins a code-like
        numeric column's values one per bin (``value_bins``)."""
        from mlflow_agentic.trainers.transforms import bin_values, split_on_categories

        model = split_on_categories(self.build_model(dataset.task, dict(resolved), random_state),
                                    category_columns(dataset, self.preprocessing))
        return bin_values(model, value_bins(dataset))

    def pipeline(self, dataset: DatasetLike, params: Mapping[str, Any] | None = None,
                 random_state: int = 0) -> Pipeline:
        """Unfitted ``Pipeline(inputs, preprocess, model)`` for this dataset: ``inputs`` checks
        the raw columns (optional ones may be absent), ``preprocess`` types and encodes them."""
        from mlflow_agentic.trainers.transforms import InputColumns

        model = self.model(dataset, self.resolve_params(dataset, params), random_state)
        return Pipeline([("inputs", InputColumns(unused=sorted(dataset.excluded_columns))),
                         ("preprocess", build_preprocessor(dataset, self.preprocessing)),
                         ("model", model)])
