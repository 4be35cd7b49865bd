"""The parts of ``attempt.py`` every attempt of a search shares, as plain code: the imports, the
file's columns as the search typed them (``prepare``), the preprocessing by style, the metric,
the rows and folds, the CV loop. Each part mirrors the engine's own (``trainers.preprocessing``,
``trainers.transforms``, ``core.metrics``) so the script's CV equals the recorded one."""

from __future__ import annotations

import pprint
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mlflow_agentic.core.types import is_classification
from mlflow_agentic.trainers.preprocessing import NATIVE_MAX_LEVELS, ONE_HOT_MAX_CATEGORIES
from mlflow_agentic.trainers.transforms import MISSING_CATEGORY

if TYPE_CHECKING:
    from mlflow_agentic.data import Dataset
    from mlflow_agentic.engine.after.script_model import ModelCode

_METRIC_IMPORTS = {
    "roc_auc": "roc_auc_score", "roc_auc_ovr": "roc_auc_score", "log_loss": "log_loss",
    "accuracy": "accuracy_score", "balanced_accuracy": "balanced_accuracy_score",
    "f1": "f1_score", "rmse": "root_mean_squared_error", "mae": "mean_absolute_error",
    "r2": "r2_score"}


def _assign(name: str, values: list, width: int = 96) -> str:
    """``NAME = [...]``, wrapped at ``width`` with one indent."""
    line = f"{name} = {values!r}"
    if len(line) <= width:
        return line
    rows, row = [], ""
    for value in map(repr, values):
        if row and 4 + len(row) + len(value) + 1 > width:
            rows.append(row.rstrip())
            row = ""
        row += value + ", "
    return f"{name} = [\n" + "".join(f"    {r.rstrip()}\n" for r in rows + [row]) + "]"


def _literal(value: Any) -> str:
    return pprint.pformat(value, width=92, sort_dicts=False, compact=True)


def imports(fits: Sequence[ModelCode], train: Dataset, metric: str) -> str:
    lines = {"from sklearn.compose import ColumnTransformer",
             "from sklearn.pipeline import Pipeline",
             f"from sklearn.metrics import {_METRIC_IMPORTS[metric]}"}
    for fit in fits:
        lines |= fit.imports
    styles = {f.style for f in fits}
    if styles - {"native"}:
        lines.add("from sklearn.impute import SimpleImputer")
    if "scaled" in styles:
        lines.add("from sklearn.preprocessing import StandardScaler")
    encoders = {"OrdinalEncoder"} | ({"OneHotEncoder"} if "scaled" in styles else set())
    if _many_levels(train, styles):
        encoders.add("TargetEncoder")
        lines.add(f"from sklearn.model_selection import {_target_encoder_folds(train)[0]}")
    lines.add(f"from sklearn.preprocessing import {', '.join(sorted(encoders))}")
    names: dict[str, set[str]] = {}
    for line in lines:  # one line per module, its names sorted (as isort writes them)
        module, imported = line.removeprefix("from ").split(" import ")
        names.setdefault(module, set()).update(n.strip() for n in imported.split(","))
    head = ["import sys", "from pathlib import Path", "", "import joblib", "import numpy as np",
            "import pandas as pd"]
    return "\n".join(head + [f"from {m} import {', '.join(sorted(n))}"
                             for m, n in sorted(names.items())])


def constants(train: Dataset, recipe: dict, seed: int) -> str:
    numeric = train.columns_of("numeric")
    dates = train.columns_of("datetime")
    categorical = train.columns_of("categorical")
    many = {c: train.columns[c].n_unique for c in categorical
            if train.columns[c].n_unique > ONE_HOT_MAX_CATEGORIES}
    lines = [
        "HERE = Path(__file__).resolve().parent",
        "# the file the search read",
        f"SOURCE = {recipe['source']!r}" + (
            "  # noqa: E501" if len(repr(recipe["source"])) > 90 else ""),
        "DATA = sys.argv[1] if len(sys.argv) > 1 else SOURCE",
        'FOLDS = sys.argv[2] if len(sys.argv) > 2 else HERE / "folds.csv"',
        'MODEL = HERE / "model.joblib"',
        f"TARGET = {train.target!r}",
    ]
    if is_classification(train.task):
        lines.append(f"CLASSES = {_literal(list(train.classes))}")
    lines += [
        f"SEED = {seed}", "",
        "# read as numbers",
        _assign("NUMERIC", numeric),
        "# each: days since 1970, month, day of the week",
        _assign("DATES", dates),
        "# text; missing is a level of its own",
        _assign("CATEGORICAL", categorical),
        f"# the categorical columns of over {ONE_HOT_MAX_CATEGORIES} levels: how many",
        f"LEVELS = {_literal(many)}",
        'DATE_PARTS = [f"{d}__{p}" for d in DATES for p in ("days", "month", "dayofweek")]',
        "# (the flagged, ID and constant columns are left out, as the search left them out)",
    ]
    if any(train.columns[c].dayfirst for c in dates):
        lines.append("DAYFIRST = "
                     f"{_literal([c for c in dates if train.columns[c].dayfirst])}")
    return "\n".join(lines)


