"""The tests' child processes: Ctrl-C as a terminal gives it, and nothing left behind.

A shell that ignores SIGINT (a background job, ``nohup``, a CI runner) passes the ignore
on to pytest and, through exec, to every process pytest starts; a child would then outlive
the Ctrl-C a test sends it. ``default_ctrl_c()`` (called by ``tests/conftest.py``) gives the
test process Python's own SIGINT handler, so every child starts with the default one (exec
resets a handled signal, and only an ignored one survives it).

A child started here (``start``, ``run``) leads its own process group, so what it starts in
turn (the validator behind ``localnet --validator``) goes with it: ``kill`` kills the
group, ``finish``, ``wait`` and ``run`` kill it when it outlives their timeout, and
``left_behind`` (around every test, in ``tests/conftest.py``) kills every group the test
started here that is still running when it ends.
"""

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from typing import Any

_started: list[subprocess.Popen[Any]] = []
_lock = threading.Lock()


def default_ctrl_c() -> None:
    """Let SIGINT interrupt this process, and start its children with the default."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)


def start(argv: list[str], **options: Any) -> subprocess.Popen[Any]:
    """``subprocess.Popen(argv, **options)``, leading its own process group."""
    if not options.get("start_new_session"):
        options.setdefault("process_group", 0)
    process: subprocess.Popen[Any] = subprocess.Popen(argv, **options)
    with _lock:
        _started.append(process)
    return process


def kill(process: subprocess.Popen[Any]) -> None:
    """SIGKILL ``process``'s group (it leads it) and reap the process."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=30)


def finish(process: subprocess.Popen[Any], timeout: float) -> tuple[Any, Any]:
    """``process.communicate(timeout=timeout)``; past it, the group is killed and it raises.

    Raises:
        subprocess.TimeoutExpired: the process outlived ``timeout`` (killed, with its group).
    """
    try:
        return process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill(process)
        raise


def wait(process: subprocess.Popen[Any], timeout: float) -> int:
    """``process.wait(timeout=timeout)``; past it, the group is killed and it raises."""
    try:
        return process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill(process)
        raise


def run(
    argv: list[str], timeout: float | None = None, **options: Any
) -> subprocess.CompletedProcess[Any]:
    """``subprocess.run`` in its own process group, the group killed past ``timeout``."""
    stdin = options.pop("input", None)
    if stdin is not None:
        options["stdin"] = subprocess.PIPE
    if options.pop("capture_output", False):
        options.update(stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    check = options.pop("check", False)
    process = start(argv, **options)
    try:
        out, err = process.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        kill(process)
        raise
    done = subprocess.CompletedProcess(argv, process.returncode, out, err)
    if check:
        done.check_returncode()
    return done


@contextlib.contextmanager
def left_behind() -> Iterator[None]:
    """Around a test: kill the group of every child it started that still runs at its end."""
    with _lock:
        first = len(_started)
    try:
        yield
    finally:
        with _lock:
            mine, _started[first:] = _started[first:], []
        for process in mine:
            if process.poll() is None:
                kill(process)
