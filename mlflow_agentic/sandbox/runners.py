"""Where a candidate's code runs: ``DockerSandbox`` (a fresh locked-down container per job: a
CV fold, the refit, a prediction) or, only with ``--allow-host-execution``, ``HostSandbox`` (a
subprocess: a wall-clock kill and an empty environment, no isolation). Both run the same
harness on the same files. ``run_all`` runs several jobs at once (a candidate's folds)."""

from __future__ import annotations

import contextlib
import math
import os
import signal
import subprocess
import sys
import tarfile
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from mlflow_agentic.sandbox import cleanup
from mlflow_agentic.sandbox.harness import READY
from mlflow_agentic.sandbox.image import default_image
from mlflow_agentic.sandbox.job import SandboxJob, SandboxResult, SandboxUnavailable
from mlflow_agentic.sandbox.outputs import Outputs, read_archive, read_folder

if TYPE_CHECKING:
    from docker.models.containers import Container

    from docker import DockerClient

THREADS = {**{v: "1" for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")},
           "JOBLIB_MULTIPROCESSING": "0"}
"""The whole environment a candidate gets (besides HOME): no secrets, one thread per library
(on a busy machine OpenMP threads spin against each other), and joblib told up front that
there is no /dev/shm for process pools (it would warn in every log)."""

POLL_SECONDS = 0.2
"""How often the host looks whether a container's outputs are ready."""


@dataclass(frozen=True)
class Limits:
    memory: str = "2g"
    cpus: float = float(min(2, os.cpu_count() or 1))
    pids: int = 256
    scratch: str = "256m"
    """The tmpfs at /tmp: the only writable place besides the harness's output folder (no
    /dev/shm, and /dev/mqueue is read-only: the container's IPC namespace is its own and
    empty)."""
    timeout: float = 600.0
    """Wall-clock seconds per container (one CV fold, the refit, or one prediction)."""
    outputs: str = "512m"
    """The tmpfs the harness writes its outputs to (the fitted model's pickle the largest):
    a candidate cannot write more, and the host reads no file beyond it."""

    def __post_init__(self) -> None:
        from mlflow_agentic.core.errors import UserInputError

        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        for name in ("memory", "scratch", "outputs"):
            value = getattr(self, name)
            try:
                size = _bytes(value)
            except (TypeError, ValueError, OverflowError):
                size = 0
            if size <= 0:
                raise UserInputError(f"sandbox {name} {value!r}: expected a size in Docker "
                                     "units, e.g. 512m or 2g")
            if size > ram:  # a container could never have it: every attempt would fail
                raise UserInputError(f"sandbox {name} {value!r}: more than this machine's "
                                     f"{ram / 1024 ** 3:.1f} GiB of memory; give at most that, "
                                     "e.g. 2g")
        for name in ("cpus", "timeout", "pids"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
                    math.isfinite(value) and value > 0):
                raise UserInputError(f"sandbox {name} {value!r}: expected a positive number")
        if self.cpus > (os.cpu_count() or 1):
            raise UserInputError(f"sandbox cpus {self.cpus!r}: more than this machine's "
                                 f"{os.cpu_count()} CPUs")

    def tags(self) -> dict[str, str]:
        return {f"sandbox.{k}": str(v) for k, v in asdict(self).items()}


class Sandbox(Protocol):
    """Where a code candidate's job runs: a container (``DockerSandbox``) or, trusted, this
    machine (``HostSandbox``)."""

    label: str
    """Where it runs (``docker`` or ``host``), as recorded on the search run."""
    limits: Limits

    def check(self) -> Sandbox: ...

    def run(self, job: SandboxJob) -> SandboxResult: ...


class DockerSandbox:
    label = "docker"

    def __init__(self, image: str | None = None, limits: Limits | None = None) -> None:
        self.image = image or default_image()  # the one `sandbox build` makes for this machine
        self.limits = limits or Limits()
        self._client: Any = None  # a docker client, once a daemon answered

    def check(self) -> DockerSandbox:
        """Fail closed: a daemon that answers and the image, or a message saying how."""
        try:
            import docker
        except ImportError as exc:
            raise SandboxUnavailable("the sandbox needs the docker package: pip install -e "
                                     "'.[sandbox]' (from a clone; or mlflow-agentic[sandbox])"
                                     ) from exc

        try:
            self._client = docker.from_env(timeout=30)
            self._client.ping()
        except docker.errors.DockerException as exc:
            raise SandboxUnavailable(
                f"no Docker daemon answers ({str(exc)[:200]}); code mode runs LLM-written code "
                "only in a sandbox. Start one (Linux, as root: dockerd &; or Docker Desktop) "
                "and build the image (mlflow-agentic sandbox build), or pass "
                "--allow-host-execution to run candidates in a plain subprocess (no "
                "isolation; runs are tagged sandbox=host)") from exc
        cleanup.sweep(self._client)  # what searches killed earlier left behind
        try:
            self._client.images.get(self.image)
        except docker.errors.ImageNotFound as exc:
            raise SandboxUnavailable(
                f"no sandbox image {self.image!r}: build it offline with "
                "mlflow-agentic sandbox build (or docker build -f docker/sandbox.Dockerfile, "
                "then pass its name)") from exc
        return self

    def run(self, job: SandboxJob) -> SandboxResult:
        """``job`` in a fresh container. Thread-safe: each call has its own Docker client
        (one shared client mixed up concurrent containers' results)."""
        import docker

        if self._client is None:
            self.check()
        cleanup.ensure_watchdog()
        client = docker.from_env(timeout=30)
        try:
            with job.staged() as paths:
                return self._run(client, job, paths)
        finally:
            client.close()

    def _run(self, client: DockerClient, job: SandboxJob,
             paths: dict[str, Path]) -> SandboxResult:
        """The container writes its outputs to a size-capped tmpfs (``Limits.outputs``) and
        holds when done; the host copies that folder out as a tar stream (``outputs``: only
        expected regular files within their caps) and removes the container."""
        lim = self.limits
        mounts = {str(path): {"bind": f"/sandbox/{path.name}", "mode": "ro"}
                  for key, path in paths.items() if key != "out"}
        started = time.perf_counter()
        container = client.containers.run(
            self.image, ["python3", "/sandbox/harness.py", "/sandbox", "/sandbox/out", "--hold"],
            detach=True, network_mode="none", mem_limit=lim.memory, memswap_limit=lim.memory,
            nano_cpus=int(lim.cpus * 1e9), pids_limit=lim.pids, read_only=True,
            cap_drop=["ALL"], security_opt=["no-new-privileges"], ipc_mode="none",
            tmpfs={"/tmp": f"size={lim.scratch}", "/dev/mqueue": "ro,size=4k",
                   "/sandbox/out": f"size={lim.outputs},mode=1777"},
            volumes=mounts, log_config={"type": "json-file",
                                        "config": {"max-size": "1m", "max-file": "1"}},
            environment={**THREADS, "HOME": "/tmp"}, user="65534:65534", working_dir="/tmp",
            labels={cleanup.LABEL: "candidate", cleanup.OWNER: cleanup.owner_token(),
                    cleanup.STAGED: str(paths["out"].parent)})
        cleanup.LIVE.add(container)
        outputs = Outputs()
        try:
            killed, ready = self._wait(container, time.monotonic() + lim.timeout)
            if ready:
                outputs = _copy_out(client, container, job.caps(_bytes(lim.outputs)))
            logs = container.logs(tail=200).decode(errors="replace")
        except Exception as exc:  # noqa: BLE001 - removed with its search (stop_all)
            killed, logs = f"the container was stopped ({type(exc).__name__})", ""
        finally:
            cleanup.LIVE.discard(container)
            with contextlib.suppress(Exception):
                container.remove(force=True)
        logs = logs.replace(READY.decode().strip(), "").strip()
        return SandboxResult.read(outputs, job, self.label, time.perf_counter() - started,
                                  {"sandbox.image": self.image, **lim.tags()}, killed, logs)

    def _wait(self, container: Container, deadline: float) -> tuple[str | None, bool]:
        """``(killed, ready)``: wait until the harness says its outputs are written, the
        container ends (a crash, a limit), or the wall-clock limit passes (killed)."""
        import requests

        lim = self.limits
        while True:
            try:
                status = container.wait(timeout=POLL_SECONDS)
            except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
                status = None
            if status is None and READY in container.logs(stdout=True, stderr=False,
                                                          tail=3):
                return None, True
            if status is not None:  # ended without holding: a crash or a limit
                container.reload()
                if container.attrs["State"].get("OOMKilled"):
                    return f"memory limit: killed at {lim.memory} (out of memory)", False
                if status.get("StatusCode") == 137:
                    return "killed (exit 137: memory or pids limit)", False
                return None, False
            if time.monotonic() > deadline:
                container.kill()
                return f"wall-clock limit: killed after {lim.timeout:g}s", False

    def stop_all(self) -> int:
        """Stop every container of this process now (Ctrl-C, the search's end)."""
        return cleanup.LIVE.stop_all()


def _copy_out(client: DockerClient, container: Container, caps: dict[str, int]) -> Outputs:
    """The container's output folder as a tar stream, made inside by ``tar`` (which archives a
    link or a FIFO as what it is) and read here by ``read_archive``: nothing is written on the
    host, nothing is followed."""
    names = [f"out/{name}" for name in caps]  # only these: nothing else is streamed
    exec_id = client.api.exec_create(
        container.id, ["/bin/tar", "-C", "/sandbox", "--no-recursion", "--ignore-failed-read",
                       "-cf", "-", "--", *names], stdout=True, stderr=False)["Id"]
    stream = client.api.exec_start(exec_id, stream=True)
    try:
        outputs = read_archive(stream, caps)
    except (tarfile.TarError, EOFError, OSError) as exc:
        outputs = Outputs(refused={"result.json": f"the output folder could not be copied "
                                                  f"out ({type(exc).__name__}: {exc})"})
    finally:
        with contextlib.suppress(Exception):
            stream.close()
    return outputs


def _bytes(size: str) -> int:
    """Docker's size words (``256m``, ``2g``, ``512k``, bytes) as bytes."""
    size = str(size).strip().lower().removesuffix("b")
    units = {"k": 1024, "m": 1024 ** 2, "g": 1024 ** 3}
    if size and size[-1] in units:
        return int(float(size[:-1]) * units[size[-1]])
    return int(size)


class HostSandbox:
    """No isolation: a subprocess with an empty environment and a wall-clock kill. Only with
    ``--allow-host-execution``; every run it makes is tagged ``sandbox=host``."""

    label = "host"

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()

    def check(self) -> HostSandbox:
        return self

    def run(self, job: SandboxJob) -> SandboxResult:
        with job.staged() as paths:
            return self._run(job, paths)

    def _run(self, job: SandboxJob, paths: dict[str, Path]) -> SandboxResult:
        folder = paths["out"].parent
        started = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, str(paths["harness"]), str(folder), str(paths["out"])],
            env={**THREADS, "HOME": str(folder)}, cwd=folder, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, start_new_session=True)
        killed = None
        try:
            out, _ = proc.communicate(timeout=self.limits.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
            killed = f"wall-clock limit: killed after {self.limits.timeout:g}s"
        outputs = read_folder(paths["out"], job.caps(_bytes(self.limits.outputs)))
        return SandboxResult.read(outputs, job, self.label, time.perf_counter() - started,
                                  {"sandbox.timeout": str(self.limits.timeout)}, killed,
                                  out.decode(errors="replace"))


def make_sandbox(allow_host_execution: bool = False, image: str | None = None,
                 limits: Limits | None = None) -> Sandbox:
    """The sandbox code mode runs in: Docker, checked now (fail closed), or the host only when
    the user said so."""
    if allow_host_execution:
        return HostSandbox(limits)
    return DockerSandbox(image, limits).check()


def run_all(sandbox: Sandbox, jobs: Sequence[SandboxJob], parallel: int = 1) -> list[SandboxResult]:
    """Each job in a fresh sandbox, ``parallel`` at a time; results in the jobs' order. The
    jobs are one candidate's folds and any failure fails it: at the first failed job the rest
    are not started and the running ones are stopped (their results say so), so a candidate
    that hangs costs one ``--sandbox-timeout``, not one per round of folds."""
    if parallel <= 1 or len(jobs) <= 1:
        results: list[SandboxResult] = []
        for job in jobs:
            results.append(sandbox.run(job))
            if not results[-1].ok:
                return results + [_not_run(job, sandbox, results[-1]) for job in
                                  jobs[len(results):]]
        return results
    pool = ThreadPoolExecutor(min(parallel, len(jobs)))
    futures = [pool.submit(sandbox.run, job) for job in jobs]
    first_failure = None
    try:
        for future in as_completed(futures):
            if not future.result().ok:
                first_failure = future
                for other in futures:
                    other.cancel()
                getattr(sandbox, "stop_all", lambda: 0)()
                break
        failed = first_failure.result() if first_failure is not None else None
        return [f.result() if f is first_failure or _ran_ok(f) else _not_run(job, sandbox, failed)
                for f, job in zip(futures, jobs, strict=True)]
    except BaseException:  # Ctrl-C, SIGTERM: stop the containers now, not at their timeout
        pool.shutdown(wait=False, cancel_futures=True)
        getattr(sandbox, "stop_all", lambda: 0)()
        raise
    finally:
        pool.shutdown(wait=True)
        cleanup.LIVE.reopen()  # its threads are done: a later job (a refit, a prediction) runs


def _ran_ok(future: Future) -> bool:
    """Whether a job the early stop did not cancel finished well (one it stopped may raise)."""
    if future.cancelled():
        return False
    try:
        return bool(future.result().ok)
    except Exception:  # noqa: BLE001 - stopped under it: reported as not run
        return False


def _not_run(job: SandboxJob, sandbox: Sandbox, failed: SandboxResult | None) -> SandboxResult:
    """A job left out because another of its candidate's jobs failed first."""
    why = f"not run: another fold failed first ({failed.stage if failed else 'stopped'})"
    return SandboxResult(False, "skipped", sandbox.label, error=why)
