"""Starting a real server process on 127.0.0.1 for a test, and stopping it."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running_server(command: list[str], ready_url: str, log_path: Path, timeout: float,
                   env: dict | None = None):
    """Start ``command``, wait until ``ready_url`` answers 200, stop the process group after."""
    log = open(log_path, "w")  # noqa: SIM115 - closed in the finally below
    proc = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"server exited: {log_path.read_text()[-2000:]}")
            try:
                if requests.get(ready_url, timeout=2).status_code == 200:
                    break
            except (requests.ConnectionError, requests.Timeout):  # not listening, or busy
                time.sleep(0.5)
        else:
            pytest.fail(f"server not ready in {timeout:.0f} s: {command[:4]}")
        yield proc
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
        log.close()


def _as_postgres(command: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: as root, run its tools as the ``postgres`` user."""
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


def _pg_tool(name: str) -> str:
    import glob
    import shutil

    found = shutil.which(name) or next(iter(sorted(glob.glob(
        f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)), None)
    if found is None:
        pytest.fail(f"PostgreSQL's {name} is not installed; the distributed and tracking-server "
                    "tests need a real PostgreSQL: apt-get install -y postgresql")
    return found


@contextlib.contextmanager
def system_temp(prefix: str) -> Iterator[Path]:
    """A folder in the system's temp folder (tests/conftest.py's ``SYSTEM_TMP``), not pytest's
    tree: reachable by another user (PostgreSQL's), and short enough for a UNIX socket's path
    (107 bytes) where pytest-xdist's tree is not. Deleted after."""
    import shutil
    import tempfile

    root = Path(tempfile.mkdtemp(prefix=prefix,
                                 dir=os.environ.get("MLFLOW_AGENTIC_TEST_SYSTEM_TMP")))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@contextlib.contextmanager
def postgres(databases: tuple[str, ...] = ("mlflow", "optuna")):
    """A throwaway PostgreSQL on 127.0.0.1 (initdb into a temp dir, ~2 s), with one database
    per name; yields ``{name: SQLAlchemy URL}``. Stopped and deleted after."""
    import shutil

    with system_temp("mlflow-agentic-pg-") as root:
        if os.geteuid() == 0:
            shutil.chown(root, "postgres")
        data, port = root / "data", free_port()
        subprocess.run(_as_postgres([_pg_tool("initdb"), "-D", str(data), "-U", "postgres",
                                     "--auth=trust", "-E", "UTF8"]), check=True,
                       capture_output=True)
        ctl = _pg_tool("pg_ctl")
        subprocess.run(_as_postgres([ctl, "-D", str(data), "-l", str(root / "log"), "-w", "-o",
                                     f"-p {port} -k {root} -c listen_addresses=127.0.0.1 "
                                     "-c max_connections=200 -c fsync=off", "start"]),
                       check=True, capture_output=True)
        try:
            import sqlalchemy as sa

            admin = sa.create_engine(f"postgresql+psycopg2://postgres@127.0.0.1:{port}/postgres",
                                     isolation_level="AUTOCOMMIT")
            with admin.connect() as conn:
                for name in databases:
                    conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
            admin.dispose()
            yield {name: f"postgresql+psycopg2://postgres@127.0.0.1:{port}/{name}"
                   for name in databases}
        finally:
            subprocess.run(_as_postgres([ctl, "-D", str(data), "-m", "immediate", "stop"]),
                           capture_output=True)
