"""Atomic file writes: a reader sees the old file or the whole new one, never a part."""

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from curta_chain.errors import InputError


def atomic_write(
    path: str | os.PathLike[str], chunks: bytes | Iterable[bytes], mode: int | None = None
) -> None:
    """Write ``chunks`` to ``path`` through a temporary file in the same folder.

    The temporary file is fsynced and renamed over ``path``; on any failure it is removed,
    so an interrupted write leaves nothing behind. ``mode`` (say ``0o600`` for a secret) is
    the file's mode from its creation on; by default, what an ordinary ``open()`` gives.

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
        # mkstemp makes the file 0600: keep it so, or give it what an ordinary open() would.
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.fchmod(fd, mode)
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


def refresh_generated(path: Path, text: str, check: bool, stale: str) -> bool:
    """Write a generated file's ``text`` to ``path`` if it differs; with ``check``, only compare.

    Returns whether ``path`` was current. A stale file under ``check`` is named on stderr as
    ``"{path}: {stale}"`` (what is stale and how to regenerate it); a rewritten one as
    ``wrote {path}`` on stdout.
    """
    current = path.read_text() if path.exists() else None
    if current == text:
        return True
    if check:
        print(f"{path}: {stale}", file=sys.stderr)
    else:
        atomic_write(path, text.encode())
        print(f"wrote {path}")
    return False
