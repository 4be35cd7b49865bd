"""A server a command runs in the foreground (``ui``, ``llm serve-local``): started in its own
process group, stopped with the command on Ctrl-C or SIGTERM, so no process outlives it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Iterator

from mlflow_agentic.core.stopping import stops_raise


@contextlib.contextmanager
def foreground(command: list[str], **popen) -> Iterator[subprocess.Popen]:
    """Start ``command``; inside the block SIGTERM raises ``KeyboardInterrupt`` like Ctrl-C;
    on the way out the server's whole process group is stopped (TERM, then KILL), with any
    further signal only noted so the stop is not cut short."""
    with stops_raise({signal.SIGTERM: KeyboardInterrupt}):
        server = subprocess.Popen(command, start_new_session=True, **popen)
        try:
            yield server
        finally:
            stop(server)


def stop(server: subprocess.Popen) -> None:
    """TERM to the server's process group, KILL after 10 s, and KILL to what it left."""
    try:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=10)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        pass
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(server.pid, signal.SIGKILL)  # the server, or children it left
        server.wait()
