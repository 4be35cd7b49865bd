"""The README's Python example runs as written (it once crashed on an undefined name after it
had already registered a version): extracted from the README and run in a fresh process, from
the repository root, against a fresh sqlite store."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def python_block(section: str) -> str:
    """The first ```python block under the README heading ``section``."""
    text = (ROOT / "README.md").read_text()
    start = text.index(f"\n## {section}\n")
    found = re.search(r"```python\n(.*?)```", text[start:], re.S)
    assert found, f"no python block under {section!r}"
    return found.group(1)


def test_the_python_api_example_runs_as_written(tmp_path):
    code = python_block("The Python API")
    assert 'search("examples/churn.csv"' in code and ".predict(" in code
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}",
           "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert out.startswith("Agentic AutoML: "), out
    assert re.search(r"^\[('(Yes|No)' ?){3}\]$", out, re.M), out  # three predicted labels
    assert out.rstrip().endswith("@challenger -> version 1"), out  # a fresh store: version 1
