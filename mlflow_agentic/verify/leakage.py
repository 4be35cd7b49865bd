"""Leakage checks: plain arithmetic on the training rows. No I/O, no language model.

Each check returns ``Finding`` objects with a severity. A *critical* finding about a column
excludes it from the features (unless the user keeps flagged columns); a critical finding about a
candidate's own score quarantines it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from mlflow_agentic.core.types import is_regression
from mlflow_agentic.data.duplicates import (  # noqa: F401 - re-exported: the checks' names
    DUPLICATE_QUANTUM,
    DUPLICATE_SHARE_WARNING,
    duplicate_share,
    near_duplicate_clusters,
    numeric_view,
)
from mlflow_agentic.data.split import parse_time

if TYPE_CHECKING:
    from mlflow_agentic.data import Dataset

# ---- thresholds (named so the rules can be read and tuned in one place) ----------------------
SINGLE_FEATURE_AUC_WARNING = 0.90
SINGLE_FEATURE_AUC_CRITICAL = 0.97
REGRESSION_SPEARMAN_CRITICAL = 0.97
REGRESSION_SPEARMAN_WARNING = 0.90
MISSING_SEPARATION_CRITICAL = 0.85
MISSING_RATE_MIN = 0.01
TOO_GOOD_SCORE = 0.985
"""CV ROC AUC / accuracy at or above this is too good to be true."""
TOO_GOOD_R2 = 0.99
"""Numeric values closer than this share of the column's std count as equal."""
IMBALANCE_RATE = 0.05
ENCODING_FOLDS = 5

SEVERITIES = ("info", "warning", "critical")
TOO_GOOD_METRICS = ("roc_auc", "roc_auc_ovr", "accuracy", "balanced_accuracy")


@dataclass(frozen=True)
class Finding:
    """One observation about the data or a candidate, with its severity and what to do."""

    check: str
    severity: str
    message: str
    column: str | None = None
    value: float | None = None
    threshold: float | None = None
    advice: str = ""
    action: str = ""

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v not in (None, "")}


# ---- helpers ---------------------------------------------------------------------------------
def _auc(score: np.ndarray, positive: np.ndarray) -> float:
    """ROC AUC by ranks (ties averaged); 0.5 when one class is absent."""
    n_pos = int(positive.sum())
    n_neg = len(positive) - n_pos
    if n_pos == 0 or n_neg == 0:
        return 0.5
    ranks = pd.Series(score).rank(method="average").to_numpy()
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def _separation(score: np.ndarray, positive: np.ndarray) -> float:
    auc = _auc(score, positive)
    return max(auc, 1 - auc)


def _out_of_fold_rate(values: pd.Series, target: np.ndarray, seed: int = 0) -> np.ndarray:
    """Category -> target mean learned on other folds (so a many-level column is not flattered)."""
    codes = values.astype("object").where(values.notna(), "__missing__").astype(str).to_numpy()
    out = np.full(len(codes), float(np.mean(target)))
    folds = np.random.default_rng(seed).integers(0, ENCODING_FOLDS, len(codes))
    for k in range(ENCODING_FOLDS):
        train = folds != k
        means = pd.Series(target[train]).groupby(codes[train]).mean()
        out[~train] = pd.Series(codes[~train]).map(means).fillna(target[train].mean()).to_numpy()
    return out


def _class_targets(dataset: Dataset) -> list[tuple[str, np.ndarray]]:
    y = dataset.y.to_numpy()
    if dataset.task == "binary":
        return [(str(dataset.positive_class), y == dataset.positive_class)]
    return [(str(c), y == c) for c in dataset.classes]


# ---- 1. one feature separates the classes -----------------------------------------------------
def class_separations(dataset: Dataset, column: str) -> list[float]:
    """How well ``column`` alone separates each class from the rest (univariate AUC, folded
    to >= 0.5; binary: the positive class only)."""
    info, found = dataset.columns[column], []
    for _, positive in _class_targets(dataset):
        if info.kind == "categorical":
            x = _out_of_fold_rate(dataset.frame[column], positive.astype(float))
        else:
            x = numeric_view(dataset, column)
        ok = ~np.isnan(x)
        if ok.sum() >= 10:
            found.append(_separation(x[ok], positive[ok]))
    return found


