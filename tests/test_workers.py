"""The worker pool's own threads: a killed executor's manager thread says nothing."""

from __future__ import annotations

import threading


def test_a_killed_managers_exception_is_not_reported_whatever_hook_is_installed(monkeypatch):
    """Only the killed manager thread is silenced, by its own attribute: a hook installed or
    restored later (pytest swaps ``threading.excepthook`` around each test) still gets every
    other thread's exception."""
    from mlflow_agentic.engine.workers.parallel import _quiet

    reported: list[str] = []
    go = threading.Event()

    def trip() -> None:
        go.wait(5)
        raise KeyError("work item of a killed pool")

    killed, other = threading.Thread(target=trip), threading.Thread(target=trip, name="other")
    killed.start()
    other.start()
    _quiet(killed)  # while it runs, as the pool does it
    monkeypatch.setattr(threading, "excepthook", lambda args: reported.append(args.thread.name))
    go.set()
    killed.join(5)
    other.join(5)
    assert reported == ["other"]