def prepare(train: Dataset) -> str:
    dates = train.columns_of("datetime")
    dayfirst = any(train.columns[c].dayfirst for c in dates)
    when = ("when = dates(rows[name], name in DAYFIRST)" if dayfirst else
            'when = pd.to_datetime(rows[name], errors="coerce", format="mixed", utc=True)\n'
            "        when = when.dt.tz_localize(None)")
    text = f'''def prepare(rows):
    """The feature columns of raw rows, typed as the search typed them: numbers (text that is no
    number, and an infinity, missing), dates as numbers, categories as text."""
    out = {{}}
    for name in NUMERIC:
        column = rows[name]
        if not pd.api.types.is_numeric_dtype(column):
            column = pd.to_numeric(column.str.strip(), errors="coerce")
        out[name] = column.astype(float).replace([np.inf, -np.inf], np.nan)
    for name in DATES:
        {when}
        out[f"{{name}}__days"] = (when - pd.Timestamp("1970-01-01")).dt.total_seconds() / 86400
        out[f"{{name}}__month"] = when.dt.month.astype(float)
        out[f"{{name}}__dayofweek"] = when.dt.day_of_week.astype(float)
    for name in CATEGORICAL:
        column = rows[name].astype(object)
        out[name] = column.where(column.notna(), {MISSING_CATEGORY!r})
    return pd.DataFrame(out, index=rows.index)
'''
    if dayfirst:
        text += '''

def dates(column, day_first):
    """Dates as timestamps (UTC); day first (13/04/2021) where the year comes last."""
    def parsed(part, first=False):
        return pd.to_datetime(part, errors="coerce", format="mixed", dayfirst=first,
                              utc=True).dt.tz_localize(None)

    if not day_first:
        return parsed(column)
    year_first = column.astype(str).str.match(r"^\\s*\\d{4}[-/.]")
    return parsed(column.where(year_first)).where(
        year_first, parsed(column.where(~year_first), True))
'''
    return text


def preprocessing(train: Dataset, styles: set[str]) -> str:
    """``preprocessing(style)``: the engine's ``build_preprocessor`` for the styles used."""
    lines = ['def preprocessing(style, whole_codes=False):',
             '    """The columns as a model takes them, by style: ' + "; ".join(
                 _STYLES[s] for s in sorted(styles)) + '.',
             '    ``whole_codes``: level codes as integers in a data frame (CatBoost)."""',
             f'    limit = {ONE_HOT_MAX_CATEGORIES} if style == "scaled" else {NATIVE_MAX_LEVELS}'
             '  # levels coded as levels',
             '    numbers = "passthrough"  # missing values kept']
    if styles - {"native"}:
        scale = ('*([("scale", StandardScaler())] if style == "scaled" else [])'
                 if "scaled" in styles else "")
        lines += ['    if style != "native":',
                  '        numbers = Pipeline([("impute", SimpleImputer(strategy="median", '
                  'keep_empty_features=True)),',
                  f'                            {scale}])' if scale else '        ])']
    ordinal = ('OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1,\n'
               '{pad}encoded_missing_value=-1,\n'
               '{pad}dtype=np.int64 if whole_codes else np.float64)')
    if "scaled" in styles:
        lines += ['    encoder = ' + ordinal.format(pad=" " * 30).replace("\n", "\n"),
                  '    if style == "scaled":',
                  '        encoder = OneHotEncoder(handle_unknown="infrequent_if_exist", '
                  f'max_categories={ONE_HOT_MAX_CATEGORIES},',
                  '                                sparse_output=False)']
    else:
        lines.append('    encoder = ' + ordinal.format(pad=" " * 30))
    lines += ['    levelled = [c for c in CATEGORICAL if LEVELS.get(c, 0) <= limit]',
              '    parts = [(name, step, columns) for name, step, columns in (',
              '        ("numeric", numbers, NUMERIC), ("categorical", encoder, levelled),',
              '        ("dates", numbers, DATE_PARTS)) if columns]']
    if _many_levels(train, styles):
        _, folds = _target_encoder_folds(train)
        kind = {"regression": "continuous"}.get(train.task, train.task)
        lines += ['    many = [c for c in CATEGORICAL if LEVELS.get(c, 0) > limit]',
                  '    if many:  # each level\'s smoothed mean target, cross-fitted',
                  f'        encode = TargetEncoder(target_type={kind!r},',
                  f'                               {folds})',
                  '        scale = [("scale", StandardScaler())] if style == "scaled" else []'
                  if "scaled" in styles else '        scale = []',
                  '        parts.append(("many_levels", Pipeline([("encode", encode), *scale]), '
                  'many))']
    lines += ['    columns = ColumnTransformer(parts, remainder="drop", '
              'verbose_feature_names_out=False)',
              '    return columns.set_output(transform="pandas") if whole_codes else columns']
    return "\n".join(lines) + "\n"


