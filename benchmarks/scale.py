"""Scale in the suite: a 1M-row, 50-column binary task within a 600 s budget on this machine,
with the peak memory of the whole process tree (the command and its workers) and the search's
attempts per minute.

    python benchmarks/scale.py [--rows 1000000] [--columns 50] [--budget 600] [--load]

The data is synthetic (scikit-learn's ``make_classification``: 30 informative and redundant
columns, 20% positives, 2% of labels flipped; 5 of the 50 columns turned into categoricals of
10-200 levels) and written once as Parquet. The command runs as a user runs it
(``mlflow-agentic run --time-budget``, registration included) in a fresh sqlite store; the
harness samples the resident memory of the command and all its children every 0.25 s and
reports the peak of their sum (``/usr/bin/time -v`` sees one process only: the workers are
children). Prints one line of JSON and appends it to ``benchmarks/results/scale.jsonl``.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
RESULTS = ROOT / "benchmarks" / "results" / "scale.jsonl"


def make_data(rows: int, columns: int, path: Path) -> None:
    import numpy as np
    import pandas as pd
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=rows, n_features=columns, n_informative=20,
                               n_redundant=10, weights=[0.8], flip_y=0.02, random_state=0)
    frame = pd.DataFrame(X.astype("float32"), columns=[f"x{i}" for i in range(columns)])
    for i, levels in enumerate((10, 25, 50, 100, 200)):  # binned columns as categoricals
        column = f"x{i}"
        codes = pd.qcut(frame[column], levels, labels=False, duplicates="drop")
        frame[column] = "c" + codes.astype(str)
    frame["label"] = np.where(y == 1, "yes", "no")
    frame.to_parquet(path, index=False)


def peak_memory(pid: int, stop: threading.Event, peak: list[float]) -> None:
    """The largest sum of resident memory of ``pid`` and its descendants (MiB)."""
    import psutil

    root = psutil.Process(pid)
    while not stop.is_set():
        try:
            procs = [root, *root.children(recursive=True)]
            total = 0
            for proc in procs:
                with contextlib.suppress(psutil.Error):
                    total += proc.memory_info().rss
            peak[0] = max(peak[0], total / 2**20)
        except psutil.Error:
            return
        stop.wait(0.25)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--columns", type=int, default=50)
    parser.add_argument("--budget", type=float, default=600)
    parser.add_argument("--load", action="store_true", help="keep one core busy meanwhile")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import peers

    work = Path(tempfile.mkdtemp(prefix="scale-"))  # the run's store and model: removed at exit
    atexit.register(shutil.rmtree, work, ignore_errors=True)
    data = Path(tempfile.gettempdir()) / f"scale-{args.rows}x{args.columns}.parquet"
    if not data.exists():
        make_data(args.rows, args.columns, data)
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{work}/mlflow.db",
           "PATH": f"{BIN}:{os.environ.get('PATH', '')}"}
    cmd = [str(BIN / "mlflow-agentic"), "run", "--data", str(data), "--target", "label",
           "--time-budget", str(args.budget), "--quiet"]
    burner = peers.busy_core() if args.load else None
    stop, peak = threading.Event(), [0.0]
    start = time.perf_counter()
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env, cwd=work)
        sampler = threading.Thread(target=peak_memory, args=(proc.pid, stop, peak))
        sampler.start()
        out, err = proc.communicate()
        wall = time.perf_counter() - start
    finally:
        stop.set()
        if burner is not None:
            burner.kill()
    if proc.returncode != 0:
        sys.exit(f"mlflow-agentic failed:\n{err[-3000:]}")
    attempts = int(re.search(r"Agentic AutoML: (\d+) attempts", out).group(1))
    holdout = re.search(r"selected (\S+) \S+ CV (\S+) vs holdout (\S+),", out)
    row = {"rows": args.rows, "columns": args.columns, "budget": args.budget,
           "load": args.load, "wall": round(wall, 1), "overrun": round(wall / args.budget - 1, 4),
           "peak_mib": round(peak[0]), "attempts": attempts,
           "attempts_per_minute": round(attempts / wall * 60, 2),
           "selected": holdout.group(1), "cv": float(holdout.group(2)),
           "holdout": float(holdout.group(3)), "measured": time.strftime("%Y-%m-%d")}
    print(json.dumps(row))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    with RESULTS.open("a") as results:
        results.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
