"""Whether a process of this machine is still there (the parts that sweep what a killed
process left behind: a search run left RUNNING, a journal, a folder of spilled folds)."""

from __future__ import annotations

import os


def process_alive(pid: int) -> bool:
    """False only when this machine has no process ``pid`` (someone else's counts as alive):
    how what a process that is gone (kill -9, a reboot) left behind is told apart."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
