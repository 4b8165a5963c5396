"""The real commands in a subprocess: `serve` and `build --watch` start, work, and stop on Ctrl-C.

Output is read line by line with a deadline (never a fixed sleep), and SIGINT
is what a terminal sends on Ctrl-C.
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
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import BUNDLE_PAGE, RECORD_PAGE, REPO, SEED_BUNDLE, SEED_RECORD, TIMEOUT, Workspace, poll


def _default_sigint() -> None:
    """Let Ctrl-C through even when the tests run in a background job (which ignores SIGINT)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Running:
    """A pith-mirror subprocess whose stdout lines arrive through a reader thread.

    (Selecting on the pipe is not enough: a buffered readline may pull two
    lines at once, and the second would then wait for more output.)"""

    def __init__(self, args: list[str], cwd: Path) -> None:
        env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=str(REPO))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "generator", *args],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=_default_sigint,
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

    def interrupt(self) -> tuple[int, str, str]:
        """Ctrl-C, then the exit code, all of stdout and all of stderr."""
        self.process.send_signal(signal.SIGINT)
        code = self.process.wait(timeout=TIMEOUT)
        for reader in self._readers:
            reader.join(TIMEOUT)
        while not self._queue.empty():
            line = self._queue.get_nowait()
            if line is not None:
                self.lines.append(line)
        return code, "".join(self.lines), "".join(self._errors)


@pytest.fixture
def running() -> Iterator[list[Running]]:
    started: list[Running] = []
    yield started
    for item in started:
        if item.process.poll() is None:
            item.process.kill()
            item.process.wait(TIMEOUT)


def fetch(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT) as reply:
            return int(reply.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def test_serve_prints_its_url_serves_rebuilds_and_stops_on_ctrl_c(
    workspace: Workspace, running: list[Running]
) -> None:
    workspace.add(SEED_RECORD)
    process = Running(
        ["serve", "--port", "0", "--jobs", "1", str(workspace.content), str(workspace.site)], workspace.root
    )
    running.append(process)
    found = process.wait_for_line(r"Serving .*site/ at (http://127\.0\.0\.1:(\d+)/) — Ctrl-C to stop")
    url, port = found.group(1), int(found.group(2))
    assert port != 0
    assert fetch(url + RECORD_PAGE.lstrip("/")) == 200
    assert fetch(url + BUNDLE_PAGE.lstrip("/")) == 404

    workspace.add(SEED_BUNDLE)
    poll(lambda: fetch(url + BUNDLE_PAGE.lstrip("/")) == 200)

    code, out, err = process.interrupt()
    assert code in (0, 130), err
    assert "Traceback" not in err and "Traceback" not in out
    assert "stopped" in err
    assert "first build -> published 1" in out
    assert not (workspace.site / "index.html").read_bytes().count(b"__pith-mirror")


def test_build_watch_rebuilds_until_ctrl_c(workspace: Workspace, running: list[Running]) -> None:
    workspace.add(SEED_RECORD)
    process = Running(
        ["build", "--watch", "--jobs", "1", str(workspace.content), str(workspace.site)], workspace.root
    )
    running.append(process)
    process.wait_for_line(r"first build -> published 1, refused 0 file\(s\)")
    process.wait_for_line(r"Watching .* Ctrl-C to stop")

    workspace.add(SEED_BUNDLE)
    process.wait_for_line(rf"content/{re.escape(SEED_BUNDLE.name)} created -> published 2")
    assert (workspace.site / "pith" / "Z5NAPRQPUU4SIDOBV5N2FREXWZ.html").is_file()

    code, _out, err = process.interrupt()
    assert code in (0, 130), err
    assert "Traceback" not in err


def test_serve_reports_a_port_in_use_as_a_usage_error(workspace: Workspace, running: list[Running]) -> None:
    workspace.add(SEED_RECORD)
    first = Running(["serve", "--port", "0", "--jobs", "1", "--no-watch", "content", "site"], workspace.root)
    running.append(first)
    port = first.wait_for_line(r"http://127\.0\.0\.1:(\d+)/").group(1)
    second = subprocess.run(
        [sys.executable, "-m", "generator", "serve", "--port", port, "--jobs", "1", "content", "site2"],
        cwd=workspace.root,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert second.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in second.stderr
    assert "Traceback" not in second.stderr
    first.interrupt()
