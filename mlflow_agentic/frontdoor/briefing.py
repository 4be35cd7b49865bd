"""The briefing, written by code before the loop: an aggregate profile of the training rows, a
column audit, the leakage findings and the CV-scheme advice. Never raw rows.

It also decides which flagged columns leave the features; the loop runs on ``briefing.dataset``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mlflow_agentic.core.types import is_regression
from mlflow_agentic.engine.evaluate.cv import KnownFolds, make_splits, resolve_scheme
from mlflow_agentic.verify import leakage
from mlflow_agentic.verify.leakage import Finding

if TYPE_CHECKING:
    from mlflow_agentic.data import Dataset


@dataclass
class Briefing:
    dataset: Any
    """The training dataset the loop sees (flagged columns excluded unless kept)."""
    profile: dict[str, Any]
    audit: list[dict[str, Any]]
    findings: list[Finding]
    cv_scheme: str
    cv_reason: str
    excluded: dict[str, str] = field(default_factory=dict)
    folds: KnownFolds | None = None
    """The CV folds the checks ran on: the loop takes them rather than build them again."""
    recipe: dict[str, Any] = field(default_factory=dict)
    """How these training rows came from the file (``frontdoor.orchestrator.seal``'s
    arguments, and the rows' positions): what each attempt's ``attempt.py`` starts from."""

    @property
    def critical(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "critical"]

    def to_dict(self) -> dict[str, Any]:
        return {"profile": self.profile, "columns": self.audit,
                "findings": [f.to_dict() for f in self.findings],
                "cv": {"scheme": self.cv_scheme, "reason": self.cv_reason},
                "excluded_columns": self.excluded}


def profile(dataset: Dataset) -> dict[str, Any]:
    """Aggregates only: sizes, kinds, missing rates, cardinalities, target balance."""
    out: dict[str, Any] = {"rows": dataset.n_rows, "columns": len(dataset.columns),
                           "task": dataset.task, "target": dataset.target}
    if is_regression(dataset.task):
        y = dataset.y.astype(float)
        out["target_summary"] = {"mean": round(float(y.mean()), 4),
                                 "std": round(float(y.std()), 4)}
    else:
        rates = dataset.y.value_counts(normalize=True)
        out["target_balance"] = {str(k): round(float(v), 4) for k, v in rates.items()}
    out["kinds"] = {k: len(dataset.columns_of(k)) for k in
                    ("numeric", "categorical", "datetime", "id", "constant", "excluded")
                    if dataset.columns_of(k)}
    return out


def audit(dataset: Dataset) -> list[dict[str, Any]]:
    return [{"column": c, "kind": i.kind, "dtype": i.dtype, "missing_rate": round(i.missing_rate,
             4), "n_unique": i.n_unique, "numeric_text": i.numeric_text, "reason": i.reason}
            for c, i in dataset.columns.items()]


def build_briefing(train: Dataset, *, cv: int = 5, cv_scheme: str | None = "auto",
                   random_state: int = 0, keep_flagged_columns: bool = False) -> Briefing:
    """Run every data check on the training rows and settle the CV scheme and the features."""
    if train.group_column is not None and train.columns[train.group_column].is_feature:
        train = train.exclude({train.group_column: "group column: identifies the group, "
                                                   "not the outcome"})
    scheme, reason = resolve_scheme(train, cv_scheme)
    findings: list[Finding] = [Finding("data_read", "warning" if "infinite" in note else "info",
                                       note) for note in train.notes]
    findings += leakage.check_single_feature(train)
    findings += leakage.check_missing_separation(train)
    findings += leakage.check_imbalance(train)
    findings += leakage.check_id_columns(train)
    folds = None
    if isinstance(cv, int):
        splits = make_splits(train, cv, random_state, scheme)
        folds = KnownFolds.of(train, cv, random_state, scheme, splits)
        naive = make_splits(train, cv, random_state,
                            "kfold" if is_regression(train.task) else "stratified")
        findings += leakage.check_near_duplicates(train, splits=splits)
        findings += leakage.check_group_time(train, splits, scheme, naive_splits=naive)
    excluded = {} if keep_flagged_columns else leakage.column_exclusions(findings)
    if excluded:
        findings = [_with_action(f, "excluded") if f.column in excluded and f.severity ==
                    "critical" else f for f in findings]
        train = train.exclude(excluded)
    return Briefing(dataset=train, profile=profile(train), audit=audit(train),
                    findings=findings, cv_scheme=scheme, cv_reason=reason, excluded=excluded,
                    folds=folds)


def _with_action(finding: Finding, action: str) -> Finding:
    from dataclasses import replace

    return replace(finding, action=action)
