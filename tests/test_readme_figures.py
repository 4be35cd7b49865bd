"""The README's comparison is the recorded rows' summary (``benchmarks/summary.py``: mean rank,
wins and losses against mlflow-agentic, Wilcoxon p), never a figure typed by hand."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import independent  # noqa: E402 - the benchmark's scripts, as they run
import suite  # noqa: E402
import summary  # noqa: E402


def test_the_readmes_table_is_the_summary_of_the_test_parts_rows():
    rows = suite.load(independent.RESULTS)
    table = summary.markdown(summary.summary(rows, independent.names_of("test")))
    assert table in (ROOT / "README.md").read_text(), table
