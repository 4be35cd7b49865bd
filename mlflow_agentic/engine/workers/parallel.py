"""The one place that decides parallelism: how many cores, how many workers, how many threads.

The rule (measured on 2 cores, see docs/performance.md): ``n_jobs`` worker
*processes*, each fitting one fold with a **single-threaded** model. Threads inside a model
(OpenMP, BLAS, xgboost's ``n_jobs``) spin against each other as soon as the machine has other
work: one HistGradientBoosting fold took 77 s with default threads and 4.5 s single-threaded
under load. Worker threads instead of processes lose on the GIL (a HistGradientBoosting fold
ran 3x slower with two threads in one process). So workers x threads per model == ``n_jobs``.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar, cast

from mlflow_agentic.core.errors import UserInputError

E = TypeVar("E")
"""An estimator, handed back as it came."""
R = TypeVar("R")

THREAD_PARAMS = ("n_jobs", "thread_count", "nthread")
"""Estimator parameters that set a model's own thread count (sklearn, catboost, xgboost)."""
SINGLE_THREAD_ENV = {v: "1" for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                                      "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")}


CGROUP_ROOT = Path("/sys/fs/cgroup")


def available_cores(cgroup_root: Path = CGROUP_ROOT) -> int:
    """Cores this process may use: its CPU affinity, capped by a cgroup CPU quota if one is set
    (a container limited to 1.5 CPUs gets 1), never ``os.cpu_count()`` alone."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # macOS, Windows
        cores = os.cpu_count() or 1
    quota = _cgroup_quota(Path(cgroup_root))
    if quota is not None:
        cores = min(cores, max(1, math.floor(quota)))
    return max(1, cores)


def _cgroup_quota(root: Path) -> float | None:
    """CPUs allowed by cgroup v2 ``cpu.max`` or v1 ``cfs_quota_us``; None when unlimited."""
    v2 = root / "cpu.max"
    try:
        if v2.exists():
            text, per = v2.read_text().split()[:2]
            return None if text == "max" else int(text) / int(per)
        v1 = root / "cpu" / "cpu.cfs_quota_us"
        if v1.exists():
            quota = int(v1.read_text())
            period = int((root / "cpu" / "cpu.cfs_period_us").read_text())
            return None if quota <= 0 else quota / period
    except (OSError, ValueError):
        return None
    return None


def resolve_n_jobs(n_jobs: int | None, local: bool = True) -> int:
    """``None``/0: every available core; a negative number counts back as in joblib (-1: all).
    On this machine (``local``) more workers than the cores this process may use are capped
    to those cores, with a note: each worker is a whole interpreter (about 150 MB), and extra
    ones only add memory and contention (999 workers took a 24 GB machine down). A remote
    cluster (``local=False``) gets what was asked."""
    cores = available_cores()
    if n_jobs is None or n_jobs == 0:
        return cores
    if n_jobs < 0:
        resolved = cores + 1 + n_jobs
        if resolved < 1:
            raise UserInputError(f"n_jobs={n_jobs} leaves no core of the {cores} available; "
                                 f"use a number from 1 to {cores}, or -1 for all")
        return resolved
    if local and n_jobs > cores:
        warnings.warn(f"n_jobs {n_jobs} is more than the {cores} core(s) this process may "
                      f"use: running {cores} worker(s) (one single-threaded model each)",
                      stacklevel=2)
        return cores
    return int(n_jobs)


WORKER_BASE_BYTES = 250 * 2**20
"""What one worker costs before its data: an interpreter with the scientific stack (~150 MB
measured) and the models it fits."""
WORKER_DATA_COPIES = 3
"""A worker holds its fold's matrices: the training part, the preprocessed copy, the model's."""
MEMORY_SHARE = 0.8


def workers_that_fit(n_jobs: int, data_bytes: int, memory: int | None = None
                     ) -> tuple[int, str | None]:
    """``(workers, note)``: ``n_jobs`` lowered to what fits in ``memory`` (default: what this
    process may use) at about ``WORKER_BASE_BYTES + 3 x data`` per worker; the note says why."""
    memory = available_memory() if memory is None else memory
    if memory is None:
        return n_jobs, None
    each = WORKER_BASE_BYTES + WORKER_DATA_COPIES * data_bytes
    fits = max(1, int(MEMORY_SHARE * memory // each))
    if fits >= n_jobs:
        return n_jobs, None
    return fits, (f"{n_jobs} workers of about {each / 2**20:,.0f} MB each (the data is "
                  f"{data_bytes / 2**20:,.0f} MB in memory) would not fit in the "
                  f"{memory / 2**30:.1f} GB this process may use: running {fits}")


def available_memory(cgroup_root: Path = CGROUP_ROOT) -> int | None:
    """Bytes this process may use: the cgroup memory limit if one is set, else the memory the
    kernel says is available now; None when neither can be read."""
    for path in (cgroup_root / "memory.max", cgroup_root / "memory" / "memory.limit_in_bytes"):
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 2**60:
            return int(text)
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def single_threaded(estimator: E, threads: int = 1) -> E:
    """Set every thread-count parameter of ``estimator`` (nested ones included) to ``threads``.
    Unset ones (None: one thread unless inside a joblib context) are left alone."""
    get_params = getattr(estimator, "get_params", None)
    if get_params is None:
        return estimator
    updates = {k: threads for k, v in get_params(deep=True).items()
               if k.rsplit("__", 1)[-1] in THREAD_PARAMS and v is not None and v != threads}
    if updates:
        cast(Any, estimator).set_params(**updates)
    return estimator


def run_limited(fn: Callable[..., R], *args: Any) -> R:
    """Call ``fn(*args)`` with OpenMP/BLAS limited to one thread in this thread."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        return fn(*args)


