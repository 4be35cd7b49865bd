"""``mlflow-agentic ui``: MLflow's UI on the store the searches recorded to, opened on a
search's attempts in the Model training view; the server stops with the command."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request

import click

from mlflow_agentic.cli.foreground import foreground
from mlflow_agentic.cli.options import (
    exit_on_user_error,
    experiment_option,
    tracking_uri_option,
)
from mlflow_agentic.core.errors import UserInputError

START_SECONDS = 90.0
"""How long MLflow's server may take to answer (it imports MLflow and checks the store)."""


@click.command("ui")
@click.option("--run", "run", default="last", show_default=True, metavar="RUN_ID|last",
              help="The search to open: a search run id, or the latest search in the store.")
@experiment_option("With last: the latest search of this experiment (default: of any).")
@click.option("--port", type=click.IntRange(1, 65535), default=5000, show_default=True)
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Where the UI listens (127.0.0.1: this machine only).")
@click.option("--no-browser", is_flag=True, help="Print the link; do not open a browser.")
@tracking_uri_option()
def ui_command(run: str, experiment: str | None, port: int, host: str, no_browser: bool,
               tracking_uri: str | None) -> None:
    """Start MLflow's UI on the tracking store (the embedded sqlite:///mlflow.db when nothing is
    set) and open the search's attempts, best CV first, in the Model training view. Ctrl-C
    stops the server. A tracking server (http://...) serves its own UI: its link is printed."""

    def work() -> None:
        from mlflow_agentic.tracking.results import search_path
        from mlflow_agentic.tracking.store import current_uri, use_store

        use_store(tracking_uri, existing=True)
        uri = current_uri()
        served = not uri.startswith(("http://", "https://"))
        if served:
            _check_port_free(host, port)
        path = search_path(run, experiment)
        if not served:
            click.echo(f"{uri.rstrip('/')}/{path}")
            return
        serve(uri, host, port, f"http://{host}:{port}/{path}", not no_browser)

    exit_on_user_error(work, kept=lambda: "")


def serve(uri: str, host: str, port: int, link: str, browser: bool) -> None:
    """Run ``mlflow ui`` on ``uri`` until Ctrl-C (or SIGTERM); its whole process group is
    stopped on the way out, so no server outlives the command."""
    command = [sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", uri,
               "--host", host, "--port", str(port)]
    with foreground(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                    text=True) as server:
        try:
            _wait_until_up(server, f"http://{host}:{port}/health", port)
            click.echo(f"MLflow UI on {uri}: {link}")
            sys.stdout.flush()  # a pipe or a file sees it now, not when the server stops
            click.echo("(the Model training view; Ctrl-C stops the server)", err=True)
            if browser and (os.environ.get("DISPLAY") or sys.platform == "darwin"):
                import webbrowser

                webbrowser.open(link)
            server.wait()
            raise UserInputError(f"MLflow's UI server stopped (exit code {server.returncode})")
        except KeyboardInterrupt:
            click.echo("stopping the UI server", err=True)


def _check_port_free(host: str, port: int) -> None:
    """Refuse a port something already listens on: its health check would answer for the
    other server (another MLflow UI on another store), and the link would open that one."""
    import socket

    with socket.socket() as probe:
        probe.settimeout(1)
        if probe.connect_ex((host, port)) == 0:
            raise UserInputError(f"port {port} on {host} is taken (another server listens "
                                 "there, perhaps another MLflow UI): give a free one with "
                                 "--port, e.g. --port 5090")


def _wait_until_up(server: subprocess.Popen, health: str, port: int) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if server.poll() is not None:
            err = ((server.stderr.read() if server.stderr else "") or "").strip().splitlines()
            raise UserInputError(f"MLflow's UI server did not start (port {port} in use? try "
                                 f"--port): {err[-1] if err else server.returncode}")
        try:
            with urllib.request.urlopen(health, timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise UserInputError(f"MLflow's UI server did not answer at {health} within "
                         f"{START_SECONDS:.0f}s")