_STYLES = {"scaled": "scaled (imputed, standardized, one-hot)",
           "ordinal": "ordinal (imputed, level codes)",
           "native": "native (missing kept, level codes)"}


def _many_levels(train: Dataset, styles: set[str]) -> bool:
    limit = min(ONE_HOT_MAX_CATEGORIES if s == "scaled" else NATIVE_MAX_LEVELS for s in styles)
    return any(train.columns[c].n_unique > limit for c in train.columns_of("categorical"))


def _target_encoder_folds(train: Dataset) -> tuple[str, str]:
    """The splitter class and the arguments of ``TargetEncoder`` as the engine makes it
    (``trainers.preprocessing.target_encoder``: it depends on scikit-learn's version)."""
    from sklearn.preprocessing import TargetEncoder

    if TargetEncoder().shuffle != "deprecated":
        return "KFold", "shuffle=True, random_state=0"
    splitter = "KFold" if train.task == "regression" else "StratifiedKFold"
    return splitter, f"cv={splitter}(5, shuffle=True, random_state=0)"


def combination(kind: str, params: Mapping[str, Any], indices: list[int], task: str) -> str:
    members = ", ".join(f"{i}: fit_{i:02d}" for i in indices)
    head = (f"MEMBERS = {{{members}}}  # attempt index: its fit function\n")
    fit = '''

def fit(X, y):
    """Every member fitted on X, y."""
    return [fit_member(X, y) for fit_member in MEMBERS.values()]
'''
    if kind != "stack":
        weights = [float(w) for w in params["weights"]]
        return head + f"WEIGHTS = {_literal(weights)}\n" + fit + '''

def combined(models, X):
    """The members' outputs averaged with WEIGHTS."""
    return sum(w * output(m, X) for m, w in zip(models, WEIGHTS)) / sum(WEIGHTS)
'''
    feature = {"regression": "features.append(out.reshape(-1, 1))",
               "binary": "p = np.clip(out, 1e-6, 1 - 1e-6)[:, [1]]\n"
                         "        features.append(np.log(p / (1 - p)))  # log-odds",
               "multiclass": "features.append(np.log(np.clip(out, 1e-6, 1 - 1e-6)))"}[task]
    answer = {"regression": "return z[:, 0]",
              "binary": "positive = 1 / (1 + np.exp(-z[:, 0]))\n"
                        "    return np.column_stack([1 - positive, positive])",
              "multiclass": "e = np.exp(z - z.max(axis=1, keepdims=True))\n"
                            "    return e / e.sum(axis=1, keepdims=True)"}[task]
    coef = _literal(_plain(params["coef"]))
    intercept = _literal(_plain(params["intercept"]))
    return head + f"COEF = {coef}\nINTERCEPT = {intercept}\n" + fit + f'''

def combined(models, X):
    """The stacker: a linear model over the members' outputs (log-odds, log-probabilities or
    predictions), with the coefficients the search fitted on out-of-fold outputs."""
    features = []
    for m in models:
        out = output(m, X)
        {feature}
    z = np.hstack(features) @ np.atleast_2d(COEF).T + np.asarray(INTERCEPT, dtype=float)
    {answer}
'''