def _import_fold_stack() -> None:
    import importlib
    import importlib.util

    import mlflow_agentic.engine.evaluate.folds  # noqa: F401 - pandas, scikit-learn, preprocessing
    import mlflow_agentic.trainers.builtin  # noqa: F401

    # the models' own libraries: a cold worker would import them inside its first fold fit
    for name in ("sklearn.ensemble", "sklearn.linear_model", "xgboost", "lightgbm"):
        if importlib.util.find_spec(name.split(".")[0]) is not None:
            importlib.import_module(name)


def prestart(n_jobs: int | None, backend: str = "local") -> None:
    """Start this machine's workers now, each importing what a fold fit needs, while this
    process imports its own stack and reads and seals the data: a command's fixed cost before
    its first fold (seconds of a 20 s budget). The search's pool reuses them (loky's reusable
    executor)."""
    if backend == "local":
        WorkerPool(resolve_n_jobs(n_jobs)).warm_up()


_STOPPED_AT_EXIT: set[int] = set()


def _kill(executor: Any) -> None:
    """Stop an executor and kill its worker processes now. A worker blocked sending a result
    that nobody reads any more (its attempt was cut) would otherwise keep the process from
    exiting: multiprocessing joins its children at exit.

    A worker killed halfway through sending a result leaves half a message in the result pipe:
    loky's manager thread, which read its length, would wait for the rest forever, and the
    interpreter joins that thread at exit (a command that hung after its search had ended, seen
    once in ~100 suite runs). This process's copy of the pipe's write end is closed too, so once
    the killed workers' copies are gone the manager reads end-of-file, marks the pool broken and
    ends."""
    import signal

    results = getattr(executor, "_result_queue", None)  # read now: shutdown drops it
    pids = [p.pid for p in list(getattr(executor, "_processes", {}).values())]
    pending = getattr(executor, "_pending_work_items", {})
    for key in [k for k, item in list(pending.items()) if item.future.cancelled()]:
        pending.pop(key, None)  # loky would try to fail these already-cancelled futures
    manager = getattr(executor, "_executor_manager_thread", None)
    if manager is not None:
        _quiet(manager)
    executor.shutdown(wait=False, kill_workers=True)
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    writer = getattr(results, "_writer", None)
    if writer is not None:
        with contextlib.suppress(OSError):
            writer.close()


def _quiet(manager: threading.Thread) -> None:
    """A killed executor's manager thread may trip over the work it was managing (a
    ``KeyError`` traceback on stderr after a spent budget or a resume): expected, not said.
    Only that thread's exception report is silenced (the hook a thread calls is its own
    attribute, set when it was made), not ``threading.excepthook``, which a test runner swaps
    and restores around each test (the traceback came back at the end of a pytest session)."""
    if hasattr(manager, "_invoke_excepthook"):
        manager._invoke_excepthook = lambda thread: None


def _stop_at_exit(executor: Any) -> None:
    """Kill the workers when the interpreter exits, before multiprocessing joins them."""
    import atexit

    if id(executor) not in _STOPPED_AT_EXIT:
        _STOPPED_AT_EXIT.add(id(executor))
        atexit.register(_kill, executor)


PARENT_POLL_SECONDS = 1.0


def watch_parent(parent: int, poll: float = PARENT_POLL_SECONDS) -> None:
    """Worker initializer: a daemon thread that ends this worker (and its children) as soon as
    ``parent`` is gone. A loky worker whose parent got SIGKILL otherwise lives on (seen for
    minutes), holding its memory; its resource tracker follows once no worker holds its pipe."""
    import signal
    import time

    # Ctrl-C reaches the whole process group: the parent stops the search; a worker that
    # raised KeyboardInterrupt too would only print a traceback
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll)
        os._exit(1)

    threading.Thread(target=watch, name="mlflow-agentic-parent-watch", daemon=True).start()


