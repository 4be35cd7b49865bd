"""Where a candidate's code runs: ``DockerSandbox`` (a fresh locked-down container per job: a
CV fold, the refit, a prediction) or, only with ``--allow-host-execution``, ``HostSandbox`` (a
subprocess: a wall-clock kill and an empty environment, no isolation). Both run the same
harness on the same files. ``run_all`` runs several jobs at once (a candidate's folds)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass

from mlflow_agentic.sandbox.image import default_image
from mlflow_agentic.sandbox.job import SandboxJob, SandboxResult, SandboxUnavailable

THREADS = {**{v: "1" for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")},
           "JOBLIB_MULTIPROCESSING": "0"}
"""The whole environment a candidate gets (besides HOME): no secrets, one thread per library
(on a busy machine OpenMP threads spin against each other), and joblib told up front that
there is no /dev/shm for process pools (it would warn in every log)."""


@dataclass(frozen=True)
class Limits:
    memory: str = "2g"
    cpus: float = 2.0
    pids: int = 256
    scratch: str = "256m"
    """The tmpfs at /tmp: the only writable place besides the harness's output folder (no
    /dev/shm, and /dev/mqueue is read-only: the container's IPC namespace is its own and
    empty)."""
    timeout: float = 600.0
    """Wall-clock seconds per container (one CV fold, the refit, or one prediction)."""

    def tags(self) -> dict[str, str]:
        return {f"sandbox.{k}": str(v) for k, v in asdict(self).items()}


class DockerSandbox:
    label = "docker"

    def __init__(self, image: str | None = None, limits: Limits | None = None) -> None:
        self.image = image or default_image()  # the one `sandbox build` makes for this machine
        self.limits = limits or Limits()
        self._client = None

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
        client = docker.from_env(timeout=30)
        try:
            with job.staged() as paths:
                return self._run(client, job, paths)
        finally:
            client.close()

    def _run(self, client, job: SandboxJob, paths: dict) -> SandboxResult:
        import requests

        lim = self.limits
        mounts = {str(path): {"bind": f"/sandbox/{path.name}", "mode": "ro"}
                  for key, path in paths.items() if key != "out"}
        mounts[str(paths["out"])] = {"bind": "/sandbox/out", "mode": "rw"}
        started = time.perf_counter()
        container = client.containers.run(
            self.image, ["python3", "/sandbox/harness.py", "/sandbox", "/sandbox/out"],
            detach=True, network_mode="none", mem_limit=lim.memory, memswap_limit=lim.memory,
            nano_cpus=int(lim.cpus * 1e9), pids_limit=lim.pids, read_only=True,
            cap_drop=["ALL"], security_opt=["no-new-privileges"], ipc_mode="none",
            tmpfs={"/tmp": f"size={lim.scratch}", "/dev/mqueue": "ro,size=4k"},
            volumes=mounts,
            environment={**THREADS, "HOME": "/tmp"}, user="65534:65534", working_dir="/tmp",
            labels={"mlflow-agentic": "candidate"})
        killed = None
        try:
            try:
                status = container.wait(timeout=lim.timeout)
            except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
                container.kill()
                killed = f"wall-clock limit: killed after {lim.timeout:g}s"
                status = {"StatusCode": 137}
            container.reload()
            if killed is None and container.attrs["State"].get("OOMKilled"):
                killed = f"memory limit: killed at {lim.memory} (out of memory)"
            elif killed is None and status.get("StatusCode") == 137:
                killed = "killed (exit 137: memory or pids limit)"
            logs = container.logs(tail=200).decode(errors="replace")
        finally:
            container.remove(force=True)
        return SandboxResult.read(paths["out"], job, self.label, time.perf_counter() - started,
                                  {"sandbox.image": self.image, **lim.tags()}, killed, logs)


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

    def _run(self, job: SandboxJob, paths: dict) -> SandboxResult:
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
        return SandboxResult.read(paths["out"], job, self.label, time.perf_counter() - started,
                                  {"sandbox.timeout": str(self.limits.timeout)}, killed,
                                  out.decode(errors="replace"))


def make_sandbox(allow_host_execution: bool = False, image: str | None = None,
                 limits: Limits | None = None):
    """The sandbox code mode runs in: Docker, checked now (fail closed), or the host only when
    the user said so."""
    if allow_host_execution:
        return HostSandbox(limits)
    return DockerSandbox(image, limits).check()


def run_all(sandbox, jobs: Sequence[SandboxJob], parallel: int = 1) -> list[SandboxResult]:
    """Each job in a fresh sandbox, ``parallel`` at a time; results in the jobs' order."""
    if parallel <= 1 or len(jobs) <= 1:
        return [sandbox.run(job) for job in jobs]
    with ThreadPoolExecutor(min(parallel, len(jobs))) as pool:
        return list(pool.map(sandbox.run, jobs))
