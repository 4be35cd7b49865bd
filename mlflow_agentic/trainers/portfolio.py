"""The portfolio of proven configurations: what a search tries first.

A zero-shot start (as AutoGluon's portfolios and FLAML's low-cost starts): a short list of
configurations that did well across many public datasets, ordered by expected value per second,
chosen by ``benchmarks/portfolio.py`` (which also builds the leave-one-dataset-out versions the
benchmark suite evaluates it with) and shipped as data in ``portfolio.json``. Each entry is
clipped into the space of the dataset at hand (spaces scale with the rows); the trainers the
portfolio does not name (a plugin's) still start at their defaults.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from mlflow_agentic.core.errors import UserInputError
from mlflow_agentic.trainers.registry import get_trainer
from mlflow_agentic.trainers.space import CategoricalParam, FloatParam, IntParam

if TYPE_CHECKING:
    from mlflow_agentic.core.dataset_like import DatasetLike

SHIPPED = Path(__file__).with_name("portfolio.json")
BUILTIN, DEFAULTS = "builtin", "defaults"
FAMILY = {"binary": "classification", "multiclass": "classification",
          "regression": "regression"}


SLOW = 3
"""A trainer's ``cost`` from which it is not seeded on a large table with a time budget."""


def starts(source: str, dataset: DatasetLike, trainers: Sequence[str], slow: bool = True
           ) -> list[tuple[str, dict, str]]:
    """``(trainer, full params, why)`` to try first, in order: the portfolio's entries for this
    task among ``trainers`` (``source``: ``builtin``, ``defaults`` or a JSON file), then every
    other allowed trainer at its defaults, cheap first; ``slow=False``: not the slow ones
    (``SLOW``: forests, CatBoost), which stay in the sampler's space (on a large table one of
    their fits costs several booster attempts)."""
    entries = [] if source == DEFAULTS else _entries(source, dataset.task)
    out, named = [], set()
    for i, entry in enumerate(entries, start=1):
        name = entry["trainer"]
        if name not in trainers:
            continue
        trainer = get_trainer(name)
        params = {**trainer.defaults(dataset),
                  **clipped(trainer.space(dataset), entry.get("params") or {})}
        out.append((name, params, f"portfolio configuration {i} of {len(entries)}"))
        named.add(name)
    for name in sorted((t for t in trainers if t not in named), key=lambda t: get_trainer(t).cost):
        if not slow and get_trainer(name).cost >= SLOW:
            continue
        out.append((name, get_trainer(name).defaults(dataset), "trainer defaults"))
    return out


def clipped(space: dict, params: dict) -> dict:
    """``params`` moved into ``space``: numbers clipped to their range, a choice the space does
    not offer (or a parameter it does not have) dropped, so the trainer's default stands."""
    out = {}
    for key, value in params.items():
        spec = space.get(key)
        if isinstance(spec, (IntParam, FloatParam)) and isinstance(value, (int, float)):
            value = min(max(value, spec.low), spec.high)
            out[key] = int(round(value)) if isinstance(spec, IntParam) else float(value)
        elif isinstance(spec, CategoricalParam) and spec.contains(value):
            out[key] = value
    return out


def _entries(source: str, task: str) -> list[dict]:
    path = SHIPPED if source == BUILTIN else Path(source)
    if not path.is_file():
        raise UserInputError(f"portfolio {source!r}: not a file; give builtin, defaults or a "
                             'JSON file like {"classification": [{"trainer": "xgboost", '
                             '"params": {"max_depth": 4}}], "regression": [...]}')
    try:
        portfolio = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise UserInputError(f"portfolio {path}: not valid JSON ({exc})") from exc
    family = FAMILY[task]
    entries = portfolio.get(family, []) if isinstance(portfolio, dict) else None
    if not isinstance(entries, list) or not all(
            isinstance(e, dict) and isinstance(e.get("trainer"), str) for e in entries):
        raise UserInputError(f"portfolio {path}: {family!r} must be a list of objects like "
                             '{"trainer": "xgboost", "params": {"max_depth": 4}}')
    return entries
