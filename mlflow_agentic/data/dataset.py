"""``Dataset``: a table, its target, its task and the kind of every column.

Columns are typed once, when the data is read: numeric columns (numbers stored as text with
blanks included) become floats. The model pipeline keeps its own coercion step, a no-op on typed
frames, so a served model still accepts the rows of the training file as they are.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, cast

import numpy as np
import pandas as pd

from mlflow_agentic.core.errors import UserInputError
from mlflow_agentic.core.types import Task, is_classification, is_regression
from mlflow_agentic.data.columns import (
    TWO_ORDERS_REASON,
    ColumnInfo,
    blank_to_nan,
    infer_column,
    parse_numeric_text,
    recount_frame,
)

TASKS = ("binary", "multiclass", "regression")
TARGET_NAMES = ("target", "label", "churn", "churned", "y")
"""Column names (case-insensitive) that are taken as the target when none is given."""
MULTICLASS_MAX_CLASSES = 20
INFINITE_NOTE = " infinite values read as missing"
URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def _infinite_note(column: str, mask: np.ndarray) -> str:
    return f"column {column!r}: {int(mask.sum())}{INFINITE_NOTE}"
"""A numeric target with at most this many integer values (and few per row) is a class label."""
MAX_CLASSES = 100
"""More classes than this is not a classification we can cross-validate (an ID, free text)."""
NUMERIC_TARGET_MIN_SHARE = 0.9
"""A text target whose values parse as numbers this often is a number with bad cells."""
DELIMITERS = (",", ";", "\t", "|")
SUPPORTED_SUFFIXES = (".csv", ".tsv", ".txt", ".parquet", ".pq")


@dataclass
class Dataset:
    """A supervised learning table. Build it with ``from_frame`` or ``from_path``."""

    frame: pd.DataFrame
    target: str
    task: Task
    columns: dict[str, ColumnInfo]
    name: str = "dataset"
    source: str | None = None
    classes: tuple = ()
    dropped_missing_target: int = 0
    notes: list[str] = field(default_factory=list)
    time_column: str | None = None
    """Rows are ordered in time by this column (sealed split and CV respect it)."""
    group_column: str | None = None
    """Rows of one group must stay on one side of every split."""
    cv_groups: np.ndarray | None = None
    """Group label per row for group-aware CV (the group column, or near-duplicate clusters)."""
    infinite_cells: dict[str, np.ndarray] = field(default_factory=dict)
    """Per numeric column with infinite values read (as missing): which rows had them."""

    # ---- construction -------------------------------------------------------------------
    @classmethod
    def from_frame(
        cls,
        df: pd.DataFrame,
        target: str | None = None,
        *,
        task: str | None = None,
        name: str = "dataset",
        source: str | None = None,
        merge_label_variants: bool = False,
    ) -> Dataset:
        """Type the columns, infer (or check) the task, drop rows whose target is missing.
        Text labels that differ only in case or surrounding spaces (``Yes``/``yes ``) are
        refused, or with ``merge_label_variants`` merged into each group's most frequent
        spelling, with a note."""
        if not isinstance(df, pd.DataFrame):
            raise UserInputError(f"expected a pandas DataFrame, got {type(df).__name__}")
        where = f" in {source}" if source else ""
        df, target = _with_target(df, target, where)
        missing = _missing_mask(df[target])
        notes: list[str] = []
        df = _clean_target(df, target, task, where, merge_label_variants, missing, notes)
        task = task or infer_task(df[target])
        if task not in TASKS:
            raise UserInputError(f"unknown task {task!r}. Valid: {', '.join(TASKS)}")
        classes = _classes(df[target], target, task, where)
        columns, infinite_cells = _typed_columns(df, target, notes)
        if not any(info.is_feature for info in columns.values()):
            raise UserInputError(
                f"no usable feature columns{where}: "
                + _listed([f"{c} ({i.kind})" for c, i in columns.items()])
            )
        return cls(frame=df, target=target, task=cast(Task, task), columns=columns, name=name,
                   source=source, classes=classes, dropped_missing_target=int(missing.sum()),
                   notes=notes, infinite_cells=infinite_cells)

    @classmethod
    def from_path(cls, path: str | Path, target: str | None = None, *,
                  task: str | None = None, name: str | None = None,
                  encoding: str | None = None, merge_label_variants: bool = False) -> Dataset:
        """Read a CSV (or TSV) or Parquet file and build the dataset. ``encoding``: of a CSV
        (default: UTF-8, else detected, with a note)."""
        if isinstance(path, str) and URL.match(path):
            raise UserInputError(f"data {path!r} is a URL; mlflow-agentic reads a local CSV or "
                                 "Parquet file: download it first (e.g. curl -o data.csv URL) "
                                 "and pass the file")
        path = Path(path)
        df = read_table(path, encoding=encoding)
        dataset = cls.from_frame(df, target, task=task, name=name or dataset_name(path),
                                 source=str(path), merge_label_variants=merge_label_variants)
        dataset.notes[:0] = df.attrs.get("read_notes", [])
        return dataset

    # ---- views --------------------------------------------------------------------------
    @property
    def X(self) -> pd.DataFrame:  # noqa: N802 - the sklearn convention
        """Raw input columns (everything but the target), as a served model receives them."""
        return self.frame.drop(columns=[self.target])

    @property
    def y(self) -> pd.Series:
        return self.frame[self.target]

    @property
    def n_rows(self) -> int:
        return len(self.frame)

    def columns_of(self, kind: str) -> list[str]:
        return [c for c, info in self.columns.items() if info.kind == kind]

    @property
    def feature_columns(self) -> list[str]:
        return [c for c, info in self.columns.items() if info.is_feature]

    @property
    def excluded_columns(self) -> dict[str, str]:
        """Columns that are not features, with the reason."""
        return {c: f"{i.kind}: {i.reason}" for c, i in self.columns.items() if not i.is_feature}

    @property
    def positive_class(self) -> Any:
        return self.classes[1] if self.task == "binary" else None

    def take(self, rows: Sequence[int] | np.ndarray, name: str | None = None) -> Dataset:
        """Rows subset that keeps the column typing and roles (for sealed splits), with every
        count re-taken on these rows: missing rates, distinct values, the read notes' counts
        of infinite cells. Nothing a proposer sees is computed on rows it was not given."""
        rows = np.asarray(rows)
        frame = self.frame.iloc[rows].reset_index(drop=True)
        groups = self.cv_groups[rows] if self.cv_groups is not None else None
        columns = recount_frame(self.columns, frame)
        infinite = {c: mask[rows] for c, mask in self.infinite_cells.items()}
        notes = [n for n in self.notes if not n.endswith(INFINITE_NOTE)]
        notes += [_infinite_note(c, mask) for c, mask in infinite.items() if mask.any()]
        return dataclasses.replace(self, frame=frame, name=name or self.name, notes=notes,
                                   cv_groups=groups, columns=columns, infinite_cells=infinite)

    def exclude(self, reasons: dict[str, str]) -> Dataset:
        """A copy in which these columns are no longer features (kind ``excluded``, with why)."""
        columns = dict(self.columns)
        for name, reason in reasons.items():
            columns[name] = dataclasses.replace(columns[name], kind="excluded", reason=reason)
        return dataclasses.replace(self, columns=columns)

    def with_roles(self, *, time_column: str | None = None, group_column: str | None = None,
                   cv_groups: np.ndarray | None = None) -> Dataset:
        return dataclasses.replace(self, time_column=time_column, group_column=group_column,
                                   cv_groups=cv_groups)

    def describe(self) -> str:
        kinds = {k: len(self.columns_of(k)) for k in ("numeric", "categorical", "datetime")}
        parts = ", ".join(f"{v} {k}" for k, v in kinds.items() if v)
        extra = ""
        if is_classification(self.task):
            counts = self.y.value_counts(normalize=True)
            extra = " classes " + ", ".join(f"{k}={counts[k]:.1%}" for k in self.classes)
        return (f"{self.name}: {self.n_rows} rows, target {self.target!r} ({self.task}{extra}); "
                f"features: {parts}; excluded: {', '.join(self.excluded_columns) or 'none'}")


# ---- helpers ---------------------------------------------------------------------------------
def dataset_name(path: Path) -> str:
    """``data/churn.csv`` -> ``churn`` (safe for run and model names)."""
    stem = path.name
    for suffix in (".gz", ".bz2", ".zip", ".xz"):
        stem = stem.removesuffix(suffix)
    stem = Path(stem).stem
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", stem).strip("-") or "dataset"


def read_table(path: Path, encoding: str | None = None) -> pd.DataFrame:
    """CSV/TSV/Parquet into a frame, with errors that name the file and the problem.

    A CSV is read as UTF-8 unless ``encoding`` is given; a file that is not UTF-8 is read with
    the detected encoding. The delimiter is ``,`` (``\\t`` for .tsv) unless the header shows
    another one (``;``, ``|``, tab). What was detected is in ``df.attrs["read_notes"]``.
    """
    if not path.exists():
        raise UserInputError(f"data file not found: {path}")
    if path.is_dir():
        raise UserInputError(f"{path} is a directory; pass a CSV or Parquet file")
    suffixes = "".join(path.suffixes[-2:]).lower()
    kind = "parquet" if path.suffix.lower() in (".parquet", ".pq") else "csv"
    if kind == "csv" and not any(s in suffixes for s in (".csv", ".tsv", ".txt")):
        raise UserInputError(
            f"unsupported file type {path.suffix or '(none)'!r} for {path}. "
            f"Supported: {', '.join(SUPPORTED_SUFFIXES)} (CSV may be compressed, e.g. .csv.gz)"
        )
    if path.stat().st_size == 0:
        raise UserInputError(f"data file is empty: {path}")
    notes: list[str] = []
    try:
        if kind == "parquet":
            df = pd.read_parquet(path)
        else:
            df = _read_csv(path, "\t" if ".tsv" in suffixes else ",", encoding, notes)
    except UserInputError:
        raise
    except pd.errors.EmptyDataError as exc:
        raise UserInputError(f"data file has no columns: {path}") from exc
    except LookupError as exc:
        raise UserInputError(f"unknown encoding {encoding!r} for {path}: {exc}") from exc
    except (UnicodeDecodeError, pd.errors.ParserError, OSError, ValueError) as exc:
        hint = " (pass --encoding, e.g. --encoding latin-1)" if isinstance(
            exc, UnicodeDecodeError) else ""
        raise UserInputError(f"cannot read {path} as {kind.upper()}: {exc}{hint}") from exc
    if df.empty:
        raise UserInputError(f"data file has a header but no rows: {path}")
    df.attrs["read_notes"] = notes
    return df


def _read_csv(path: Path, sep: str, encoding: str | None, notes: list[str]) -> pd.DataFrame:
    """UTF-8 (or ``encoding``); a file that does not decode as UTF-8 is read again with the
    detected encoding. Parsing the file is what checks its encoding."""
    try:
        return _parse_csv(path, sep, encoding or "utf-8", notes)
    except UnicodeDecodeError:
        if encoding is not None:
            raise
    detected = _detect_encoding(path)
    notes.append(f"{path.name} is not UTF-8: read as {detected}")
    return _parse_csv(path, sep, detected, notes)


def _parse_csv(path: Path, sep: str, encoding: str, notes: list[str]) -> pd.DataFrame:
    header = _header(path, sep, encoding)
    found = sep
    if len(header) == 1:  # one column: maybe another delimiter
        found = max(DELIMITERS, key=lambda d: header[0].count(d))
        if found != sep and header[0].count(found) > 0:
            header = _header(path, found, encoding)
        else:
            found = sep
    _refuse_duplicate_columns([str(c) for c in header], f" in {path}")
    frame = pd.read_csv(path, sep=found, encoding=encoding)
    if found != sep:  # noted once the whole file has been read with it
        notes.append(f"{path.name}: columns separated by {found!r}")
    return frame


def _header(path: Path, sep: str, encoding: str) -> list:
    """The first row as written (pandas renames duplicate names; this does not)."""
    frame = pd.read_csv(path, sep=sep, encoding=encoding, header=None, nrows=1, dtype=str)
    return [("" if pd.isna(v) else str(v)) for v in frame.iloc[0].tolist()]


def _open_maybe_compressed(path: Path) -> BinaryIO:
    import bz2
    import gzip
    import lzma

    openers: dict[str, Callable[..., Any]] = {".gz": gzip.open, ".bz2": bz2.open,
                                              ".xz": lzma.open}
    opener = openers.get(path.suffix.lower())
    return opener(path, "rb") if opener else open(path, "rb")  # noqa: SIM115


def _listed(items: list[str], most: int = 12) -> str:
    """Up to ``most`` items and how many more: an error stays one readable line."""
    shown = ", ".join(items[:most])
    return shown + (f" and {len(items) - most:,} more" if len(items) > most else "")


def _detect_encoding(path: Path) -> str:
    """The encoding of a non-UTF-8 text file: a multi-byte one charset-normalizer recognises
    (Shift JIS, GB18030, UTF-16...), else Western single-byte text: cp1252 when it decodes,
    else latin-1 (which decodes any bytes). Single-byte code pages cannot be told apart
    reliably (``chèque`` read as cp1250 becomes ``chčque``); ``--encoding`` says otherwise."""
    import re

    with _open_maybe_compressed(path) as fh:
        sample = fh.read(1 << 20)
    try:
        from charset_normalizer import from_bytes

        best = from_bytes(sample).best()
        if best is not None and best.encoding not in ("utf_8", "ascii") and not re.match(
                SINGLE_BYTE, best.encoding):
            return best.encoding.replace("_", "-")
    except ImportError:
        pass
    try:
        sample.decode("cp1252")
        return "cp1252"
    except UnicodeDecodeError:
        return "latin-1"


SINGLE_BYTE = r"^(cp\d|windows|iso8859|iso-8859|latin|mac|koi8|tis|hp_|ptcp|kz|kz1048)"
"""charset-normalizer's names of single-byte code pages: guesses among them are not trusted."""


