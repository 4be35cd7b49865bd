"""Cluster backends for the fold fits: Dask (``distributed``) or Ray, instead of local processes.

Each returns ``concurrent.futures.Future`` objects like the local pool, so the batch runner is
the same code whatever runs the folds, and results are still released in proposal order (a
seeded search gives the same leaderboard on any backend). Without an address, a local cluster
of ``n_jobs`` single-threaded workers is started once per process and reused.
"""

from __future__ import annotations

import atexit
import contextlib
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from typing import Any

from mlflow_agentic.core.errors import UserInputError
from mlflow_agentic.core.settings import BACKENDS

_CLUSTERS: dict[tuple, Any] = {}


def cluster(backend: str, n_jobs: int, address: str | None) -> Any:
    """The backend's executor for ``address`` (None: a local cluster), started once."""
    key = (backend, address, None if address else n_jobs)
    if key not in _CLUSTERS:
        make = {"dask": DaskExecutor, "ray": RayExecutor}.get(backend)
        if make is None:
            raise UserInputError(f"backend {backend!r}: expected one of {', '.join(BACKENDS)}")
        _CLUSTERS[key] = make(n_jobs, address)
        atexit.register(_CLUSTERS[key].close)
    return _CLUSTERS[key]


def shutdown_clusters() -> None:
    """Stop the local clusters this process started (also done at exit)."""
    for executor in _CLUSTERS.values():
        executor.close()
    _CLUSTERS.clear()


def _missing(backend: str, package: str) -> UserInputError:
    return UserInputError(f"--backend {backend} needs {package}: pip install "
                          f"'mlflow-agentic[{backend}]'")


DASK_CONNECT_SECONDS = 10
"""How long to wait for a Dask scheduler at ``--scheduler`` before saying it cannot be reached."""


class DaskExecutor:
    """Folds as tasks of a Dask cluster (``distributed.Client.get_executor``)."""

    def __init__(self, n_jobs: int, address: str | None) -> None:
        try:
            from distributed import Client, LocalCluster
        except ImportError as exc:
            raise _missing("dask", "dask.distributed") from exc
        try:
            if address:
                self.client = Client(address, timeout=DASK_CONNECT_SECONDS)
            else:
                self.client = Client(LocalCluster(
                    n_workers=n_jobs, threads_per_worker=1, processes=True,
                    dashboard_address=None, silence_logs=40))
        except OSError as exc:  # no scheduler there
            raise UserInputError(f"cannot reach the Dask scheduler {address}: {exc}. Start it "
                                 "(dask scheduler; dask worker ADDRESS), or leave --scheduler "
                                 "out for a local cluster") from exc
        self.executor = self.client.get_executor(pure=False)

    def submit(self, fn: Callable, *args) -> Future:
        return self.executor.submit(fn, *args)

    def cancel(self, futures: Iterable[Future]) -> None:
        for future in futures:
            future.cancel()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            cluster_ = getattr(self.client, "cluster", None)
            self.client.close()
            if cluster_ is not None:
                cluster_.close()


class RayExecutor:
    """Folds as Ray tasks (one CPU each); ``ObjectRef.future()`` gives the futures."""

    def __init__(self, n_jobs: int, address: str | None) -> None:
        try:
            import ray
        except ImportError as exc:
            raise _missing("ray", "ray") from exc
        self.ray = ray
        if not ray.is_initialized():
            try:
                ray.init(address=address or None, num_cpus=None if address else n_jobs,
                         include_dashboard=False, log_to_driver=False,
                         configure_logging=False)
            except ConnectionError as exc:
                raise UserInputError(f"cannot reach the Ray cluster {address}: {exc}. Start it "
                                     "(ray start --head), or leave --ray-address out for a "
                                     "local one") from exc
        self._remote = ray.remote(num_cpus=1, max_retries=0)(_call)

    def submit(self, fn: Callable, *args) -> Future:
        ref = self._remote.remote(fn, *args)
        future = ref.future()
        future._agentic_ray_ref = ref
        return future

    def cancel(self, futures: Iterable[Future]) -> None:
        for future in futures:
            ref = getattr(future, "_agentic_ray_ref", None)
            if ref is not None and not future.done():
                with contextlib.suppress(Exception):
                    self.ray.cancel(ref, force=True)
            future.cancel()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.ray.shutdown()


def _call(fn: Callable, *args: Any) -> Any:
    return fn(*args)
