"""Every attempt as code: ``attempt.py``, a short standalone script that rebuilds the attempt's
pipeline with its hyperparameters from the file the search read, scores it on the search's CV
folds (the recorded score, to 4 decimals) and fits it on the training rows: for the selected
attempt, the model the holdout scored. An ensemble's or a stack's script refits its members and
combines them with the recorded weights. ``fit(everything)`` is the model the search served when
it refit the selected recipe on every labelled row (the default; the script is written before the
holdout has spoken, so it offers that fit rather than doing it). Databricks AutoML's notebook per
trial, as a script a user can edit and rerun."""

from __future__ import annotations

import math
import pprint
from typing import Any

from mlflow_agentic.core.types import COMBINERS, AttemptRecord

_HEAD = '''"""Attempt {index:02d} of search {search}: {title}.

Rebuilds this attempt from {data_name} as the search did (the sealed holdout left out, the
flagged columns excluded), {what}

    python attempt.py [DATA_FILE]      (default: the file the search read)
"""

import sys

from mlflow_agentic.core.metrics import resolve_metric
from mlflow_agentic.data import Dataset
from mlflow_agentic.engine.evaluate.cv import make_splits
from mlflow_agentic.engine.evaluate.evaluation import cross_validate
from mlflow_agentic.frontdoor.orchestrator import SplitOptions, seal
from mlflow_agentic.frontdoor.refit_full import all_rows
from mlflow_agentic.trainers import get_trainer

DATA = sys.argv[1] if len(sys.argv) > 1 else {source!r}
SEED = {seed}

dataset = Dataset.from_path(DATA, {target!r}, task={task!r})
task = seal(dataset, split=SplitOptions(**{split!r}), cv={cv!r}, cv_scheme={cv_scheme!r},
            random_state=SEED, keep_flagged_columns={keep!r}, large_rows={large_rows!r})
train = task.briefing.dataset  # the training rows the search searched
folds = make_splits(train, {n_splits}, SEED, task.briefing.cv_scheme)
metric = resolve_metric({metric!r}, train.task)
everything = all_rows(train, task.holdout)  # the training and the holdout rows
'''

_SERVED = '''
# If this attempt was selected, the search served fit(everything): the same recipe refit on the
# training and holdout rows once the holdout had scored `model` (unless it ran with
# --no-refit-full; the selected attempt's run has the param served_rows).
'''

_SINGLE = '''
TRAINER = {trainer!r}
PARAMS = {params}


def pipeline(rows=train):
    """This attempt's preprocessing and model, with its hyperparameters."""
    return get_trainer(TRAINER).pipeline(rows, PARAMS, SEED)


def fit(rows):
    """This attempt fitted on every one of ``rows``, as the search refits it."""
    return pipeline(rows).fit(rows.X, rows.y)


cv = cross_validate(pipeline, train, folds, metric)
score = sum(cv.fold_scores) / len(cv.fold_scores)
print(f"CV {{metric.name}} {{score:.4f}} over {{len(folds)}} folds (recorded: {recorded})")
model = fit(train)  # on every training row, as the search's refit
'''

_COMBINED = '''
MEMBERS = {members}  # (trainer, hyperparameters) of each member, in order
{combine_args}

from mlflow_agentic.trainers.stacked import StackedEnsemble  # noqa: E402
from mlflow_agentic.trainers.transforms import WeightedEnsemble  # noqa: E402

for name, params in MEMBERS:  # each member's own CV on the search's folds
    cv = cross_validate(lambda: get_trainer(name).pipeline(train, params, SEED), train, folds,
                        metric)
    print(f"member {{name}}: CV {{metric.name}} {{sum(cv.fold_scores) / len(cv.fold_scores):.4f}}")


def fit(rows):
    """Each member fitted on every one of ``rows``, combined with the recorded weights."""
    fitted = [get_trainer(name).pipeline(rows, params, SEED).fit(rows.X, rows.y)
              for name, params in MEMBERS]
    classes = list(rows.classes) if rows.task != "regression" else None
    return {combine}


model = fit(train)  # on every training row, as the search's refit
print("combined as the search combined them; its own CV (recorded: {recorded}) is nested: the "
      "weights were chosen on other folds' rows, fold by fold (see the attempt's run)")
'''


def plain(value: Any) -> Any:
    """``value`` with NumPy scalars and arrays as Python numbers and lists (a literal)."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def attempt_script(record: AttemptRecord, recipe: dict, members: dict[int, tuple[str, dict]],
                   *, search: str, n_splits: int, seed: int) -> str | None:
    """The script of ``record`` (None when it cannot be rebuilt from a file: a data frame the
    search was given, a code-mode candidate, a member not seen)."""
    if not recipe.get("source") or record.candidate.code is not None:
        return None
    recorded = (f"{record.metric} {record.score:.4f}" if math.isfinite(record.score)
                else "no CV score: it failed or was cut")
    trainer = record.candidate.trainer
    head = dict(index=record.index, search=search, title=record.candidate.title,
                data_name=_in_docstring(recipe["source"].rsplit("/", 1)[-1]),
                source=recipe["source"],
                seed=seed, target=recipe["target"], task=recipe["task"], split=recipe["split"],
                cv=recipe["cv"], cv_scheme=recipe["cv_scheme"], keep=recipe[
                    "keep_flagged_columns"], large_rows=recipe["large_rows"],
                n_splits=n_splits, metric=record.metric)
    if trainer not in COMBINERS:
        head["what"] = ("scores it on the search's CV folds and fits it on every training "
                        "row.")
        return (_HEAD.format(**head) + _SINGLE.format(
            trainer=trainer, params=_literal(plain(record.params)), recorded=recorded)
            + _SERVED)
    indices = list(record.params.get("members", []))
    if any(i not in members for i in indices):
        return None
    head["what"] = ("refits its members on every training row and combines them with the "
                    "recorded weights.")
    listed = [(members[i][0], plain(members[i][1])) for i in indices]
    if trainer == "stack":
        args = (f"COEF = {_literal(plain(record.params['coef']))}\n"
                f"INTERCEPT = {_literal(plain(record.params['intercept']))}")
        combine = "StackedEnsemble(fitted, COEF, INTERCEPT, classes, rows.task)"
    else:
        args = f"WEIGHTS = {_literal(plain(record.params['weights']))}"
        combine = "WeightedEnsemble(fitted, WEIGHTS, classes)"
    return _HEAD.format(**head) + _COMBINED.format(
        members=_literal(listed), combine_args=args, combine=combine, recorded=recorded
    ) + _SERVED


def _in_docstring(text: str) -> str:
    """``text`` safe inside the script's docstring: a file name may hold quotes, a backslash
    or a newline (a name with ``\"\"\"`` would end the docstring and run as code); the
    code itself names the file with ``repr``."""
    return repr(text)[1:-1].replace('"', "'")


def _literal(value: Any) -> str:
    return pprint.pformat(value, width=88, sort_dicts=False)
