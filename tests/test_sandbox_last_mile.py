"""The sandbox's last mile, attacked as a hostile candidate would: whatever it leaves where the
host reads its outputs (a link to a host file or to ``/dev/zero``, a FIFO, a gigabyte) fails the
attempt with the reason, and the host reads nothing but its own expected files. Containers die
with their search: Ctrl-C stops them at once, ``kill -9`` leaves none behind (the watchdog), and
the next check removes what a dead search left. Against the real Docker daemon and image."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from mlflow_agentic.sandbox import DockerSandbox, HostSandbox, Limits
from mlflow_agentic.sandbox.cleanup import LABEL, OWNER, STAGED_PREFIX, labelled, owner_alive
from mlflow_agentic.sandbox.outputs import read_folder
from tests.waiting import wait_until

from .test_sandbox import PLAIN, job

pytestmark = pytest.mark.slow  # hostile candidates in the Docker sandbox

SECRET = "root:HOST-SECRET-e3b0c44298fc:19000:0:99999:7:::"


def hostile(name: str, action: str) -> str:
    """A candidate that, when the harness writes ``name``, does ``action`` (on ``path``, the
    output's path inside) instead: it runs in the harness's process (``__main__``), so it can
    replace the harness's own writer."""
    return PLAIN + textwrap.dedent(f'''
        import os

        import __main__

        _real = __main__._write


        def _hostile(out_dir, name, data):
            if name == {name!r}:
                path = os.path.join(str(out_dir), name)
                {action}
                return
            return _real(out_dir, name, data)


        __main__._write = _hostile
        ''')


@pytest.fixture
def host_secret(tmp_path) -> Path:
    """A file only the host has: what W1's link points to."""
    secret = tmp_path / "shadow"
    secret.write_text(SECRET)
    return secret


def assert_refused(result, name: str, words: str) -> None:
    assert not result.ok and result.stage == "outputs", (result.stage, result.error)
    assert name in result.error and words in result.error, result.error
    for text in (result.error, result.log, result.traceback or ""):
        assert "HOST-SECRET" not in text


@pytest.mark.parametrize("name", ["candidate.log", "result.json"])
def test_w1_a_link_to_a_host_file_is_refused_not_read(docker_sandbox, job_parts, host_secret,
                                                      name):
    code = hostile(name, f"os.symlink({str(host_secret)!r}, path)")
    assert_refused(docker_sandbox.run(job(job_parts, code)), name, "symbolic link")


def test_w1_a_linked_model_is_never_read_as_the_models_bytes(docker_sandbox, job_parts,
                                                             host_secret):
    code = hostile("model.pkl", f"os.symlink({str(host_secret)!r}, path)")
    result = docker_sandbox.run(job(job_parts, code, save_model=True))
    assert_refused(result, "model.pkl", "symbolic link")
    assert result.model_bytes is None


def test_w2_a_link_to_dev_zero_is_refused_without_reading(docker_sandbox, job_parts):
    code = hostile("result.json", "os.symlink('/dev/zero', path)")
    assert_refused(docker_sandbox.run(job(job_parts, code)), "result.json", "symbolic link")


def test_w5_a_fifo_is_refused_and_nothing_blocks(docker_sandbox, job_parts):
    code = hostile("candidate.log", "os.mkfifo(path)")
    result = docker_sandbox.run(job(job_parts, code))  # returning at all is the point
    assert_refused(result, "candidate.log", "FIFO")


def test_w8_the_output_folder_is_capped(job_parts):
    sandbox = DockerSandbox(limits=Limits(memory="512m", cpus=1, timeout=60,
                                          outputs="8m")).check()
    code = PLAIN.replace("def build_pipeline(columns):\n", textwrap.dedent('''\
        def build_pipeline(columns):
            import os
            written = 0
            try:
                with open("/sandbox/out/filler", "wb") as handle:
                    for _ in range(64):
                        handle.write(b"x" * 2**20)
                        written += 2**20
            except OSError:
                pass
            os.remove("/sandbox/out/filler")  # room for the harness's own outputs
            if written > 8 * 2**20:
                raise RuntimeError(f"wrote {written} bytes to the output folder")
        '''))
    result = sandbox.run(job(job_parts, code))
    assert result.ok, result.error  # the filler stopped at the cap; the attempt itself ran
    assert result.predictions is not None


def test_a_file_larger_than_its_cap_is_refused(docker_sandbox, job_parts):
    code = hostile("candidate.log", "open(path, 'wb').write(b'y' * 200_000)")
    assert_refused(docker_sandbox.run(job(job_parts, code)), "candidate.log", "more than")


@pytest.mark.parametrize("case", ["link", "fifo", "dev_zero"])
def test_the_host_sandbox_reads_back_as_warily(job_parts, host_secret, case):
    """With --allow-host-execution the outputs are a host folder: opened without following a
    link, without blocking on a FIFO."""
    action = {"link": f"os.symlink({str(host_secret)!r}, path)", "fifo": "os.mkfifo(path)",
              "dev_zero": "os.symlink('/dev/zero', path)"}[case]
    result = HostSandbox(Limits(timeout=60)).run(job(job_parts, hostile("result.json", action)))
    assert_refused(result, "result.json", "FIFO" if case == "fifo" else "symbolic link")


def test_read_folder_takes_only_plain_files_within_their_caps(tmp_path, host_secret):
    out = tmp_path / "out"
    out.mkdir()
    (out / "result.json").write_text('{"ok": true}')
    (out / "candidate.log").symlink_to(host_secret)
    os.mkfifo(out / "pred.npy")
    (out / "model.pkl").write_bytes(b"z" * 100)
    os.link(host_secret, out / "extra.txt")
    (out / "hard.json").hardlink_to(out / "result.json")
    caps = {"result.json": 1000, "candidate.log": 1000, "pred.npy": 1000, "model.pkl": 50,
            "missing.txt": 10}
    outputs = read_folder(out, caps)
    assert set(outputs.refused) == {"result.json", "candidate.log", "pred.npy", "model.pkl"}
    assert "hard links" in outputs.refused["result.json"]
    assert "symbolic link" in outputs.refused["candidate.log"]
    assert "FIFO" in outputs.refused["pred.npy"]
    assert "more than the 50" in outputs.refused["model.pkl"]
    assert outputs.files == {}
    (out / "hard.json").unlink()
    assert read_folder(out, caps).files == {"result.json": b'{"ok": true}'}


# ---- containers die with their search ---------------------------------------------------------
SLEEPER = PLAIN.replace("def build_pipeline(columns):\n",
                        "def build_pipeline(columns):\n    import time\n    time.sleep(600)\n")

SEARCH = textwrap.dedent('''
    import sys
    import numpy as np
    import pandas as pd
    from mlflow_agentic.sandbox import DockerSandbox, Limits, SandboxJob
    from mlflow_agentic.sandbox.runners import run_all

    code = open(sys.argv[1]).read()
    X = pd.DataFrame({"a": np.arange(40.0), "b": np.arange(40.0) % 3})
    y = np.arange(40) % 2
    jobs = [SandboxJob(code, "binary", (0, 1), train=X, target=y, rows=X) for _ in range(2)]
    sandbox = DockerSandbox(limits=Limits(memory="256m", cpus=1, timeout=300)).check()
    print("started", flush=True)
    run_all(sandbox, jobs, parallel=2)
''')


def owned_by(pid: int) -> list:
    import docker

    client = docker.from_env()
    try:
        return [c for c in labelled(client)
                if (c.attrs.get("Labels") or {}).get(OWNER, "").split(":")[1:2] == [str(pid)]]
    finally:
        client.close()


def staged_of(pid: int) -> list[Path]:
    import tempfile

    return list(Path(tempfile.gettempdir()).glob(f"{STAGED_PREFIX}{pid}-*"))


@pytest.fixture
def search_process(docker_sandbox, tmp_path):
    """A process running two sleeping candidates in containers, as code mode's CV does."""
    (tmp_path / "candidate.py").write_text(SLEEPER)
    (tmp_path / "search.py").write_text(SEARCH)
    # a foreground process: Ctrl-C raises KeyboardInterrupt even when the test runner ignores
    # SIGINT (started in the background), which the child would inherit (it failed so twice)
    proc = subprocess.Popen([sys.executable, str(tmp_path / "search.py"),
                             str(tmp_path / "candidate.py")], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert wait_until(lambda: len(owned_by(proc.pid)) == 2, 60), proc.stdout.read()
    assert staged_of(proc.pid)
    yield proc
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def test_w4_kill_9_leaves_no_container_and_no_staged_rows(search_process):
    search_process.kill()  # SIGKILL: no handler of the search runs
    search_process.wait()
    assert wait_until(lambda: not owned_by(search_process.pid), 30), \
        "the killed search's containers are still there"
    assert wait_until(lambda: not staged_of(search_process.pid), 10)


def test_w7_ctrl_c_stops_the_containers_at_once(search_process):
    search_process.send_signal(signal.SIGINT)
    sent = time.monotonic()
    try:  # the containers' own limit is 300 s: ending well before it is the point
        search_process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("Ctrl-C waited for the sandbox's timeout")
    assert time.monotonic() - sent <= 5.0  # the bound for Ctrl-C
    assert "KeyboardInterrupt" in search_process.stdout.read()
    assert not owned_by(search_process.pid)


class Started:
    """A container as the Docker SDK returns it: an id, and ``remove(force=True)``."""

    def __init__(self, cid: str) -> None:
        self.id, self.removed = cid, False

    def remove(self, force: bool = False) -> None:
        self.removed = force


def test_a_container_started_as_ctrl_c_came_is_removed_at_once():
    """The race behind W7's one failure under load: a thread was between starting its container
    and registering it when Ctrl-C stopped the others; it then ran to its 300 s limit."""
    from mlflow_agentic.sandbox.cleanup import Live

    live, running, late = Live(), Started("a"), Started("b")
    live.add(running)
    assert live.stop_all() == 1 and running.removed
    live.add(late)  # registered after the stop: removed, not kept to run
    assert late.removed and live.stop_all() == 1  # still only the first (its run discards it)
    live.reopen()  # the next batch of jobs
    fresh = Started("c")
    live.add(fresh)
    assert not fresh.removed


class Interrupted:
    """A sandbox (``run``, ``stop_all``) whose first job is cut by Ctrl-C."""

    def run(self, job):
        if job == 0:
            raise KeyboardInterrupt
        return job

    def stop_all(self) -> int:
        from mlflow_agentic.sandbox.cleanup import LIVE

        return LIVE.stop_all()


def test_after_an_interrupted_batch_the_next_job_may_run():
    """The stop covers the interrupted batch's own threads only: once they are done, a later
    job of the same process (a refit, a prediction through the sandbox) keeps its container."""
    from mlflow_agentic.sandbox.cleanup import LIVE
    from mlflow_agentic.sandbox.runners import run_all

    with pytest.raises(KeyboardInterrupt):
        run_all(Interrupted(), [0, 1], parallel=2)
    later = Started("later")
    LIVE.add(later)
    LIVE.discard(later)
    assert not later.removed


def test_the_next_check_removes_what_a_dead_search_left(docker_sandbox, tmp_path):
    import docker

    client = docker.from_env()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    token = f"{os.uname().nodename}:{dead}:1"
    assert not owner_alive(token)
    orphan = client.containers.run(docker_sandbox.image, ["sleep", "600"], detach=True,
                                   network_mode="none", labels={LABEL: "candidate",
                                                                OWNER: token})
    try:
        DockerSandbox(limits=docker_sandbox.limits).check()
        assert wait_until(lambda: not [c for c in client.containers.list(all=True, sparse=True)
                                       if c.id == orphan.id], 10)
    finally:
        import contextlib

        with contextlib.suppress(docker.errors.NotFound):
            orphan.remove(force=True)
        client.close()


def test_a_candidate_printing_the_ready_line_early_reads_only_its_own_outputs(docker_sandbox,
                                                                              job_parts):
    code = PLAIN.replace("def build_pipeline(columns):\n", textwrap.dedent('''\
        def build_pipeline(columns):
            import os
            os.write(1, b"\\nmlflow-agentic: outputs ready\\n")
            import time
            time.sleep(3)
        '''))
    result = docker_sandbox.run(job(job_parts, code))
    assert not result.ok and result.predictions is None  # read before it wrote: a failure


PLANTS_A_FIFO = PLAIN + '''
import os
import threading
import time


def _plant():
    """Keeps replacing the log the harness writes with a FIFO, whose open would block."""
    while True:
        try:
            os.unlink("/sandbox/out/candidate.log")
        except OSError:
            pass
        try:
            os.mkfifo("/sandbox/out/candidate.log")
        except OSError:
            pass
        time.sleep(0.001)


threading.Thread(target=_plant).start()  # not a daemon: it would keep the process alive
'''


def test_a_thread_planting_a_fifo_cannot_hold_the_search_past_its_limit(tmp_path, churn_frame,
                                                                       docker_sandbox):
    """Issue 52's finding: a candidate's thread swapping ``candidate.log`` for a FIFO held a
    code search past 240 s at a 90 s limit (every fold's container to its limit, one round of
    folds after another). Now the harness never opens what the candidate left, and the first
    failed fold stops the others: the search ends within the limit + 30 s, the attempt
    recorded as failed, no container left."""
    import time

    from mlflow_agentic.frontdoor.api import search
    from mlflow_agentic.proposers.factory import CodeOptions, LLMOptions
    from tests.fakes.code_team import CodeTeam
    from tests.fakes.openai_server import ScriptedOpenAI

    limit = 20
    team = CodeTeam(["fifo"], {"fifo": PLANTS_A_FIFO})
    server = ScriptedOpenAI(responder=team)
    started = time.monotonic()
    try:
        result = search(churn_frame.head(400), "Churn", proposer="code", cv=5, seed=1,
                        tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}", register=False,
                        llm=LLMOptions("scripted", server.base_url), diagnostics=False,
                        code=CodeOptions(max_experiments=1, limits=Limits(
                            memory="512m", cpus=1, timeout=limit)))
    finally:
        server.close()
    elapsed = time.monotonic() - started
    assert elapsed < limit + 30, elapsed
    (attempt,) = result.run.attempts  # recorded: refused, failed, or its FIFO never opened
    assert attempt.status in ("verified", "failed", "rejected"), attempt.status
    assert owned_by(os.getpid()) == []  # this process's: another worker's may be running


def test_a_hanging_fold_stops_its_candidates_other_folds(job_parts, docker_sandbox):
    """Five folds two at a time, every one hanging: one limit's wait, not three rounds'."""
    import time

    from mlflow_agentic.sandbox.runners import run_all

    from .test_sandbox import with_pipeline

    short = DockerSandbox(docker_sandbox.image, Limits(memory="512m", cpus=1, timeout=6))
    hangs = job(job_parts, with_pipeline("    while True:\n        pass\n"))
    started = time.monotonic()
    results = run_all(short, [hangs] * 5, parallel=2)
    assert time.monotonic() - started < 6 * 2, "waited for another round of folds"
    assert [r.ok for r in results] == [False] * 5
    assert any(r.error == "wall-clock limit: killed after 6s" for r in results)
    assert sum(r.stage == "skipped" for r in results) >= 3
