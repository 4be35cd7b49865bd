"""Record the numbers the docs quote about the main command, from one run of it.

    python docs/record_numbers.py        # about 2 minutes on 2 cores; rewrites docs/numbers.json

Runs the README's main command as a newcomer does: a fresh virtual environment with
``pip install -e .`` (no plugin, no extra), then ``mlflow run . -P data=examples/churn.csv
--env-manager local --experiment-name churn-agentic`` from a copy of the project files with a
fresh sqlite store; then the promote example (``promote --dry-run``). What they printed goes to
``docs/numbers.json``. ``tests/test_docs.py`` fails when a page quotes a number for the main
command that is not the recorded one.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NUMBERS = ROOT / "docs" / "numbers.json"
SUMMARY = re.compile(r"Agentic AutoML: (?P<attempts>\d+) attempts \((?P<verified>\d+) "
                     r"verified\); best=(?P<best>\S+) roc_auc=(?P<cv>0\.\d{4}) "
                     r"\(baseline (?P<baseline>[\d.]+)\)")
HOLDOUT = re.compile(r"holdout \((?P<holdout_rows>\d+) rows, stratified\): selected \S+ roc_auc "
                     r"CV 0\.\d{4} vs holdout (?P<holdout>0\.\d{4}), gap (?P<gap>-?0\.\d{4})")
PROMOTE = re.compile(r"roc_auc: challenger v1 (?P<promote_challenger>0\.\d{4})")


def record() -> dict:
    with tempfile.TemporaryDirectory(prefix="numbers-") as tmp:
        work = Path(tmp)
        venv = work / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "-e", str(ROOT)],
                       check=True)
        for name in ("MLproject", "conda.yaml", "examples"):  # what `mlflow run .` reads
            source = ROOT / name
            (shutil.copytree if source.is_dir() else shutil.copy)(source, work / name)
        env = {**os.environ, "PATH": f"{venv / 'bin'}:{os.environ['PATH']}"}
        env.pop("MLFLOW_TRACKING_URI", None)
        start = time.perf_counter()
        run = subprocess.run(["mlflow", "run", ".", "-P", "data=examples/churn.csv",
                              "--env-manager", "local", "--experiment-name", "churn-agentic"],
                             cwd=work, env=env, capture_output=True, text=True, check=True)
        seconds = time.perf_counter() - start
        promote = subprocess.run(["mlflow-agentic", "promote", "--model", "churn-agentic",
                                  "--dry-run"], cwd=work, env=env, capture_output=True,
                                 text=True, check=True)
        run_text = run.stdout + run.stderr
    found: dict = {}
    for pattern, text in ((SUMMARY, run_text), (HOLDOUT, run_text), (PROMOTE, promote.stdout)):
        match = pattern.search(text)
        if match is None:
            raise SystemExit(f"no line like {pattern.pattern!r} in:\n{text}")
        found.update(match.groupdict())
    commit = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"],
                            capture_output=True, text=True).stdout.strip()
    return {"main": {**{k: int(v) if v.isdigit() else v for k, v in found.items()},
                     "seconds": round(seconds, 1), "commit": commit,
                     "date": time.strftime("%Y-%m-%d")}}


if __name__ == "__main__":
    numbers = record()
    NUMBERS.write_text(json.dumps(numbers, indent=1) + "\n")
    print(json.dumps(numbers, indent=1))