def check_single_feature(dataset: Dataset) -> list[Finding]:
    findings = []
    for column in dataset.feature_columns:
        info = dataset.columns[column]
        if is_regression(dataset.task):
            y = dataset.y.to_numpy(dtype=float)
            x = (_out_of_fold_rate(dataset.frame[column], y) if info.kind == "categorical"
                 else numeric_view(dataset, column))
            ok = ~np.isnan(x)
            if ok.sum() < 3 or np.nanstd(x[ok]) == 0:
                continue
            rho = abs(pd.Series(x[ok]).corr(pd.Series(y[ok]), method="spearman"))
            if rho >= REGRESSION_SPEARMAN_WARNING:
                critical = rho >= REGRESSION_SPEARMAN_CRITICAL
                findings.append(Finding(
                    "single_feature", "critical" if critical else "warning",
                    f"{column!r} alone tracks the target (|Spearman| {rho:.3f})", column,
                    round(float(rho), 4), REGRESSION_SPEARMAN_CRITICAL if critical
                    else REGRESSION_SPEARMAN_WARNING,
                    "a column this close to the target is usually computed from it or known "
                    "only after the outcome"))
            continue
        best = max(class_separations(dataset, column), default=0.0)
        if best >= SINGLE_FEATURE_AUC_WARNING:
            critical = best >= SINGLE_FEATURE_AUC_CRITICAL
            findings.append(Finding(
                "single_feature", "critical" if critical else "warning",
                f"{column!r} alone separates the classes (univariate AUC {best:.3f})", column,
                round(best, 4), SINGLE_FEATURE_AUC_CRITICAL if critical
                else SINGLE_FEATURE_AUC_WARNING,
                "a column this predictive on its own is usually known only after the outcome"))
    return findings


# ---- 2. missing values separate the classes ---------------------------------------------------
def check_missing_separation(dataset: Dataset) -> list[Finding]:
    findings: list[Finding] = []
    if is_regression(dataset.task):
        return findings
    for column in dataset.feature_columns:
        rate = dataset.columns[column].missing_rate
        if not (MISSING_RATE_MIN <= rate <= 1 - MISSING_RATE_MIN):
            continue
        missing = numeric_view(dataset, column) if dataset.columns[column].kind != \
            "categorical" else dataset.frame[column].to_numpy()
        indicator = pd.isna(missing).astype(float)
        best = max(_separation(indicator, pos) for _, pos in _class_targets(dataset))
        if best >= MISSING_SEPARATION_CRITICAL:
            findings.append(Finding(
                "missing_separation", "critical",
                f"whether {column!r} is missing separates the classes (AUC {best:.3f})", column,
                round(best, 4), MISSING_SEPARATION_CRITICAL,
                "missingness this telling usually means the value is filled in after the outcome"))
    return findings


# ---- 3. cross-validation too good to be true --------------------------------------------------
def check_too_good(metric: str, score: float, baseline: float) -> Finding | None:
    """A candidate's own CV score that is too good to be true (quarantines the candidate)."""
    if not np.isfinite(score):
        return None
    value, threshold, label = None, None, metric
    if metric in TOO_GOOD_METRICS and score >= TOO_GOOD_SCORE:
        if metric == "accuracy" and baseline >= TOO_GOOD_SCORE:
            return None  # the majority class alone is that accurate
        value, threshold = score, TOO_GOOD_SCORE
    elif metric == "r2" and score >= TOO_GOOD_R2:
        value, threshold = score, TOO_GOOD_R2
    elif metric == "rmse" and baseline > 0:
        implied = 1 - (score / baseline) ** 2  # the trivial baseline's RMSE is the target's std
        if implied >= TOO_GOOD_R2:
            value, threshold, label = implied, TOO_GOOD_R2, "implied r2"
    if value is None:
        return None
    return Finding("too_good", "critical",
                   f"cross-validated {label} {value:.4f} >= {threshold} is too good to be true",
                   None, round(float(value), 6), threshold,
                   "look for a column that encodes the target; the candidate is quarantined",
                   "quarantined")


# ---- 4. near-duplicate rows -------------------------------------------------------------------
def check_near_duplicates(dataset: Dataset, clusters: np.ndarray | None = None,
                          splits: Sequence | None = None) -> list[Finding]:
    clusters = near_duplicate_clusters(dataset) if clusters is None else clusters
    share = duplicate_share(clusters)
    findings = []
    if share >= DUPLICATE_SHARE_WARNING:
        findings.append(Finding(
            "near_duplicates", "warning",
            f"{share:.1%} of rows have a near-duplicate", None, round(share, 4),
            DUPLICATE_SHARE_WARNING,
            "keep copies on one side of every split (done: duplicate clusters are CV groups "
            "and never straddle the holdout)", "grouped"))
    straddling = _straddling_share(clusters, splits) if splits is not None and share > 0 else 0.0
    if straddling > 0 and share >= DUPLICATE_SHARE_WARNING:
        findings.append(Finding(
            "near_duplicates", "critical",
            f"{straddling:.1%} of duplicate clusters fall on both sides of a CV split", None,
            round(straddling, 4), 0.0, "use group-aware CV over the duplicate clusters"))
    return findings