def _label_variants(y: pd.Series, target: str, where: str, merge: bool,
                    notes: list[str]) -> pd.Series:
    """``y`` with spellings of one label (case, surrounding spaces) refused or merged."""
    text = y.astype(str)
    key = text.str.strip().str.casefold()
    counts = text.groupby(key).value_counts()
    groups = {k: c for k, c in counts.groupby(level=0) if len(c) > 1}
    if not groups:
        return y
    shown = "; ".join(" / ".join(f"{label!r} ({n} rows)" for (_, label), n in c.items())
                      for c in list(groups.values())[:5])
    if not merge:
        raise UserInputError(
            f"target {target!r}{where} has labels that differ only in case or surrounding "
            f"spaces: {shown}. Fix the file, or pass --merge-label-variants to merge each "
            "group into its most frequent spelling")
    mapping = {}
    for c in groups.values():
        keep = c.idxmax()[1]
        mapping.update({label: keep for (_, label) in c.index if label != keep})
    notes.append("merged target labels that differ only in case or spaces: "
                 + ", ".join(f"{a!r} -> {b!r}" for a, b in mapping.items()))
    return y.where(~text.isin(mapping), text.map(mapping))


def _refuse_duplicate_columns(names: list[str], where: str) -> None:
    seen: dict[str, list[int]] = {}
    for position, name in enumerate(names, start=1):
        seen.setdefault(name, []).append(position)
    twice = {n: p for n, p in seen.items() if len(p) > 1}
    if twice:
        listed = "; ".join(f"{n!r} (columns {', '.join(map(str, p))})" for n, p in twice.items())
        raise UserInputError(f"column names appear more than once{where}: {listed}. Rename or "
                             "drop the copies: each column needs its own name")


