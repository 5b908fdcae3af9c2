"""Run a command on a pseudo-terminal of a given size, as a person at a terminal would.

``Terminal(argv, columns=80)`` starts the command with the pty as its controlling terminal
(so ``isatty()`` is true, the width is the pty's, and ``getpass`` reads from it);
``expect(text)`` waits for output, ``send(text)`` types, ``finish()`` waits for the exit
and returns everything the command wrote.
"""

import fcntl
import os
import re
import select
import signal
import struct
import sys
import termios
import time

import processes


class Terminal:
    def __init__(self, argv: list[str], columns: int = 80, rows: int = 24, env=None, cwd=None):
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        self.process = processes.start(
            argv,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
            env={**os.environ, "PYTHONUNBUFFERED": "1", "TERM": "xterm", **(env or {})},
            cwd=cwd,
        )
        os.close(slave)
        self.output = b""

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return True
        try:
            chunk = os.read(self.master, 65536)
        except OSError:  # EIO: the command exited and the pty closed
            return False
        if not chunk:
            return False
        self.output += chunk
        return True

    @property
    def text(self) -> str:
        return self.output.decode(errors="replace")

    def expect(self, text: str, timeout: float = 60) -> None:
        """Wait until the command has written ``text``."""
        self.expect_match(re.escape(text), timeout)

    def expect_match(self, pattern: str, timeout: float = 60) -> None:
        """Wait until the command's output matches the regular expression ``pattern``."""
        deadline = time.monotonic() + timeout
        while not re.search(pattern, self.text):
            if time.monotonic() > deadline or not self._read(0.1):
                if re.search(pattern, self.text):
                    return
                raise AssertionError(f"{pattern!r} never came; got {self.text[-2000:]!r}")

    def send(self, text: str) -> None:
        os.write(self.master, text.encode())

    def interrupt(self) -> None:
        self.process.send_signal(signal.SIGINT)

    def finish(self, timeout: float = 300) -> str:
        """Wait for the command to exit (the pty closes then); return all it wrote."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self._read(0.1):
            pass
        processes.wait(self.process, max(deadline - time.monotonic(), 1))
        os.close(self.master)
        return self.text


def curta(*args: str) -> list[str]:
    return [sys.executable, "-m", "curta_chain", *args]
