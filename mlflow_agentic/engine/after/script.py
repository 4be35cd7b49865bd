"""Every attempt as code: ``attempt.py``, a standalone pandas + scikit-learn script (with the
booster's own library where the attempt used one) that a data scientist can read, change and
rerun without mlflow-agentic. It reads the file the search read, types its columns as the search
typed them, takes the training rows and their CV folds from the search run's ``folds.csv``,
scores the attempt's pipeline on those folds (the recorded CV, to 4 decimals), fits it on every
training row and saves it. An ensemble's or a stack's script fits its members and combines them
with the recorded weights, and prints the nested CV the search recorded for the combination.
Databricks AutoML's notebook per trial, as a plain script."""

from __future__ import annotations

import ast
import math
import re
import textwrap
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from mlflow_agentic.core.types import COMBINERS, AttemptRecord
from mlflow_agentic.engine.after import script_code as code
from mlflow_agentic.engine.after.script_model import NotPlain, model_code
from mlflow_agentic.engine.evaluate.cv import KnownFolds, make_splits

if TYPE_CHECKING:
    from mlflow_agentic.data import Dataset

FOLDS_ARTIFACT = "folds.csv"
"""On the search run: each training row's CV fold, then the holdout rows (fold -1)."""


def folds_csv(train: Dataset, recipe: dict, n_splits: int, seed: int, scheme: str,
              known: KnownFolds | None = None) -> str | None:
    """``row,fold``: the position of each training row among the file's labelled rows (in the
    search's order) with the fold that scores it, then the sealed holdout's rows with fold -1.
    None when the folds are not one fold per row (time-ordered CV) or the rows are unknown.
    ``known``: the briefing's folds, taken when they are these (``make_splits``)."""
    rows = recipe.get("rows")
    if not rows or scheme == "time":
        return None
    splits = make_splits(train, n_splits, seed, scheme, known=known)
    fold = np.full(train.n_rows, -1)
    for k, (_, test_rows) in enumerate(splits):
        fold[test_rows] = k
    for k, (fit_rows, _) in enumerate(splits):  # every fold fits on all the other rows
        if not np.array_equal(np.sort(fit_rows), np.flatnonzero(fold != k)):
            return None
    if (fold < 0).any() or len(rows["training"]) != train.n_rows:
        return None
    lines = ["row,fold"]
    lines += [f"{r},{f}" for r, f in zip(rows["training"], fold.tolist(), strict=True)]
    lines += [f"{r},-1" for r in rows["holdout"]]
    return "\n".join(lines) + "\n"


def attempt_script(record: AttemptRecord, train: Dataset, recipe: dict,
                   members: Mapping[int, tuple[str, Mapping[str, Any]]], *, search: str,
                   n_splits: int, seed: int) -> str | None:
    """The script of ``record`` (None when it cannot be written as plain code: a data frame
    the search was given, a code-mode candidate, a member not seen, a third-party model)."""
    if not recipe.get("source") or not recipe.get("rows") or record.candidate.code is not None:
        return None
    trainer = record.candidate.trainer
    combined = trainer in COMBINERS
    indices = list(record.params.get("members", [])) if combined else []
    if any(i not in members for i in indices):
        return None
    try:
        if combined:
            fits = [model_code(members[i][0], dict(members[i][1]), train, seed, f"fit_{i:02d}")
                    for i in indices]
        else:
            fits = [model_code(trainer, dict(record.params), train, seed, "fit")]
    except NotPlain:
        return None
    recorded = (f"{record.metric} {record.score:.4f}" if math.isfinite(record.score)
                else "no CV score: it failed or was cut")
    names = [members[i][0] for i in indices] if combined else [trainer]
    parts = [
        _head(record, recipe, search, names, combined),
        code.imports(fits, train, record.metric) + "\n\n" + code.constants(train, recipe, seed),
        code.prepare(train),
        code.preprocessing(train, {f.style for f in fits}),
        *(f.code for f in fits),
    ]
    if combined:
        parts.append(code.combination(trainer, record.params, indices, train.task))
    parts += [code.score(record.metric, train.task), code.read_rows(_reading(train, recipe))]
    if combined:
        parts.append(code.members_cv(indices, n_splits, record.metric, recorded))
    else:
        parts.append(code.single_cv(n_splits, record.metric, recorded, train.task))
    return "\n\n\n".join(p.strip("\n") for p in parts) + "\n"


def _head(record: AttemptRecord, recipe: dict, search: str, names: list[str],
          combined: bool) -> str:
    data_name = _in_docstring(recipe["source"].rsplit("/", 1)[-1])
    what = (f"fits its members ({', '.join(names)}) on every training row, combines them with the "
            "recorded weights and saves them to model.joblib; it prints each member's CV and the "
            "combination's nested CV as the search recorded it" if combined else
            "scores this attempt's pipeline on the search's CV folds (the recorded CV, to 4 "
            "decimals), fits it on every training row and saves it to model.joblib")
    about = textwrap.fill(
        f"Plain pandas and scikit-learn code: it reads {data_name} as the search read it, takes "
        f"the training rows and their CV folds from folds.csv (an artifact of the search run), "
        f"{what}.", width=96, break_long_words=False, break_on_hyphens=False)
    title = _in_docstring(record.candidate.title)
    return f'''"""Attempt {record.index:02d} of search {search}: {title}.

{about}

    mlflow artifacts download --run-id {search} \\
        --artifact-path folds.csv --dst-path .
    python attempt.py [DATA_FILE] [FOLDS_FILE]

If this attempt was selected, the search served it refit on the training and holdout rows
(fit(X_all, y_all) below) unless it ran with --no-refit-full.
"""'''


def _reading(train: Dataset, recipe: dict) -> str:
    """The pandas call that reads the file as the search read it (delimiter, encoding)."""
    source = recipe["source"]
    if re.search(r"\.(parquet|pq)$", source, re.IGNORECASE):
        return "pd.read_parquet(DATA)"
    args = ["DATA"]
    sep = "\t" if re.search(r"\.tsv(\.\w+)?$", source, re.IGNORECASE) else ","
    encoding = None
    for note in train.notes:
        found = re.search(r"columns separated by ('.+')$", note)
        sep = ast.literal_eval(found.group(1)) if found else sep
        found = re.search(r"is not UTF-8: read as (\S+)$", note)
        encoding = found.group(1) if found else encoding
    if sep != ",":
        args.append(f"sep={sep!r}")
    if encoding:
        args.append(f"encoding={encoding!r}")
    return f"pd.read_csv({', '.join(args)})"


def _in_docstring(text: str) -> str:
    """``text`` safe inside the script's docstring: a file name may hold quotes, a backslash
    or a newline (a name with ``\"\"\"`` would end the docstring and run as code); the
    code itself names the file with ``repr``."""
    return repr(text)[1:-1].replace('"', "'")
