"""Atomic file writes: a reader sees the old file or the whole new one, never a part."""

import contextlib
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from curta_chain.errors import InputError


def atomic_write(path: str | os.PathLike[str], chunks: bytes | Iterable[bytes]) -> None:
    """Write ``chunks`` to ``path`` through a temporary file in the same folder.

    The temporary file is fsynced and renamed over ``path``; on any failure it is removed,
    so an interrupted write leaves nothing behind.

    Raises:
        InputError: the folder cannot be written.
    """
    target = Path(path)
    folder = target.parent if str(target.parent) else Path()
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise InputError(f"{target}: cannot write: {exc.strerror}") from exc
    try:
        # mkstemp makes the file 0600; give it the mode an ordinary open() would.
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "wb") as out:
            if isinstance(chunks, bytes | bytearray | memoryview):
                out.write(chunks)
            else:
                for chunk in chunks:
                    out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise InputError(f"{target}: cannot write: {exc.strerror}") from exc
        raise
