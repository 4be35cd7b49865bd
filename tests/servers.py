"""Starting a real server process on 127.0.0.1 for a test, and stopping it."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
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
            except requests.ConnectionError:
                time.sleep(0.5)
        else:
            pytest.fail(f"server not ready in {timeout:.0f} s: {command[:4]}")
        yield proc
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
        log.close()
