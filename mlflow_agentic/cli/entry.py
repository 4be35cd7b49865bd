"""The console script: the CLI, then an exit that skips tearing the interpreter down.

Once a command has returned and the interpreter's own exit steps have run (worker pools and
other threads stopped, exit handlers: temporary files, MLflow's), what is left is freeing every
object of MLflow, scikit-learn and the data one by one. On this 2-core machine that took 1.1 s
after a 20 s search with nothing else running and about 2 s with one core busy (strace: no
system call in that gap, only the collector), and a time budget counts the process's exit:
5-10% of a 20 s budget went to it. Tests call ``main`` in-process; only the installed command
and ``python -m mlflow_agentic`` come through here.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys

_code = 0


def entry() -> None:
    """Run ``main`` (click's standalone mode) and exit with its code, without the teardown."""
    global _code
    atexit.register(_exit_now)  # the first registered runs last: after every handler the
    # command's work registers (one registered before this call, at start-up, would not run)
    from mlflow_agentic.cli import main

    try:
        main(prog_name="mlflow-agentic")
    except SystemExit as exc:
        _code = exit_code(exc.code)
        raise


def exit_code(code: object) -> int:
    """What ``sys.exit(code)`` exits with (a message is printed by the interpreter, then 1)."""
    if code is None:
        return 0
    return code if isinstance(code, int) else 1


def _exit_now() -> None:
    """The last exit handler: flush the streams, then end the process (no teardown)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing to say there
            stream.flush()
    os._exit(_code)
