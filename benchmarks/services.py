"""Real services for the benchmarks: PostgreSQL (initdb into a temp dir) and an MLflow tracking
server backed by it, as in the tests (``tests/servers.py``)."""

from __future__ import annotations

import contextlib
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.servers import free_port, postgres, running_server  # noqa: E402


@contextlib.contextmanager
def postgres_tracking_server():
    """Yields ``(tracking_uri, optuna_storage_url)``."""
    tmp = Path(tempfile.mkdtemp(prefix="bench-services-"))
    port = free_port()
    with postgres(("mlflow", "optuna")) as urls:
        command = [str(Path(sys.executable).parent / "mlflow"), "server", "--backend-store-uri",
                   urls["mlflow"], "--artifacts-destination", str(tmp / "artifacts"), "--host",
                   "127.0.0.1", "--port", str(port), "--workers", "2"]
        with running_server(command, f"http://127.0.0.1:{port}/health", tmp / "server.log",
                            120):
            yield f"http://127.0.0.1:{port}", urls["optuna"]
