"""What the host takes back from a sandbox, read as hostile input.

A candidate controls every byte of its output folder: it can leave a symbolic link (to
``/etc/shadow`` on the host, or ``/dev/zero``), a FIFO (an ``open`` that never returns), a
device, or a file of any size where the harness's outputs belong. So the host reads only the
names it expects, only as regular files, only up to a cap fixed before reading, and never
follows a link: from a container, out of the tar stream Docker sends (a link there is a record
in the stream, never resolved on the host); from a host folder (``--allow-host-execution``),
with ``O_NOFOLLOW | O_NONBLOCK`` and ``fstat`` on the open descriptor. Anything else is refused
with the reason, which fails the attempt: never a number, never a crash, never a hang.
"""

from __future__ import annotations

import os
import stat
import tarfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, cast

RESULT_BYTES = 256 * 1024
"""``result.json``: the stage, an error and a traceback (the harness cuts them to 10 kB)."""
LOG_BYTES = 80 * 1024
"""``candidate.log``: the harness keeps the last 20,000 characters."""


def prediction_bytes(n_rows: int, n_outputs: int) -> int:
    """The largest ``pred.npy`` a job's rows can need (float64 and a header)."""
    return 8 * n_rows * max(n_outputs, 1) + 4096


@dataclass
class Outputs:
    """The expected files that were there and safe to read (``files``), and why any other
    entry under an expected name was refused (``refused``: name -> reason)."""

    files: dict[str, bytes] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)

    def problem(self) -> str | None:
        """The first refusal, as one sentence, or None."""
        for name, reason in self.refused.items():
            return f"the sandbox's {name} was refused: {reason}"
        return None


def _kind(mode: int) -> str:
    for test, word in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder")):
        if test(mode):
            return word
    return "not a regular file"


def _too_large(size: int, cap: int) -> str:
    return f"{size:,} bytes, more than the {cap:,} it may hold; nothing was read"


def read_folder(folder: Path, caps: Mapping[str, int]) -> Outputs:
    """The expected files of a host folder the candidate could write to. The folder itself is
    the host's (opened without following a link); each name is opened relative to it with
    ``O_NOFOLLOW | O_NONBLOCK`` (a link fails, a FIFO does not block) and checked on the open
    descriptor: a regular file with one link, no larger than its cap."""
    outputs = Outputs()
    try:
        dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as exc:
        outputs.refused.update({name: f"the output folder cannot be opened ({exc.strerror})"
                                for name in caps})
        return outputs
    try:
        for name, cap in caps.items():
            try:
                info = os.lstat(name, dir_fd=dir_fd)
            except FileNotFoundError:
                continue
            if not stat.S_ISREG(info.st_mode):
                outputs.refused[name] = f"it is {_kind(info.st_mode)}; the host reads only " \
                                        "regular files"
                continue
            try:
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                             dir_fd=dir_fd)
            except OSError as exc:  # replaced by a link or a FIFO since the lstat
                outputs.refused[name] = f"it could not be opened safely ({exc.strerror})"
                continue
            with os.fdopen(fd, "rb") as handle:
                info = os.fstat(fd)
                if not stat.S_ISREG(info.st_mode):
                    outputs.refused[name] = f"it is {_kind(info.st_mode)}"
                elif info.st_nlink != 1:
                    outputs.refused[name] = (f"it has {info.st_nlink} hard links; the host "
                                             "reads only a file the harness made")
                elif info.st_size > cap:
                    outputs.refused[name] = _too_large(info.st_size, cap)
                else:
                    data = handle.read(cap + 1)
                    if len(data) > cap:  # grew after the fstat
                        outputs.refused[name] = _too_large(len(data), cap)
                    else:
                        outputs.files[name] = data
    finally:
        os.close(dir_fd)
    return outputs


def stream_bytes(caps: Mapping[str, int]) -> int:
    """The most a tar stream of the expected files can need: each file within its cap, with
    its header and padding, and the archive's end."""
    return sum(caps.values()) + 4096 * (len(caps) + 4)


def read_archive(stream: Iterable[bytes], caps: Mapping[str, int], folder: str = "out") -> Outputs:
    """The expected files of a tar stream of a container's output folder (``get_archive``):
    members read only when they are regular files directly in ``folder``, within their cap.
    Links, FIFOs and devices are records in the stream; none is followed or made here. Bounded:
    reading stops at a member over its cap (a 1 TB sparse file is refused by its header, not
    streamed), and the stream may not exceed ``stream_bytes(caps)`` (``OSError``)."""
    outputs = Outputs()
    chunks = cast(IO[bytes], _Chunks(stream, stream_bytes(caps)))  # read() is all tar needs
    with tarfile.open(fileobj=chunks, mode="r|") as archive:
        for member in archive:
            parent, _, name = member.name.rstrip("/").rpartition("/")
            if parent.lstrip("./") != folder or name not in caps:
                continue
            if not member.isreg():
                kind = ("a symbolic link" if member.issym() else "a hard link" if member.islnk()
                        else "a FIFO" if member.isfifo() else "a device" if member.isdev()
                        else "a folder" if member.isdir() else "not a regular file")
                outputs.refused[name] = f"it is {kind}; the host reads only regular files"
            elif member.size > caps[name]:
                outputs.refused[name] = _too_large(member.size, caps[name])
                break  # the attempt fails on this refusal: its bytes are not worth streaming
            else:
                handle = archive.extractfile(member)
                outputs.files[name] = handle.read(caps[name] + 1) if handle else b""
    return outputs


class _Chunks:
    """A file-like reader over the chunks ``get_archive`` yields (tarfile reads in blocks),
    refusing to deliver more than ``limit`` bytes in all."""

    def __init__(self, chunks: Iterable[bytes], limit: int | None = None) -> None:
        self._chunks = iter(chunks)
        self._chunk = memoryview(b"")
        self._at = 0
        self._limit = limit
        self._delivered = 0

    def read(self, size: int = -1) -> bytes:
        data = self._read(size)
        self._delivered += len(data)
        if self._limit is not None and self._delivered > self._limit:
            raise OSError(f"the output stream ran past {self._limit:,} bytes, more than the "
                          "expected files may hold")
        return data

    def _read(self, size: int) -> bytes:
        parts, n = [], 0
        while size < 0 or n < size:
            if self._at >= len(self._chunk):
                chunk = next(self._chunks, None)
                if chunk is None:
                    break
                self._chunk, self._at = memoryview(chunk), 0
                continue
            end = len(self._chunk) if size < 0 else min(len(self._chunk), self._at + size - n)
            parts.append(self._chunk[self._at:end])
            n += end - self._at
            self._at = end
        return b"".join(parts)
