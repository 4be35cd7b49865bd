"""A data profile of the training rows as one HTML page: aggregates per column (kind, missing
share, distinct values, numeric summary or most frequent value), never a row."""

from __future__ import annotations

import html

import pandas as pd

DECIMALS = 4


def profile_table(dataset) -> pd.DataFrame:
    rows = []
    for name, info in dataset.columns.items():
        col = dataset.frame[name]
        row = {"column": name, "kind": info.kind, "role": "target" if name == dataset.target
               else ("feature" if info.is_feature else "excluded"),
               "missing_share": round(float(col.isna().mean()), DECIMALS),
               "distinct": int(col.nunique(dropna=True))}
        numeric = pd.to_numeric(col, errors="coerce")
        if info.kind == "numeric" and numeric.notna().any():
            row.update({k: round(float(v), DECIMALS) for k, v in
                        numeric.describe()[["mean", "std", "min", "50%", "max"]].items()})
        elif info.kind in ("categorical", "constant") or name == dataset.target:
            counts = col.value_counts(normalize=True, dropna=True)
            if len(counts):
                row["most_frequent"] = str(counts.index[0])
                row["most_frequent_share"] = round(float(counts.iloc[0]), DECIMALS)
        if info.reason and not info.is_feature:
            row["why_excluded"] = info.reason
        rows.append(row)
    return pd.DataFrame(rows).rename(columns={"50%": "median"})


def profile_html(dataset) -> str:
    table = profile_table(dataset)
    title = html.escape(f"{dataset.name}: training rows profile")
    return ("<!doctype html><html><head><meta charset='utf-8'><title>" + title + "</title>"
            "<style>body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse;"
            "font-size:13px}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
            "td:first-child,th:first-child{text-align:left}</style></head><body>"
            f"<h2>{title}</h2><p>{dataset.n_rows} rows, {len(dataset.columns)} columns, target "
            f"<b>{html.escape(str(dataset.target))}</b> ({dataset.task}). Aggregates of the "
            "training rows only: the sealed holdout is not described here.</p>"
            + table.to_html(index=False, na_rep="", escape=True) + "</body></html>")
