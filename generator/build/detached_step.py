"""Run one short step in a child process that no signal to the build stops.

An incremental build changes SITE file by file. Stopped in the middle (a kill,
a terminal's Ctrl-C, a service manager's SIGTERM), it would leave some records
new and others, or some of one record's files, old: a page linking to JSON of
another version. So the step that changes SITE runs in a child forked for it:
the child ignores SIGINT and SIGTERM, and a SIGKILL sent to the build's process
does not reach it, so once the step starts it ends, completed or put back.
The build waits for it, through any signal, and holds SITE's lock all along
(the child shares the locked file), so the next build waits for the child too.

Only a kill of the child itself (power loss, a kill of the whole process group)
stops the step part-way; the next build then puts SITE back first (journal.py).
Where there is no `fork`, the step runs in this process.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import warnings
from collections.abc import Callable

from ..trust.errors import BuildError

_SIGNALS = {signal.SIGINT, signal.SIGTERM}


class StoppedApart(Exception):
    """The child was killed before its step ended (`signal` says by what)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def run_apart(step: Callable[[], None]) -> KeyboardInterrupt | None:
    """Run `step` in a child process and wait for it, even through signals.

    A BuildError or OSError the step raises is raised here again (as a
    BuildError); a child killed by a signal raises StoppedApart. A Ctrl-C or
    SIGTERM this process received meanwhile is returned once the step has
    completed, for the caller to raise: it knows first that SITE changed.

    The step must only touch local files: this process may have read a content
    store, whose client's threads a forked child lacks (see build/content_store.py)."""
    if not hasattr(os, "fork"):
        step()
        return None
    read, write = os.pipe()
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    pid = -1
    try:
        with warnings.catch_warnings():  # (3.12 warns of fork in a process with threads: the
            warnings.simplefilter("ignore", DeprecationWarning)  # child takes no lock they hold)
            pid = os.fork()
        if pid == 0:  # pragma: no cover (the child: its outcome is what the parent checks)
            _child(step, read, write)
    finally:
        if pid != 0:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    os.close(write)
    interrupted: KeyboardInterrupt | None = None
    message = b""
    status = 0
    while True:
        try:
            message += _read_all(read)
            _, status = os.waitpid(pid, 0)
            break
        except KeyboardInterrupt as exc:  # (this process's own Ctrl-C or SIGTERM: the step goes on)
            interrupted = exc
    os.close(read)
    if os.WIFSIGNALED(status):
        raise StoppedApart(os.WTERMSIG(status))
    if status != 0:
        path, reason = _failure(message)
        raise BuildError(path, reason)
    return interrupted


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return b"".join(chunks)


def _failure(message: bytes) -> tuple[str, str]:
    try:
        path, reason = json.loads(message)
        return str(path), str(reason)
    except (ValueError, TypeError):
        return "", "the process changing the site failed"


def _child(step: Callable[[], None], read: int, write: int) -> None:  # pragma: no cover
    """The child: ignore the signals that stop a build, run the step, say how it failed."""
    code = 1
    try:
        os.close(read)
        for signum in _SIGNALS:
            signal.signal(signum, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGNALS)
        try:
            step()
            code = 0
        except BuildError as exc:
            os.write(write, json.dumps([exc.path, exc.reason]).encode())
        except OSError as exc:
            error = BuildError.from_os_error(exc, exc.filename or "")
            os.write(write, json.dumps([error.path, error.reason]).encode())
        except BaseException as exc:
            with contextlib.suppress(BaseException):
                os.write(write, json.dumps(["", f"{type(exc).__name__}: {exc}"]).encode())
    finally:
        os._exit(code)  # (no clean-up of this process's copy: the parent's buffers are its own)
