"""A pith-mirror command in a subprocess, read line by line with deadlines.

Shared by the tests that run the real CLI (`serve`, `build --watch`, the
browser tests): output arrives through reader threads, so waiting for a line
is bounded even when the process prints nothing at all.
"""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TIMEOUT = 20.0


def _default_sigint() -> None:
    """Let Ctrl-C through even when the tests run in a background job (which ignores SIGINT)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Running:
    """A pith-mirror subprocess whose stdout lines arrive through a reader thread.

    (Selecting on the pipe is not enough: a buffered readline may pull two
    lines at once, and the second would then wait for more output.)"""

    def __init__(self, args: list[str], cwd: Path, new_session: bool = False) -> None:
        """`new_session`: in a process group of its own, whose processes `group` lists."""
        env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=str(REPO))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "generator", *args],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=_default_sigint,
            start_new_session=new_session,
        )
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._errors: list[str] = []
        self._readers = [
            threading.Thread(target=self._read, daemon=True),
            threading.Thread(target=self._read_errors, daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._queue.put(line)
        self._queue.put(None)

    def _read_errors(self) -> None:
        assert self.process.stderr is not None
        self._errors.extend(self.process.stderr)

    def wait_for_line(self, pattern: str, timeout: float = TIMEOUT) -> re.Match[str]:
        """The first stdout line matching `pattern`, waiting at most `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            for line in self.lines:
                if found := re.search(pattern, line):
                    return found
            try:
                line = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                line = None
            if line is None:
                raise AssertionError(f"no line matching {pattern!r}; got {self.lines!r}")
            self.lines.append(line)

    def interrupt(self, signum: int = signal.SIGINT) -> tuple[int, str, str]:
        """Ctrl-C (or another signal), then the exit code, all of stdout and all of stderr."""
        self.process.send_signal(signum)
        code = self.process.wait(timeout=TIMEOUT)
        for reader in self._readers:
            reader.join(TIMEOUT)
        while not self._queue.empty():
            line = self._queue.get_nowait()
            if line is not None:
                self.lines.append(line)
        return code, "".join(self.lines), "".join(self._errors)


def group_processes(group: int) -> list[int]:
    """The live processes of process group `group` (a command started with
    `new_session`, and every process it started, however far down)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[2]) == group and fields[0] != "Z":
            found.append(int(entry))
    return found


def wait_for_no_process(group: int, timeout: float = TIMEOUT) -> None:
    """Fail unless every process of `group` has ended within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while left := group_processes(group):
        if time.monotonic() > deadline:
            raise AssertionError(f"processes outlived the command: {[_command(pid) for pid in left]}")
        time.sleep(0.02)


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[:120]
    except OSError:
        return f"{pid} (gone)"
