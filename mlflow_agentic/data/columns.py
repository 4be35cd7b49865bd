"""Column typing: decide what each raw column is, from its values, before any model sees it.

Kinds: ``numeric`` (including numbers stored as text with blanks, like Telco's ``TotalCharges``),
``categorical``, ``datetime``, ``id`` (unique per row or a monotone counter: never a feature) and
``constant`` (one value: never a feature).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

NUMERIC_TEXT_MIN_SHARE = 0.95
"""Share of non-blank text values that must parse as numbers for a column to count as numeric."""
DATETIME_TEXT_MIN_SHARE = 0.95
ID_NAME_PATTERN = re.compile(r"(^id$|_id$|id$|^uuid$|^key$)", re.IGNORECASE)
ID_MIN_UNIQUE_SHARE = 0.95
_DATE_LIKE = re.compile(r"^\s*\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}")

KINDS = ("numeric", "categorical", "datetime", "id", "constant", "excluded")
FEATURE_KINDS = ("numeric", "categorical", "datetime")


@dataclass(frozen=True)
class ColumnInfo:
    """What a column is and why we think so (aggregates only, never values)."""

    name: str
    kind: str
    dtype: str
    missing_rate: float
    n_unique: int
    numeric_text: bool = False
    reason: str = ""
    dayfirst: bool = False
    """A date column whose dates with the year last are written day first (13/04/2021)."""

    @property
    def is_feature(self) -> bool:
        return self.kind in FEATURE_KINDS


def blank_to_nan(series: pd.Series) -> pd.Series:
    """Text column with blanks (``" "``, ``""``) turned into missing values (as object dtype)."""
    if pd.api.types.is_string_dtype(series) and not pd.api.types.is_object_dtype(series):
        stripped = series.str.strip().astype("object")  # pandas' string dtypes: vectorised
    else:
        stripped = series.astype("object").map(lambda v: v.strip() if isinstance(v, str) else v)
    return stripped.where(stripped.notna() & (stripped != ""), np.nan)


def parse_numeric_text(series: pd.Series) -> pd.Series:
    """Numbers stored as text -> float; blanks and unparseable cells -> NaN."""
    return pd.to_numeric(blank_to_nan(series), errors="coerce")


def _numeric_text_share(series: pd.Series) -> float:
    """Share of non-blank values that parse as numbers (a sample rules most columns out)."""
    sample = blank_to_nan(series.iloc[:500]).dropna()
    if sample.empty or pd.to_numeric(sample, errors="coerce").notna().mean() < 0.5:
        return 0.0
    values = blank_to_nan(series).dropna()
    return float(pd.to_numeric(values, errors="coerce").notna().mean())


def _looks_datetime(series: pd.Series) -> bool:
    values = blank_to_nan(series).dropna().astype(str)
    if values.empty:
        return False
    sample = values.iloc[: min(len(values), 500)]
    if sample.map(lambda v: bool(_DATE_LIKE.match(v))).mean() < DATETIME_TEXT_MIN_SHARE:
        return False
    parsed = pd.to_datetime(sample, errors="coerce", format="mixed", utc=True)
    return float(parsed.notna().mean()) >= DATETIME_TEXT_MIN_SHARE


_YEAR_LAST = re.compile(r"^\s*(\d{1,2})[-/.](\d{1,2})[-/.](\d{2,4})\b")
TWO_ORDERS = "both"
TWO_ORDERS_REASON = ("dates written both day first and month first (13/04/2021 and "
                     "04/13/2021): read as text, not as dates")


def date_order(series: pd.Series) -> str:
    """How the column's dates with the year last order day and month: ``dayfirst`` when one
    has a first number over 12, ``monthfirst`` when one has a second number over 12,
    ``TWO_ORDERS`` when both occur (a date like 04/03/2021 is then unknowable), '' when no date
    tells (read month first, as pandas does). Without this, pandas' mixed parsing reads
    13/04/2021 day first and 04/03/2021 month first in the same column."""
    found = blank_to_nan(series).dropna().astype(str).str.extract(_YEAR_LAST).dropna()
    if found.empty:
        return ""
    first, second = found[0].astype(int), found[1].astype(int)
    day_first, month_first = bool((first > 12).any()), bool((second > 12).any())
    if day_first and month_first:
        return TWO_ORDERS
    return "dayfirst" if day_first else "monthfirst" if month_first else ""


def _counts(series: pd.Series) -> tuple[float, int, pd.Series]:
    """``(missing_rate, n_unique, non_null)``: blanks in text count as missing."""
    missing = blank_to_nan(series).isna() if _is_text(series) else series.isna()
    missing_rate = float(missing.mean()) if len(series) else 0.0
    non_null = series[~missing]
    return missing_rate, int(non_null.nunique()), non_null


def recount(info: ColumnInfo, series: pd.Series,
            counted: tuple[float, int] | None = None) -> ColumnInfo:
    """``info`` with its counts (missing rate, distinct values) taken from ``series`` only: the
    kind stays as typed on the whole file, the numbers describe these rows (a sealed split's
    training rows: no count of a holdout row reaches a proposer). ``counted``: those two counts
    when the caller took them already (``recount_frame``)."""
    missing_rate, n_unique = counted if counted is not None else _counts(series)[:2]
    reason = (f"{n_unique} distinct value(s)" if info.kind == "constant" else info.reason)
    return ColumnInfo(info.name, info.kind, info.dtype, missing_rate, n_unique,
                      info.numeric_text, reason, info.dayfirst)


def recount_frame(columns: dict[str, ColumnInfo], frame: pd.DataFrame) -> dict[str, ColumnInfo]:
    """``recount`` of every column of ``frame``; the columns that are not text counted all at
    once (a column at a time took 0.7 s on 1,500 columns)."""
    typed = [c for c in columns if not _is_text(frame[c])]
    missing = frame[typed].isna().mean() if len(frame) else pd.Series(0.0, index=typed)
    distinct = frame[typed].nunique(dropna=True)
    return {c: recount(info, frame[c], (float(missing[c]), int(distinct[c])) if c in distinct
                       else None)
            for c, info in columns.items()}


def infer_column(name: str, series: pd.Series) -> ColumnInfo:
    """Classify one raw column."""
    missing_rate, n_unique, non_null = _counts(series)
    base: dict[str, Any] = {"name": name, "dtype": str(series.dtype),
                            "missing_rate": missing_rate, "n_unique": n_unique}

    if n_unique <= 1:
        return ColumnInfo(kind="constant", reason=f"{n_unique} distinct value(s)", **base)

    unique_share = n_unique / max(len(non_null), 1)
    named_like_id = bool(ID_NAME_PATTERN.search(name))

    if pd.api.types.is_bool_dtype(series):
        return ColumnInfo(kind="numeric", reason="boolean", **base)
    if pd.api.types.is_datetime64_any_dtype(series):
        return ColumnInfo(kind="datetime", reason="datetime dtype", **base)
    if pd.api.types.is_numeric_dtype(series):
        values = non_null.to_numpy(dtype=float)
        integral = pd.api.types.is_integer_dtype(series) or bool(
            np.all(np.mod(values[np.isfinite(values)], 1) == 0)
        )
        if integral and unique_share >= ID_MIN_UNIQUE_SHARE and len(non_null) >= 20 and (
            named_like_id or non_null.is_monotonic_increasing or non_null.is_monotonic_decreasing
        ):
            return ColumnInfo(kind="id", reason="integer unique per row and monotone or named "
                              "like an ID", **base)
        return ColumnInfo(kind="numeric", reason="numeric dtype", **base)

    # text-like (object, str, category)
    if _numeric_text_share(series) >= NUMERIC_TEXT_MIN_SHARE:
        return ColumnInfo(kind="numeric", numeric_text=True,
                          reason="numbers stored as text (blanks become missing)", **base)
    if _looks_datetime(series):
        order = date_order(series)
        if order == TWO_ORDERS:
            return ColumnInfo(kind="categorical", reason=TWO_ORDERS_REASON, **base)
        return ColumnInfo(kind="datetime", reason="text parses as dates" + (
            " (day first)" if order == "dayfirst" else ""), dayfirst=order == "dayfirst", **base)
    if len(non_null) >= 20 and (unique_share >= 0.999 or (
            named_like_id and unique_share >= ID_MIN_UNIQUE_SHARE)):
        return ColumnInfo(kind="id", reason="text unique per row", **base)
    return ColumnInfo(kind="categorical", reason="text with repeated values", **base)


def _is_text(series: pd.Series) -> bool:
    return not (pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series)
                or pd.api.types.is_datetime64_any_dtype(series))
