"""``mlflow-agentic bench traps``: does the search catch planted traps, and does a naive AutoML
fall into them? Same sealed holdout for both; the naive baseline is gradient boosting on every
column with random K-fold and no checks."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from sklearn.model_selection import KFold

from mlflow_agentic.bench.tasks import TrapTask, make_tasks
from mlflow_agentic.core.metrics import METRICS
from mlflow_agentic.data import Dataset
from mlflow_agentic.data.split import seal_holdout
from mlflow_agentic.scoring.holdout import SELF_DECEPTION_GAP

if TYPE_CHECKING:
    from rich.table import Table
    from sklearn.pipeline import Pipeline

    from mlflow_agentic.tracking import MlflowTracker

BENCH_TRAINERS = ("linear", "hist_gradient_boosting", "xgboost")


@dataclass
class TrapRow:
    task: str
    expected: str
    caught: bool
    false_flags: list[str]
    cv: float | None
    holdout: float | None
    gap: float | None
    naive_cv: float
    naive_holdout: float
    naive_gap: float
    naive_used_planted: bool
    run_id: str | None = None

    @property
    def naive_fell(self) -> bool:
        return self.naive_gap > SELF_DECEPTION_GAP or self.naive_used_planted


def naive_baseline(train: Dataset, holdout: Dataset, seed: int, planted: str | None
                   ) -> tuple[float, float, float, bool]:
    """Gradient boosting on every raw column, random 5-fold CV, no checks: what many do."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OrdinalEncoder
    from xgboost import XGBClassifier

    X, y = train.X, (train.y == train.positive_class).astype(int).to_numpy()
    text = [c for c in X.columns if not pd.api.types.is_numeric_dtype(X[c])]
    X = X.astype({c: object for c in text})
    hX = holdout.X.astype({c: object for c in text})

    def build() -> Pipeline:
        encode = ColumnTransformer(
            [("text", OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1,
                                     encoded_missing_value=np.nan), text)],
            remainder="passthrough", verbose_feature_names_out=False)
        return Pipeline([("encode", encode), ("model", XGBClassifier(
            n_estimators=300, max_depth=6, learning_rate=0.1, n_jobs=2, random_state=seed,
            verbosity=0))])

    auc = METRICS["roc_auc"]
    scores = []
    for tr, te in KFold(5, shuffle=True, random_state=seed).split(X):
        model = build().fit(X.iloc[tr], y[tr])
        scores.append(auc.score(y[te] == 1, None, model.predict_proba(X.iloc[te]), (False, True)))
    model = build().fit(X, y)
    hy = (holdout.y == train.positive_class).to_numpy()
    hold = auc.score(hy, None, model.predict_proba(hX), (False, True))
    used = False
    if planted is not None:
        names = list(model.named_steps["encode"].get_feature_names_out())
        used = bool(model.named_steps["model"].feature_importances_[names.index(planted)] > 0)
    cv = float(np.mean(scores))
    return cv, float(hold), cv - float(hold), used


def run_task(task: TrapTask, seed: int, tracker: MlflowTracker | None = None,
             quiet: bool = True) -> TrapRow:
    from mlflow_agentic.frontdoor.orchestrator import SplitOptions, run_search
    from mlflow_agentic.proposers import OptunaProposer

    dataset = Dataset.from_frame(task.frame, task.target, name=f"trap-{task.name}")
    split = SplitOptions(**task.split)
    outcome = run_search(dataset, lambda: OptunaProposer(seed=seed), split=split,
                         max_iterations=2, patience=2, cv=3, trainers=list(BENCH_TRAINERS),
                         seed=seed, tracker=tracker)
    flagged = {f.check for f in outcome.briefing.findings if f.severity != "info"}
    if any(a.verdict.quarantined for a in outcome.run.attempts):
        flagged.add("too_good")
    caught = bool(flagged & task.expected_checks) if task.expected_checks else True
    false_flags = sorted(flagged - task.expected_checks)
    train, holdout = seal_holdout(dataset, time_column=split.time_column,
                                  group_column=split.group_column,
                                  post_outcome_columns=tuple(split.post_outcome_columns),
                                  random_state=seed)
    naive = naive_baseline(train, holdout.dataset, seed, task.planted_column)
    sel = outcome.holdout.selected
    return TrapRow(task.name, ",".join(sorted(task.expected_checks)) or "-", caught,
                   false_flags, sel.cv if sel else None, sel.holdout if sel else None,
                   sel.gap if sel else None, *naive,
                   run_id=tracker.parent_run_id if tracker is not None else None)


def run_bench(seed: int = 0, experiment: str | None = "bench-traps", track: bool = True,
              progress: Callable[[str], None] | None = None) -> list[TrapRow]:
    rows = []
    for task in make_tasks(seed):
        tracker = None
        if track:
            from mlflow_agentic.tracking import MlflowTracker

            # no holdout diagnostics: the bench compares CV, holdout and gap (a third of its time)
            tracker = MlflowTracker(experiment=experiment, run_name=f"trap-{task.name}",
                                    register=False, diagnostics=False)
        if progress is not None:
            progress(f"task {task.name}: {task.description}")
        row = run_task(task, seed, tracker)
        if tracker is not None:
            _log_row(tracker, row)
        rows.append(row)
    return rows


def _log_row(tracker: MlflowTracker, row: TrapRow) -> None:
    if row.run_id is None:  # the search logged no run
        return
    metrics = {"naive_cv_roc_auc": row.naive_cv, "naive_holdout_roc_auc": row.naive_holdout,
               "naive_gap": row.naive_gap, "trap_caught": float(row.caught),
               "false_flags": float(len(row.false_flags)), "naive_fell": float(row.naive_fell)}
    tags = {"bench": "traps", "trap": row.task, "trap.expected_checks": row.expected,
            "trap.caught": str(row.caught).lower(),
            "trap.false_flags": ",".join(row.false_flags) or "none",
            "naive.fell_into_trap": str(row.naive_fell).lower()}
    tracker.log(row.run_id, metrics, {}, tags)


def format_table(rows: list[TrapRow]) -> Table:
    from rich.table import Table

    table = Table(title="trap benchmark: mlflow-agentic vs a naive AutoML (same sealed holdout)")
    for col in ("task", "caught", "false flags", "CV", "holdout", "gap", "naive CV",
                "naive hold", "naive gap", "naive fell"):
        table.add_column(col, no_wrap=True)

    def f(v: float | None) -> str:
        return "-" if v is None else f"{v:.3f}"

    for r in rows:
        table.add_row(r.task, "-" if r.expected == "-" else "yes" if r.caught else
                      "[red]MISSED[/]",
                      ", ".join(r.false_flags) or "0", f(r.cv), f(r.holdout), f(r.gap),
                      f(r.naive_cv), f(r.naive_holdout), f(r.naive_gap),
                      ("yes, uses leak" if r.naive_used_planted else "yes")
                      if r.naive_fell else "no")
    return table
