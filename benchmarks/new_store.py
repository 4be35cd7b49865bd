"""What a new sqlite store costs: MLflow's migrations (the reference) against a copy of the
cached empty store (``tracking.store.template``), in one process, through ``check_store`` as
every command makes a store. A 20 s budget pays this before sealing the holdout.

    python benchmarks/new_store.py [--stores N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path


def make(folder: Path, n: int) -> list[float]:
    from mlflow_agentic.tracking.store.check import check_store

    seconds = []
    for i in range(n):
        start = time.perf_counter()
        check_store(f"sqlite:///{folder / f'store{i}.db'}")
        seconds.append(time.perf_counter() - start)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stores", type=int, default=5)
    args = parser.parse_args()
    from mlflow_agentic.tracking.store.template import CACHE_ENV

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        os.chdir(work)
        for part in ("warm", "migrated", "copied"):
            (work / part).mkdir()
        os.environ[CACHE_ENV] = ""  # the reference: every store migrated
        make(work / "warm", 1)  # the imports, paid once by any command
        migrated = make(work / "migrated", args.stores)
        os.environ[CACHE_ENV] = str(work / "cache")
        copied = make(work / "copied", args.stores + 1)[1:]  # the first one makes the cache
    m, c = statistics.median(migrated), statistics.median(copied)
    print(f"new sqlite store, median of {args.stores}: migrated {m:.3f} s, copied {c:.3f} s; "
          f"copied / migrated = {c / m:.3f} ({m - c:.2f} s saved per new store)")


if __name__ == "__main__":
    main()