def _straddling_share(groups: np.ndarray, splits: Sequence) -> float:
    """Share of groups with rows on both sides of at least one (train, test) split."""
    groups = np.asarray(groups)
    crossing: set = set()
    for train, test in splits:
        crossing |= set(np.intersect1d(groups[train], groups[test]))
    return len(crossing) / max(len(np.unique(groups)), 1)


# ---- 5. class imbalance -----------------------------------------------------------------------
def check_imbalance(dataset: Dataset) -> list[Finding]:
    if is_regression(dataset.task):
        return []
    rates = dataset.y.value_counts(normalize=True)
    rate = float(rates.min())
    if rate >= IMBALANCE_RATE:
        return []
    return [Finding(
        "class_imbalance", "warning",
        f"class {rates.idxmin()!r} is only {rate:.2%} of rows", None, round(rate, 4),
        IMBALANCE_RATE,
        "use a ranking metric (roc_auc) or balanced_accuracy, not accuracy; keep folds stratified "
        "(done); consider class_weight")]


# ---- 6. ID-like columns -----------------------------------------------------------------------
def check_id_columns(dataset: Dataset) -> list[Finding]:
    findings = []
    for column, info in dataset.columns.items():
        if info.kind == "id":
            findings.append(Finding(
                "id_column", "warning", f"{column!r} looks like an identifier ({info.reason})",
                column, advice="an identifier predicts nothing new; excluded from the features",
                action="excluded"))
        elif info.is_feature and info.kind == "numeric":
            x = numeric_view(dataset, column)
            ok = x[~np.isnan(x)]
            if len(ok) >= 50 and len(np.unique(ok)) == len(ok) and (
                    np.all(np.diff(ok) > 0) or np.all(np.diff(ok) < 0)):
                findings.append(Finding(
                    "id_column", "warning",
                    f"{column!r} is unique per row and monotone with row order", column,
                    advice="a row counter or timestamp; if it is time, pass it as --time-column"))
    return findings


# ---- 7. group or time leakage -----------------------------------------------------------------
def check_group_time(dataset: Dataset, splits: Sequence, scheme: str,
                     naive_splits: Sequence | None = None) -> list[Finding]:
    """Groups straddling CV folds, or folds that train on the future.

    ``splits`` are the folds the search uses; ``naive_splits`` (random K-fold) show the hazard
    that was avoided, reported as a mitigated warning.
    """
    findings = []
    if dataset.group_column is not None:
        groups = dataset.frame[dataset.group_column].to_numpy()
        used = _straddling_share(groups, splits)
        if used > 0:
            findings.append(Finding(
                "group_leakage", "critical",
                f"{used:.1%} of groups in {dataset.group_column!r} appear on both sides of a CV "
                "split", dataset.group_column, round(used, 4), 0.0,
                "use --cv-scheme group (the advice)"))
        elif naive_splits is not None:
            naive = _straddling_share(groups, naive_splits)
            findings.append(Finding(
                "group_leakage", "warning",
                f"random K-fold would put {naive:.0%} of groups in {dataset.group_column!r} on "
                "both sides of a split", dataset.group_column, round(naive, 4), 0.0,
                "whole groups are kept together in CV and the holdout", f"cv scheme {scheme}"))
    if dataset.time_column is not None:
        times = parse_time(dataset.frame[dataset.time_column], dataset.time_column).to_numpy()
        used = _future_share(times, splits)
        if used > 0:
            findings.append(Finding(
                "time_leakage", "critical",
                f"{used:.1%} of CV test rows are older than rows their model trained on",
                dataset.time_column, round(used, 4), 0.0, "use --cv-scheme time (the advice)"))
        elif naive_splits is not None:
            naive = _future_share(times, naive_splits)
            findings.append(Finding(
                "time_leakage", "warning",
                f"random K-fold would train on the future for {naive:.0%} of test rows",
                dataset.time_column, round(naive, 4), 0.0,
                "CV folds and the holdout are ordered in time", f"cv scheme {scheme}"))
    return findings


def _future_share(times: np.ndarray, splits: Sequence) -> float:
    """Share of test rows (over all folds) older than the newest row of their training fold."""
    older = total = 0
    for train, test in splits:
        newest = np.nanmax(times[train])
        older += int(np.sum(times[test] < newest))
        total += len(test)
    return older / max(total, 1)


def column_exclusions(findings: Sequence[Finding]) -> dict[str, str]:
    """Columns a critical finding is about -> the reason to exclude them."""
    return {f.column: f"{f.check}: {f.message}" for f in findings
            if f.severity == "critical" and f.column and f.check in
            ("single_feature", "missing_separation")}