def _plain(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def score(metric: str, task: str) -> str:
    predicted = "np.asarray(CLASSES)[output.argmax(axis=1)]"  # the most probable class
    bodies = {
        "roc_auc": ("ROC AUC of the positive class CLASSES[1]",
                    "return roc_auc_score(np.asarray(y_true) == CLASSES[1], output[:, 1])"),
        "roc_auc_ovr": ("one-vs-rest ROC AUC, averaged over the classes these rows hold",
                        "y_true = np.asarray(y_true, dtype=object)\n"
                        "    return float(np.mean([roc_auc_score(y_true == c, output[:, j])\n"
                        "                          for j, c in enumerate(CLASSES)\n"
                        "                          if 0 < (y_true == c).sum() < len(y_true)]))"),
        "log_loss": ("log loss", "return log_loss(y_true, np.clip(output, 1e-15, 1), "
                                 "labels=CLASSES)"),
        "accuracy": ("accuracy of the most probable class",
                     f"return accuracy_score(y_true, {predicted})"),
        "balanced_accuracy": ("balanced accuracy of the most probable class",
                              f"return balanced_accuracy_score(y_true, {predicted})"),
        "f1": ("F1 of the most probable class (macro over classes beyond two)",
               (f"return f1_score(np.asarray(y_true) == CLASSES[1], {predicted} == CLASSES[1])"
                if task == "binary" else
                f"return f1_score(y_true, {predicted}, average='macro', labels=CLASSES)")),
        "rmse": ("root mean squared error", "return root_mean_squared_error(y_true, output)"),
        "mae": ("mean absolute error", "return mean_absolute_error(y_true, output)"),
        "r2": ("R squared", "return r2_score(y_true, output)"),
    }
    what, body = bodies[metric]
    call = "predict_proba" if is_classification(task) else "predict"
    kind = "class probabilities (columns: CLASSES)" if is_classification(task) else "predictions"
    return f'''def output(model, X):
    """A fitted model's {kind}."""
    return np.asarray(model.{call}(X), dtype=float)


def score(y_true, output):
    """The search's {metric}: {what}."""
    {body}
'''


def read_rows(reading: str) -> str:
    return f'''data = {reading}  # as the search read it
target = data[TARGET]
if not pd.api.types.is_numeric_dtype(target):  # a blank label is a missing one
    target = target.astype(object).map(lambda v: v.strip() if isinstance(v, str) else v)
    target = target.replace("", np.nan)
labelled = data[target.notna()].reset_index(drop=True)  # rows without a label are left out

folds = pd.read_csv(FOLDS)  # row: position among the labelled rows; fold: -1 is the holdout
training, holdout = folds[folds["fold"] >= 0], folds[folds["fold"] < 0]
X = prepare(labelled.iloc[training["row"]])
y = labelled[TARGET].iloc[training["row"]]
fold = training["fold"].to_numpy()
everything = pd.concat([training, holdout])["row"]  # the training rows, then the holdout's
X_all, y_all = prepare(labelled.iloc[everything]), labelled[TARGET].iloc[everything]


def cross_validate(fit_model):
    """The mean score over the folds, each scored by a model fitted on the other folds."""
    scores = []
    for k in range(fold.max() + 1):
        model = fit_model(X[fold != k], y[fold != k])
        scores.append(score(y[fold == k], output(model, X[fold == k])))
    return float(np.mean(scores))
'''


def single_cv(n_splits: int, metric: str, recorded: str, task: str) -> str:
    gives = "class probabilities" if is_classification(task) else "predictions"
    return f'''if __name__ == "__main__":
    print(f"CV {metric} {{cross_validate(fit):.4f}} over {n_splits} folds (recorded: {recorded})")
    model = fit(X, y)  # on every training row
    joblib.dump(model, MODEL)
    print(f"saved {{MODEL}}: output(model, prepare(rows)) gives its {gives} for new rows")
'''


def members_cv(indices: list[int], n_splits: int, metric: str, recorded: str) -> str:
    return f'''if __name__ == "__main__":
    for index, fit_member in MEMBERS.items():
        print(f"member {{index:02d}}: CV {metric} {{cross_validate(fit_member):.4f}} over "
              f"{n_splits} folds")
    print("combined: nested CV {recorded}, as the search recorded it (the weights were chosen "
          "fold by fold without the scored fold's rows; not recomputed here)")
    model = fit(X, y)  # every member on every training row
    joblib.dump(model, MODEL)
    print(f"saved {{MODEL}}: combined(model, prepare(rows)) for new rows")
'''