def _refuse_numbers_with_text(target: pd.Series, name: str, where: str) -> None:
    """A target that is a number in most rows and text in a few: a corrupted numeric target.
    Blanks are missing targets (their rows are dropped), not text."""
    values = blank_to_nan(target).dropna()
    parsed = pd.to_numeric(values, errors="coerce")
    bad = values[parsed.isna()]
    if bad.empty or parsed.notna().mean() < NUMERIC_TARGET_MIN_SHARE:
        return
    shown = ", ".join(f"{v!r} ({_row(i, where)})" for i, v in bad.head(3).items())
    raise UserInputError(
        f"target {name!r} is a number in {int(parsed.notna().sum())} of {len(values)} rows"
        f"{where}, but not in {len(bad)}: {shown}. Fix or blank those cells (rows with a "
        "blank target are dropped)")


def _row(index: Any, where: str) -> str:
    """A row as the user finds it: the line of the file (header = line 1), else the index."""
    return f"line {int(index) + 2}" if where else f"index {index}"


def _refuse_too_many_classes(target: pd.Series, name: str, n_classes: int, where: str) -> None:
    counts = target.value_counts()
    singletons = int((counts == 1).sum())
    if n_classes <= 2 or (n_classes <= MAX_CLASSES and singletons * 2 <= n_classes):
        return
    why = ("it looks like an identifier, not an outcome" if singletons * 2 > n_classes
           else f"at most {MAX_CLASSES} classes can be cross-validated")
    raise UserInputError(
        f"target {name!r} has {n_classes} distinct values in {len(target)} rows{where}, "
        f"{singletons} of them in a single row: {why}. Choose the outcome column with --target "
        "(a class label repeated across rows, or a number for regression)")


