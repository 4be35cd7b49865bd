"""Dataset loading, column typing, task and target inference, and the errors users see."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mlflow_agentic.core.errors import UserInputError
from mlflow_agentic.data import Dataset
from tests.conftest import CHURN


def test_churn_is_typed_like_a_person_would(churn_small):
    ds = Dataset.from_path(CHURN)
    assert ds.target == "Churn" and ds.task == "binary" and ds.classes == ("No", "Yes")
    assert ds.name == "churn" and ds.n_rows == 7043
    cols = ds.columns
    assert cols["customerID"].kind == "id"
    assert cols["TotalCharges"].kind == "numeric" and cols["TotalCharges"].numeric_text
    assert cols["TotalCharges"].missing_rate == pytest.approx(11 / 7043)
    assert cols["tenure"].kind == "numeric" and cols["Contract"].kind == "categorical"
    assert "customerID" in ds.excluded_columns and "customerID" not in ds.feature_columns
    # typed once, when read: numbers stored as text are floats, blanks missing
    assert pd.api.types.is_float_dtype(ds.X["TotalCharges"])
    assert int(ds.X["TotalCharges"].isna().sum()) == 11


def test_task_inference():
    rng = np.random.default_rng(0)
    base = {"a": rng.normal(size=120), "b": rng.choice(list("xyz"), 120)}
    assert Dataset.from_frame(pd.DataFrame({**base, "y": rng.normal(size=120)})).task == \
        "regression"
    assert Dataset.from_frame(pd.DataFrame({**base, "y": rng.integers(0, 3, 120)})).task == \
        "multiclass"
    assert Dataset.from_frame(pd.DataFrame({**base, "label": rng.choice(["a", "b"], 120)})
                              ).task == "binary"


def test_column_kinds():
    n = 60
    df = pd.DataFrame({
        "row_id": np.arange(n), "const": 1, "when": pd.date_range("2024-01-01", periods=n)
        .strftime("%Y-%m-%d"), "num": np.linspace(0, 1, n), "cat": ["p", "q", "r"] * 20,
        "target": [0, 1] * 30})
    kinds = {c: i.kind for c, i in Dataset.from_frame(df).columns.items()}
    assert kinds == {"row_id": "id", "const": "constant", "when": "datetime", "num": "numeric",
                     "cat": "categorical"}


def test_rows_with_missing_target_are_dropped_and_noted():
    df = pd.DataFrame({"x": [i % 7 for i in range(30)], "target": ["a", "b", None] * 10})
    ds = Dataset.from_frame(df)
    assert ds.n_rows == 20 and ds.dropped_missing_target == 10 and ds.notes


def test_parquet_roundtrip(tmp_path, churn_frame):
    path = tmp_path / "customers.parquet"
    churn_frame.to_parquet(path)
    ds = Dataset.from_path(path, target="Churn")
    assert ds.name == "customers" and ds.n_rows == len(churn_frame)


@pytest.mark.parametrize("columns, fragment", [
    (["a", "b", "c"], "no column is named like a target"),
    (["a", "label", "target"], "several columns look like a target (label, target)"),
])
def test_ambiguous_target_lists_the_columns(columns, fragment):
    df = pd.DataFrame({c: [0, 1] * 5 for c in columns})
    with pytest.raises(UserInputError) as err:
        Dataset.from_frame(df)
    assert fragment in str(err.value) and "Pass --target with one of: " in str(err.value)


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("make, target, fragment", [
    (lambda p: p / "nope.csv", None, "data file not found"),
    (lambda p: write(p, "empty.csv", ""), None, "data file is empty"),
    (lambda p: write(p, "header.csv", "a,b,target\n"), None, "header but no rows"),
    (lambda p: write(p, "data.json", "{}"), None, "unsupported file type '.json'"),
    (lambda p: write(p, "bin.parquet", "not parquet"), None, "cannot read"),
    (lambda p: write(p, "ok.csv", "a,target\n1,0\n2,1\n"), "Target", "target column 'Target' not "
     "found in"),
    (lambda p: write(p, "one.csv", "a,target\n1,x\n2,x\n3,x\n"), None, "single class 'x'"),
    (lambda p: write(p, "miss.csv", "a,target\n1,\n2,\n"), None, "missing in all 2 rows"),
])
def test_bad_files_name_the_problem(tmp_path, make, target, fragment):
    path = make(tmp_path)
    with pytest.raises(UserInputError) as err:
        Dataset.from_path(path, target)
    assert fragment in str(err.value)


def test_label_variants_are_refused_or_merged_when_asked():
    frame = pd.DataFrame({"x": range(12), "churn": ["Yes", "No", "yes ", "No"] * 3})
    with pytest.raises(UserInputError, match=r"differ only in case or surrounding spaces: "
                                             r"'Yes' \(3 rows\) / 'yes ' \(3 rows\)"):
        Dataset.from_frame(frame, "churn")
    merged = Dataset.from_frame(frame, "churn", merge_label_variants=True)
    assert merged.task == "binary" and sorted(merged.y.unique()) == ["No", "Yes"]
    assert "merged target labels that differ only in case or spaces: 'yes ' -> 'Yes'" in \
        merged.notes


def test_dates_written_day_first_are_read_day_first_every_one():
    """500 dates, most written 13/04/2021 and a fifth as 2021-04-13: pandas' mixed parsing
    read 04/03/2021 month first beside 13/04/2021 day first (158 wrong days here); the column
    is read in one order, and a column in both orders is text, said in a note."""
    import numpy as np

    from mlflow_agentic.trainers.transforms import to_datetime_features

    rng = np.random.default_rng(0)
    days = pd.to_datetime("2020-01-01") + pd.to_timedelta(rng.integers(0, 700, 500), unit="D")
    text = [d.strftime("%Y-%m-%d") if i % 5 == 0 else d.strftime("%d/%m/%Y")
            for i, d in enumerate(days)]
    frame = pd.DataFrame({"when": text, "x": rng.normal(size=500)})
    frame["y"] = np.where(frame["x"] > 0, "a", "b")
    info = Dataset.from_frame(frame, "y").columns["when"]
    assert info.kind == "datetime" and info.dayfirst
    read = to_datetime_features(frame[["when"]], dayfirst=["when"])["when__days"]
    truth = (days - pd.Timestamp("1970-01-01")).days
    assert (read.to_numpy() == truth.to_numpy()).all()
    frame.loc[0, "when"] = "04/13/2021"  # and one month first: the order is unknowable
    both = Dataset.from_frame(frame, "y")
    assert both.columns["when"].kind == "categorical"
    assert any("dates written both day first and month first" in n for n in both.notes)


def test_times_with_a_zone_beside_times_without_are_read_not_a_crash():
    """openintro's email data (a validation dataset): ``2012-01-20T15:45:56Z``. Subtracting
    the epoch from zoned times crashed the search while it sealed the holdout."""
    from mlflow_agentic.trainers.transforms import to_datetime_features

    frame = pd.DataFrame({"t": ["2012-01-20T15:45:56Z", "2012-01-03 22:01:57",
                                "2012-01-03T22:01:57+02:00", None]})
    days = to_datetime_features(frame)["t__days"]
    assert days.iloc[0] == pytest.approx(15359.656898, abs=1e-6)
    assert days.iloc[2] < days.iloc[1]  # +02:00 is two hours earlier in UTC
    assert pd.isna(days.iloc[3])
