"""A server a command runs in the foreground (``ui``, ``llm serve-local``): started in its own
process group, stopped with the command on Ctrl-C or SIGTERM, so no process outlives it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Iterator


@contextlib.contextmanager
def foreground(command: list[str], **popen) -> Iterator[subprocess.Popen]:
    """Start ``command``; inside the block SIGTERM raises ``KeyboardInterrupt`` like Ctrl-C;
    on the way out the server's whole process group is stopped (TERM, then KILL)."""

    def interrupt(*_) -> None:
        raise KeyboardInterrupt

    server = subprocess.Popen(command, start_new_session=True, **popen)
    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield server
    finally:
        signal.signal(signal.SIGTERM, previous)
        stop(server)


def stop(server: subprocess.Popen) -> None:
    if server.poll() is None:
        try:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.pid, signal.SIGKILL)
            server.wait()
    else:  # the server is gone; its children may not be
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(server.pid, signal.SIGKILL)