def infer_target(columns: list[str], where: str = "") -> str:
    """The one column named like a target, or an error listing the columns."""
    matches = [c for c in columns if c.strip().lower() in TARGET_NAMES]
    if len(matches) == 1:
        return matches[0]
    why = "several columns look like a target" if matches else "no column is named like a target"
    found = ", ".join(matches) if matches else "expected one of " + "/".join(TARGET_NAMES)
    raise UserInputError(
        f"cannot pick the target{where}: {why} ({found}). "
        f"Pass --target with one of: {', '.join(columns)}"
    )


def infer_task(y: pd.Series) -> str:
    """binary / multiclass / regression from the target's values."""
    values = y.dropna()
    n_unique = values.nunique()
    if pd.api.types.is_bool_dtype(values) or n_unique <= 2:
        return "binary"
    if pd.api.types.is_numeric_dtype(values):
        integral = bool(np.all(np.mod(values.to_numpy(dtype=float), 1) == 0))
        if integral and n_unique <= min(MULTICLASS_MAX_CLASSES, max(3, len(values) // 20)):
            return "multiclass"
        return "regression"
    return "multiclass"


def _missing_mask(series: pd.Series) -> pd.Series:
    """Missing, or (in a text column) blank."""
    return blank_to_nan(series).isna() if _is_text(series) else series.isna()


def _is_text(series: pd.Series) -> bool:
    return not (pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series))


def _numeric_share(series: pd.Series) -> float:
    values = series.dropna()
    return float(pd.to_numeric(values, errors="coerce").notna().mean()) if len(values) else 0.0


def _sort_key(value: Any) -> tuple[str, Any]:
    return (str(type(value).__name__), value)


def _with_target(df: pd.DataFrame, target: str | None, where: str) -> tuple[pd.DataFrame, str]:
    """A copy with string column names, no duplicate names, the target found (or inferred),
    and at least one other column."""
    if df.empty or df.shape[1] == 0:
        raise UserInputError(f"the data{where} has no rows or no columns")
    df = df.copy()
    df.columns = [str(c) for c in df.columns]
    _refuse_duplicate_columns(list(df.columns), where)
    if target is None:
        target = infer_target(list(df.columns), where=where)
    elif target not in df.columns:
        raise UserInputError(
            f"target column {target!r} not found{where}. Columns: {', '.join(df.columns)}"
        )
    if df.shape[1] < 2:
        raise UserInputError(f"the data{where} has only the target column; no features")
    return df, target


def _clean_target(df: pd.DataFrame, target: str, task: str | None, where: str,
                  merge_label_variants: bool, missing: pd.Series,
                  notes: list[str]) -> pd.DataFrame:
    """Rows without a target dropped (noted), label variants refused or merged, numbers stored
    as text parsed, an infinite class label refused."""
    y_raw = df[target]
    if missing.all():
        raise UserInputError(f"target {target!r} is missing in all {len(df)} rows{where}")
    if _is_text(y_raw) and y_raw.nunique() > 2:
        _refuse_numbers_with_text(y_raw, target, where)
    if missing.any():
        notes.append(f"dropped {int(missing.sum())} rows whose target {target!r} is missing")
        df = df.loc[~missing].reset_index(drop=True)
    if _is_text(df[target]) and not is_regression(task):  # None: not yet known
        df[target] = _label_variants(df[target], target, where, merge_label_variants, notes)
    if _is_text(df[target]) and _numeric_share(df[target]) == 1.0 and df[target].nunique() > 2:
        df[target] = parse_numeric_text(df[target])
    if not is_regression(task) and pd.api.types.is_numeric_dtype(df[target]):
        infinite = np.isinf(df[target].to_numpy(dtype=float))
        if infinite.any():
            raise UserInputError(
                f"target {target!r} is infinite in {int(infinite.sum())} rows{where} (first: "
                f"{_row(int(np.flatnonzero(infinite)[0]), where)}); a target must be "
                "finite: fix or blank those cells (rows with a blank target are dropped)")
    return df


def _classes(y: pd.Series, target: str, task: str, where: str) -> tuple:
    """A classifier's classes, sorted (at least two; exactly two for binary); () for a
    regression, whose target must be numeric."""
    if is_regression(task):
        if not pd.api.types.is_numeric_dtype(y):
            raise UserInputError(f"task 'regression' needs a numeric target; {target!r} is text")
        return ()
    values = sorted(y.dropna().unique(), key=_sort_key)
    if len(values) < 2:
        raise UserInputError(
            f"target {target!r} has a single class {values[0]!r} in {len(y)} rows{where};"
            " a classifier needs at least two"
        )
    classes = tuple(v.item() if hasattr(v, "item") else v for v in values)
    _refuse_too_many_classes(y, target, len(classes), where)
    if task == "binary" and len(classes) != 2:
        raise UserInputError(
            f"task 'binary' needs exactly 2 classes; target {target!r} has {len(classes)}"
        )
    return classes


def _typed_columns(df: pd.DataFrame, target: str, notes: list[str],
                   ) -> tuple[dict[str, ColumnInfo], dict[str, np.ndarray]]:
    """Each feature column typed once, here (the pipeline's coercion is then a no-op); an
    infinite number becomes missing, as a model sees it at prediction time (noted)."""
    columns = {c: infer_column(c, df[c]) for c in df.columns if c != target}
    infinite_cells: dict[str, np.ndarray] = {}
    for c, info in columns.items():
        if info.reason == TWO_ORDERS_REASON:
            notes.append(f"column {c!r}: {TWO_ORDERS_REASON}; write them as YYYY-MM-DD to "
                         "use them as dates")
        if info.kind == "numeric":
            df[c] = (parse_numeric_text(df[c]) if info.numeric_text
                     else pd.to_numeric(df[c], errors="coerce")).astype(float)
            infinite = np.isinf(df[c].to_numpy())
            if infinite.any():
                df.loc[infinite, c] = np.nan
                infinite_cells[c] = infinite
                notes.append(_infinite_note(c, infinite))
    return columns, infinite_cells
