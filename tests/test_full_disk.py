"""A full disk mid-search, on a real filesystem (a 1.6 MB tmpfs holding the store and the
journal; CI runs as root): one clear message that says what the store holds, no traceback, the
search run KILLED (never FINISHED), and once space is freed the printed --resume finishes it."""

from __future__ import annotations

import contextlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import mlflow
import pytest

from tests.conftest import CHURN

pytestmark = pytest.mark.slow  # a real, tiny tmpfs filled up


@contextlib.contextmanager
def small_disk(path: Path, size: str):
    path.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                   check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def test_a_full_disk_says_what_the_store_holds_and_ends_resumable(tmp_path):
    # sized to fill mid-search: the store, the search's folds.csv (60 kB for churn), the journal
    with small_disk(tmp_path / "disk", "1600k") as disk:
        uri = f"sqlite:///{disk / 'mlflow.db'}"
        command = [str(Path(sys.executable).parent / "mlflow-agentic"), "run", "--data",
                   str(CHURN), "--trainers", "linear,hist_gradient_boosting",
                   "--max-iterations", "2", "--no-diagnostics", "--quiet", "--tracking-uri", uri]
        full = subprocess.run(command, cwd=disk, capture_output=True, text=True, timeout=300)
        assert full.returncode == 1, full.stderr
        assert "error: the disk is full (No space left on device)" in full.stderr
        assert "Traceback" not in full.stderr and "SQLAlchemy" not in full.stderr
        kept = re.search(r"Kept: search run (\w+) with (\d+) finished attempts", full.stderr)
        assert kept, full.stderr
        client = mlflow.MlflowClient(tracking_uri=uri)
        parent = client.get_run(kept.group(1))
        assert parent.info.status == "KILLED"  # never FINISHED: resumable
        resume = re.search(r"continue it: the same command with (--resume \w+)", full.stderr)
        subprocess.run(["mount", "-o", "remount,size=80m", str(disk)], check=True)  # freed
        done = subprocess.run([*command, *resume.group(1).split()], cwd=disk,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        # what the store held, and the attempts whose records waited in the journal (sent first)
        waiting = re.search(
            r"the records of finished attempt\(s\) ([\d, -]+) wait in the journal",
            full.stderr)
        journaled = sum(int(b) - int(a) + 1 for a, _, b in (
            (span.partition("-")[0], "-", span.rpartition("-")[2])
            for span in waiting.group(1).split(", "))) if waiting else 0
        read_back = int(kept.group(2)) + journaled
        assert f"{read_back} finished attempt(s) read back" in done.stderr, (full.stderr,
                                                                            done.stderr)
        assert client.get_run(parent.info.run_id).info.status == "FINISHED"
        attempts = client.search_runs([parent.info.experiment_id],
                                      f"tags.`mlflow.parentRunId` = '{parent.info.run_id}'")
        assert "RUNNING" not in {a.info.status for a in attempts}


def test_w12_a_disk_that_fills_while_the_store_is_made_is_named_and_leaves_no_half_store(
        tmp_path):
    with small_disk(tmp_path / "disk", "400k") as disk:
        uri = f"sqlite:///{disk / 'mlflow.db'}"
        command = [str(Path(sys.executable).parent / "mlflow-agentic"), "run", "--data",
                   str(CHURN), "--trainers", "linear", "--max-iterations", "0",
                   "--no-diagnostics", "--quiet", "--tracking-uri", uri]
        full = subprocess.run(command, cwd=disk, capture_output=True, text=True, timeout=300)
        assert full.returncode == 2, full.stderr
        assert "the disk is full (No space left on device)" in full.stderr, full.stderr
        assert "half-made file was removed" in full.stderr
        assert "Traceback" not in full.stderr
        assert not (disk / "mlflow.db").exists()
        subprocess.run(["mount", "-o", "remount,size=80m", str(disk)], check=True)  # freed
        done = subprocess.run(command, cwd=disk, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr


def test_a_disk_that_fills_beside_an_existing_store_is_one_message_and_resumes_exactly(
        tmp_path):
    """The store exists (its check passes), so the disk fills late: while the selected
    attempt's model is logged. MLflow's own SQLAlchemy tracebacks are not shown, and the
    attempts said to be kept are read back, none run twice."""
    with small_disk(tmp_path / "disk", "80m") as disk:
        uri = f"sqlite:///{disk / 'mlflow.db'}"
        base = [str(Path(sys.executable).parent / "mlflow-agentic"), "run", "--data",
                str(CHURN), "--no-diagnostics", "--quiet", "--tracking-uri", uri]
        first = subprocess.run([*base, "--trainers", "linear", "--max-iterations", "0"],
                               cwd=disk, capture_output=True, text=True, timeout=300)
        assert first.returncode == 0, first.stderr
        free = shutil.disk_usage(disk).free
        subprocess.run(["fallocate", "-l", str(free - 3 * 2**20), str(disk / "filler")],
                       check=True)
        command = [*base, "--trainers", "linear,hist_gradient_boosting,random_forest",
                   "--max-iterations", "8"]
        full = subprocess.run(command, cwd=disk, capture_output=True, text=True, timeout=300)
        assert full.returncode == 1, full.stderr
        assert "error: the disk is full (No space left on device)" in full.stderr
        assert "Traceback" not in full.stderr and "SQLAlchemy" not in full.stderr, full.stderr
        assert len(full.stderr.splitlines()) <= 4, full.stderr
        kept = re.search(r"Kept: search run (\w+) with (\d+) finished attempts", full.stderr)
        assert kept, full.stderr
        (disk / "filler").unlink()  # space freed
        resume = re.search(r"continue it: the same command with (--resume \w+)", full.stderr)
        done = subprocess.run([*command, *resume.group(1).split()], cwd=disk,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert f"{kept.group(2)} finished attempt(s) read back" in done.stderr, (full.stderr,
                                                                                done.stderr)
        client = mlflow.MlflowClient(tracking_uri=uri)
        attempts = client.search_runs(
            [client.get_run(kept.group(1)).info.experiment_id],
            f"tags.`mlflow.parentRunId` = '{kept.group(1)}'")
        indexes = [a.data.tags["attempt.index"] for a in attempts]
        assert len(indexes) == len(set(indexes)), sorted(indexes)  # none ran twice
        assert {a.info.status for a in attempts} <= {"FINISHED", "FAILED"}