class WorkerPool:
    """Runs tasks on ``n_jobs`` worker processes (joblib's loky: reused between searches), or in
    this process when ``n_jobs == 1``; or on a Dask or Ray cluster (``backend``, at ``address``
    or started locally with ``n_jobs`` workers: ``engine.backends``). ``submit`` returns a
    ``concurrent.futures.Future``; a pending future can be cancelled (pruning, a spent time
    budget)."""

    def __init__(self, n_jobs: int = 1, backend: str = "local",
                 address: str | None = None) -> None:
        self.n_jobs = max(1, int(n_jobs))
        self.backend, self.address = backend, address
        self._executor: Any = None

    def submit(self, fn: Callable, *args) -> Future:
        if self.backend != "local":
            from mlflow_agentic.engine.workers.backends import cluster

            return cluster(self.backend, self.n_jobs, self.address).submit(run_limited, fn,
                                                                           *args)
        if self.n_jobs == 1:
            future: Future = Future()
            future._agentic_call = (fn, args)  # type: ignore[attr-defined]  # run lazily, in order, by ``resolve``
            return future
        if self._executor is None:
            from joblib.externals.loky import get_reusable_executor

            # workers import what this process can (a trainer defined in a test module, a
            # notebook's package): they get its sys.path, and single-threaded math libraries
            env = {**SINGLE_THREAD_ENV, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
            self._executor = get_reusable_executor(
                max_workers=self.n_jobs, timeout=300, env=env, initializer=watch_parent,
                initargs=(os.getpid(),))
            # loky restarts a worker whose memory grew past its threshold (folds of a big
            # file): its "memory leak" warning says nothing about this search's results
            warnings.filterwarnings("ignore", message="A worker stopped while some jobs")
            _stop_at_exit(self._executor)
        return self._executor.submit(run_limited, fn, *args)

    def warm_up(self) -> None:
        """Start the workers now and have each import what a fold fit needs, in the background
        (a cold worker spends a second or two on imports before its first fold)."""
        if self.n_jobs > 1 and self.backend == "local":
            for _ in range(self.n_jobs):
                self.submit(_import_fold_stack)

    @property
    def warm(self) -> bool:
        """True when worker processes are up (or none are needed): submitting costs nothing."""
        return self.n_jobs == 1 or self.backend != "local" or self._executor is not None

    def abort(self, futures: Iterable[Future] = ()) -> None:
        """Stop what is running or queued now (a spent time budget): in-process ``futures``
        are cancelled; worker processes are killed (the next ``submit`` starts fresh ones); a
        cluster's tasks are cancelled."""
        if self.backend != "local":
            from mlflow_agentic.engine.workers.backends import cluster

            cluster(self.backend, self.n_jobs, self.address).cancel(futures)
        elif self._executor is not None:
            _kill(self._executor)
            self._executor = None
        else:
            for future in futures:
                future.cancel()

    @staticmethod
    def resolve(future: Future) -> None:
        """In-process futures run when first waited on (so a cancelled one never runs)."""
        call = getattr(future, "_agentic_call", None)
        if call is None or future.done():
            return
        if not future.set_running_or_notify_cancel():
            return
        try:
            fn, args = call
            future.set_result(run_limited(fn, *args))
        except BaseException as exc:  # noqa: BLE001 - handed to the waiter like a worker's error
            future.set_exception(exc)

    def in_order(self, futures: Iterable[Future], deadline: float | None = None
                 ) -> Iterator[tuple[int, Future | None]]:
        """Yield ``(i, future)`` as futures finish (in-process ones run in submission order).
        With a ``deadline`` (a ``time.perf_counter()`` value), ``(-1, None)`` once it passes
        while some are still running: the caller stops them (a fold fit on a big file can take
        minutes; the budget does not wait for it)."""
        import time
        from concurrent.futures import FIRST_COMPLETED, wait

        pending = dict(enumerate(futures))
        if self.n_jobs == 1 and self.backend == "local":
            for i, future in pending.items():
                self.resolve(future)
                yield i, future
            return
        while pending:
            timeout = None if deadline is None else max(0.0, deadline - time.perf_counter())
            done, _ = wait(list(pending.values()), timeout=timeout,
                           return_when=FIRST_COMPLETED)
            if not done:
                deadline = None  # said once
                yield -1, None
                continue
            for i in [i for i, f in pending.items() if f in done]:
                yield i, pending.pop(i)
