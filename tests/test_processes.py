"""No process outlives its search: a real ``mlflow-agentic run`` killed with SIGKILL mid-search
leaves none of its worker processes (or their resource tracker) alive 15 s later."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.waiting import wait_until

pytestmark = pytest.mark.slow  # processes killed mid-search

ROOT = Path(__file__).resolve().parents[1]


def children(pid: int) -> set[int]:
    """Every live descendant of ``pid`` (from /proc: parent links)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_sigkill_of_a_search_leaves_no_process_behind(tmp_path):
    command = [str(Path(sys.executable).parent / "mlflow-agentic"), "run", "--data",
               str(ROOT / "examples" / "churn.csv"), "--n-jobs", "2", "--proposer", "random",
               "--trainers", "random_forest,hist_gradient_boosting", "--max-iterations", "60",
               "--patience", "60", "--no-register", "--no-diagnostics", "--quiet",
               "--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}"]
    proc = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        workers: set[int] = set()
        while time.monotonic() < deadline and len(workers) < 2:
            time.sleep(0.5)
            workers = children(proc.pid)
        assert len(workers) >= 2, "the search never started its workers"
        time.sleep(3)  # folds under way
        workers = children(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        wait_until(lambda: not any(alive(p) for p in workers), 30)
        survivors = sorted(p for p in workers if alive(p))
        assert survivors == [], [Path(f"/proc/{p}/cmdline").read_bytes()[:120]
                                 for p in survivors]
    finally:  # whatever the outcome, nothing of this test stays (its own process group)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)


def finished_attempts(db: Path) -> int:
    import sqlite3

    if not db.exists():
        return 0
    try:
        with contextlib.closing(sqlite3.connect(db)) as con:
            return con.execute("select count(*) from runs where status = 'FINISHED' and "
                               "name like '0%'").fetchone()[0]
    except sqlite3.Error:
        return 0


def test_int_then_term_to_the_process_group_leaves_a_resumable_search(tmp_path, churn_frame):
    """As a terminal or a CI runner stops a job: SIGINT and SIGTERM to the whole group, while
    folds run on workers. The store then holds the search KILLED, no attempt RUNNING, and the
    printed --resume finishes it."""
    import mlflow

    data = tmp_path / "churn.csv"
    churn_frame.to_csv(data, index=False)
    db = tmp_path / "mlflow.db"
    command = [str(Path(sys.executable).parent / "mlflow-agentic"), "run", "--data", str(data),
               "--n-jobs", "2", "--proposer", "random", "--seed", "3", "--trainers",
               "random_forest,hist_gradient_boosting", "--max-iterations", "30",
               "--patience", "30", "--no-register", "--no-diagnostics", "--quiet",
               "--tracking-uri", f"sqlite:///{db}"]
    proc = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and finished_attempts(db) < 3:
            time.sleep(0.3)
        os.killpg(proc.pid, signal.SIGINT)
        os.killpg(proc.pid, signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err  # the first signal decides; the second is only noted
    assert "Traceback" not in err and "KeyboardInterrupt" not in err  # nor from the workers
    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{db}")
    (search,) = client.search_runs(["1"], "tags.`agentic.role` = 'search'")
    attempts = client.search_runs(["1"], "tags.`agentic.role` = 'attempt'")
    assert search.info.status == "KILLED"
    assert search.data.tags["kept"].startswith("search run")
    assert [a.info.status for a in attempts if a.info.status == "RUNNING"] == []
    assert f"--resume {search.info.run_id}" in err
    done = subprocess.run([*command, "--resume", search.info.run_id], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert client.get_run(search.info.run_id).info.status == "FINISHED"
    attempts = client.search_runs(["1"], "tags.`agentic.role` = 'attempt'")
    assert "RUNNING" not in {a.info.status for a in attempts}


HALF_SENT = '''
import os, struct, sys, time
from mlflow_agentic.engine.workers.parallel import WorkerPool

def half_a_result(marker):
    """In a worker: start sending a 1 MB result to the parent, send 10 bytes of it, hang."""
    frame = sys._getframe()
    while "result_queue" not in frame.f_locals:  # loky's worker loop, up the stack
        frame = frame.f_back
    writer = frame.f_locals["result_queue"]._writer
    writer._send(struct.pack("!i", 1_000_000))
    writer._send(b"x" * 10)
    open(marker, "w").close()
    time.sleep(600)

pool = WorkerPool(2)
future = pool.submit(half_a_result, sys.argv[1])
while not os.path.exists(sys.argv[1]):
    time.sleep(0.1)
time.sleep(1)  # the parent's manager thread is now waiting for the other 999,990 bytes
pool.abort([future])  # what a spent time budget does
print("aborted", flush=True)
'''


def test_a_worker_killed_halfway_through_sending_its_result_does_not_hang_the_exit(tmp_path):
    """A worker cut by the budget while it sends a fold's result leaves half a message in the
    pipe; the command must still exit (it once hung for good after its search had ended)."""
    script = tmp_path / "half_sent.py"
    script.write_text(HALF_SENT)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, str(script), str(tmp_path / "sending")], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise AssertionError("the process did not exit after its pool was aborted") from None
    assert "aborted" in out, err
    assert proc.returncode == 0, err
