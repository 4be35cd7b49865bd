"""Containers die with their search, whatever ends it.

Every container is labelled with its owner: this host and this process (pid and start time, so
a reused pid is not mistaken for the owner). Three things remove them:

- the search itself (``Live.stop_all``) on any exit it sees: an error, Ctrl-C, SIGTERM;
- a **watchdog**, one small process per search process, started with the first container: it
  blocks on a pipe whose only writer is the search, so it wakes the instant the search dies,
  even by ``kill -9``, removes the search's containers and staged folders, and exits;
- the next sandbox check (``sweep``), for anything a watchdog could not reach (a reboot, a
  watchdog killed too): containers and staged folders whose owner is gone.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlflow_agentic.core.processes import process_alive

if TYPE_CHECKING:
    from docker.models.containers import Container

    from docker import DockerClient

LABEL = "mlflow-agentic"
OWNER = "mlflow-agentic.owner"
STAGED = "mlflow-agentic.staged"
STAGED_PREFIX = "mlflow-agentic-sandbox-"


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (``/proc/PID/stat`` field 22)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()[19]


def owner_token(pid: int | None = None) -> str:
    """``host:pid:start``: who owns a container, in a form a later process can check."""
    pid = pid or os.getpid()
    return f"{socket.gethostname()}:{pid}:{_start_time(pid) or '?'}"


def owner_alive(token: str) -> bool:
    """Whether the process a token names still runs on this host (a token of another host is
    taken as alive: it is not ours to judge)."""
    host, _, rest = token.partition(":")
    pid, _, start = rest.partition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return True
    return _start_time(int(pid)) == start if start != "?" else process_alive(int(pid))


def remove_staged(folder: str | None) -> None:
    """A staged job folder, only if it is one (a name this package makes in the temp folder)."""
    if not folder:
        return
    path = Path(folder)
    if path.name.startswith(STAGED_PREFIX) and path.parent == Path(tempfile.gettempdir()):
        shutil.rmtree(path, ignore_errors=True)


def labelled(client: DockerClient) -> list:
    """This package's containers, as listed: ``sparse`` so that none is inspected one by one,
    where a container another search removes between the list and the inspect raised NotFound.
    Their labels are in ``attrs["Labels"]``."""
    return client.containers.list(all=True, sparse=True, filters={"label": LABEL})


def sweep(client: DockerClient, owner: str | None = None) -> int:
    """Remove the containers (and their staged folders) of ``owner``, or of every owner that
    is gone when None; then staged folders whose process is gone. Returns containers removed."""
    removed = 0
    for container in labelled(client):
        labels = container.attrs.get("Labels") or {}
        token = labels.get(OWNER, "")
        if (owner is not None and token != owner) or (owner is None and owner_alive(token)):
            continue
        with contextlib.suppress(Exception):  # already gone, or being removed
            container.remove(force=True)
            removed += 1
        remove_staged(labels.get(STAGED))
    sweep_staged(only_pid=int(owner.split(":")[1]) if owner else None)
    return removed


def sweep_staged(only_pid: int | None = None) -> None:
    """Staged folders (training rows with labels) whose process is gone."""
    for path in Path(tempfile.gettempdir()).glob(f"{STAGED_PREFIX}*"):
        pid = path.name.removeprefix(STAGED_PREFIX).split("-", 1)[0]
        if not pid.isdigit() or (only_pid is not None and int(pid) != only_pid):
            continue
        if only_pid is not None or not process_alive(int(pid)):
            shutil.rmtree(path, ignore_errors=True)


class Live:
    """The containers this process is running, to stop at once when its search ends.

    After ``stop_all`` and until ``reopen`` (``run_all`` reopens once its threads are done), a
    container added (one a thread was starting as Ctrl-C came) is removed at once: it would
    otherwise run to its wall-clock limit."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._containers: dict[str, Any] = {}  # docker containers
        self._stopping = False

    def reopen(self) -> None:
        """Containers may run again (a new batch of jobs)."""
        with self._lock:
            self._stopping = False

    def add(self, container: Container) -> None:
        with self._lock:
            if not self._stopping:
                self._containers[container.id] = container
                return
        with contextlib.suppress(Exception):
            container.remove(force=True)

    def discard(self, container: Container) -> None:
        with self._lock:
            self._containers.pop(container.id, None)

    def stop_all(self) -> int:
        """Kill every running container of this process (their runs then read nothing)."""
        with self._lock:
            self._stopping = True
            containers = list(self._containers.values())
        for container in containers:
            with contextlib.suppress(Exception):
                container.remove(force=True)
        return len(containers)


LIVE = Live()
_watchdog: subprocess.Popen | None = None
_watchdog_pipe: int | None = None
_watchdog_lock = threading.Lock()


def ensure_watchdog() -> None:
    """Start this process's watchdog once (see the module's docstring)."""
    global _watchdog, _watchdog_pipe
    with _watchdog_lock:
        if _watchdog is not None and _watchdog.poll() is None:
            return
        read_end, write_end = os.pipe()  # non-inheritable: only the watchdog gets read_end
        _watchdog = subprocess.Popen(
            [sys.executable, "-m", "mlflow_agentic.sandbox.cleanup", str(read_end),
             owner_token()],
            pass_fds=(read_end,), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True)  # Ctrl-C does not reach it
        os.close(read_end)
        _watchdog_pipe = write_end  # held open until this process ends, however it ends


def watch(read_fd: int, owner: str) -> None:
    """The watchdog's body: wait for the owner's end (end of file on the pipe), then remove
    what it left."""
    with contextlib.suppress(OSError):
        while os.read(read_fd, 1024):
            pass
    import docker

    client = docker.from_env(timeout=60)
    try:
        sweep(client, owner)
    finally:
        client.close()


if __name__ == "__main__":
    watch(int(sys.argv[1]), sys.argv[2])
