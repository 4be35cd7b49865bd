"""The sandbox image, built offline: a minimal Debian (debootstrap) with python3, and this
machine's exact numpy, pandas, scipy, scikit-learn and pyarrow (pip, into /opt/agentic/site),
imported into Docker. The same versions as the host, so a pipeline fitted inside loads outside;
the tag is a hash of them, so an upgrade on the host asks for a new image. No registry needed
(``docker pull`` cannot reach one here); ``docker/sandbox.Dockerfile`` is for users with one."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

from mlflow_agentic.core.errors import UserInputError

PACKAGES = ("numpy", "pandas", "scipy", "scikit-learn", "pyarrow", "joblib", "threadpoolctl")
REPOSITORY = "mlflow-agentic-sandbox"
SITE = "/opt/agentic/site"


def pins() -> list[str]:
    return [f"{p}=={metadata.version(p)}" for p in PACKAGES]


def default_image() -> str:
    digest = hashlib.sha256(" ".join(pins()).encode()).hexdigest()[:12]
    return f"{REPOSITORY}:{digest}"


def build_image(name: str | None = None, suite: str = "bookworm",
                say: Callable[[str], None] = print) -> str:
    """Build (or keep, when it exists) the sandbox image; returns its name. Needs root,
    ``debootstrap`` and a Docker daemon; about 3 minutes on 2 cores."""
    import docker

    name = name or default_image()
    try:
        client = docker.from_env(timeout=600)
        client.ping()
    except docker.errors.DockerException as exc:
        raise UserInputError(f"no Docker daemon answers ({str(exc)[:200]}); start one (as root: "
                             "dockerd &) and build again") from exc
    try:
        client.images.get(name)
        say(f"sandbox image {name} is already built")
        return name
    except docker.errors.ImageNotFound:
        pass
    if shutil.which("debootstrap") is None:
        raise UserInputError("sandbox build needs debootstrap (apt-get install -y debootstrap), "
                             "or build docker/sandbox.Dockerfile where a registry is reachable")
    repository, _, tag = name.partition(":")
    with tempfile.TemporaryDirectory(prefix="mlflow-agentic-image-") as tmp:
        rootfs, archive = Path(tmp) / "rootfs", Path(tmp) / "rootfs.tar"
        steps = [
            (f"a minimal Debian {suite} with python3",
             ["debootstrap", "--variant=minbase", "--include=python3,libgomp1", suite,
              str(rootfs)]),
            (f"this machine's {', '.join(pins())}",
             [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
              "--target", f"{rootfs}{SITE}", *pins()]),
            ("packing it", ["tar", "-C", str(rootfs), "-cf", str(archive), "."]),
        ]
        for what, command in steps:
            say(f"sandbox build: {what} ...")
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode != 0:
                raise UserInputError(f"sandbox build failed at {what}: "
                                     f"{(done.stderr or done.stdout)[-1500:]}")
        say(f"sandbox build: importing it as {name} ...")
        client.api.import_image_from_file(str(archive), repository=repository, tag=tag or None,
                                          changes=[f"ENV PYTHONPATH={SITE}", "WORKDIR /tmp"])
    return name
