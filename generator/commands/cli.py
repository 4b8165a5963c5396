"""The `pith-mirror` command: parse arguments, call a stage, print, choose the exit code.

Rules:
- This is the only module that prints to the terminal or picks exit codes:
  0 all good, 1 something was refused, 2 usage or configuration error.
- A reader that stops reading early (`pith-mirror verify content | head -1`)
  ends the command quietly with exit 1, as Python's note on SIGPIPE does it:
  what is left to print goes to /dev/null, and nothing is said on stderr.
- Bad content never produces a traceback; an unexpected exception is a bug and
  is allowed to surface.
- Heavy imports happen inside the subcommand that needs them.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .. import __version__
from ..trust.errors import BuildError, Code, ConfigError, Interrupted, Problem, Rejection, printable
from .common import EXIT_OK, EXIT_REJECTED, EXIT_USAGE, load_keys, what_was_kept


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pith-mirror",
        description="Verify Pith records and bundles and publish them as a static mirror.",
    )
    parser.add_argument("--version", action="version", version=f"pith-mirror {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    verify = commands.add_parser("verify", help="check documents against the pinned keys without building")
    verify.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="files or folders (recursive), or an object store's s3://, gs:// or az://BUCKET/PREFIX/",
    )
    verify.add_argument("--keys", type=Path, metavar="FILE", help="pinned keys (JSON key object or list)")
    verify.add_argument("--json", action="store_true", help="print results as JSON on stdout")
    verify.add_argument("--max-bytes", type=int, metavar="N", help="largest document accepted, in bytes")

    from .publish_commands import add_publish_commands
    from .pull_command import add_pull_command
    from .site_commands import add_site_commands

    add_site_commands(commands)
    add_publish_commands(commands)
    add_pull_command(commands)
    return parser


HELD_IMPORTS = ("orjson",)
"""Native modules imported with SIGINT and SIGTERM held back (see `import_held`)."""


def main(argv: Sequence[str] | None = None) -> int:
    previous = stop_on_signals()  # (first: a SIGTERM from here on stops the command cleanly)
    begun = False
    try:
        import_held(HELD_IMPORTS)
        args = build_parser().parse_args(argv)
        args.argv = list(sys.argv[1:] if argv is None else argv)  # (for the command a build suggests next)
        begun = True
        code: int = args.handler(args) if hasattr(args, "handler") else run_verify(args)
        sys.stdout.flush()  # (a reader that went away is found here, not at exit)
        return code
    except BrokenPipeError:
        return reader_went_away()
    except ConfigError as exc:
        print(f"pith-mirror: configuration: {exc.key}: {exc.reason}", file=sys.stderr)
        return EXIT_USAGE
    except BuildError as exc:
        print(f"pith-mirror: {exc.path}: {exc.reason}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt as exc:
        signum = exc.signum if isinstance(exc, Interrupted) else signal.SIGINT
        kept = what_was_kept(exc) if begun else "; nothing was changed"  # (before the command began)
        print(f"pith-mirror: stopped{kept}", file=sys.stderr)
        return 128 + signum
    finally:
        for signum, handler in previous.items():  # (as they were: main may be called in-process)
            signal.signal(signum, handler)


def stop_on_signals() -> dict[int, Any]:
    """SIGTERM (a service manager, `kill`, a container stopping) stops a command as
    Ctrl-C does: an `Interrupted` raised in the main thread, so that a build stops its
    workers, removes its temporary files and leaves SITE whole. (A signal already
    ignored, as SIGINT is in a background job, stays ignored.) Returns the handlers
    replaced."""
    replaced: dict[int, Any] = {}
    if threading.current_thread() is not threading.main_thread():
        return replaced
    for signum, default in ((signal.SIGINT, signal.default_int_handler), (signal.SIGTERM, signal.SIG_DFL)):
        if signal.getsignal(signum) is default:
            replaced[signum] = signal.signal(signum, _interrupt)
    return replaced


def _interrupt(signum: int, _frame: object) -> None:
    raise Interrupted(signum)


def import_held(modules: Sequence[str]) -> None:
    """Import `modules` with SIGINT and SIGTERM held back until they are in; one that
    came meanwhile is then handled as usual.

    orjson's native module imports Python modules while it starts and does not
    expect that to fail: a handler that raises then (Ctrl-C, or a SIGTERM in the
    command's first tenth of a second, which `stop_on_signals` turns into an
    exception) crashed the whole process with SIGSEGV instead of stopping it.
    (Held only where signals can be, on the main thread of a POSIX system.)"""
    hold = getattr(signal, "pthread_sigmask", None)
    if hold is None or threading.current_thread() is not threading.main_thread():
        for module in modules:
            importlib.import_module(module)
        return
    was = hold(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        for module in modules:
            importlib.import_module(module)
    finally:
        hold(signal.SIG_SETMASK, was)


def reader_went_away() -> int:
    """Stdout's reader closed its end: send what is still buffered to /dev/null (Python
    flushes stdout again at exit, and would fail again) and stop with exit 1, quietly."""
    with contextlib.suppress(OSError, ValueError):  # (no file behind stdout: nothing to flush at exit)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    return EXIT_REJECTED


def run_verify(args: argparse.Namespace) -> int:
    from ..build.content_store import store_documents, verify_stored
    from ..site.config import check_max_bytes, store_url
    from ..trust.causes import by_cause, cause_of, pinned_names
    from ..trust.check import verify_file
    from ..trust.load import NOT_UTF8_NAME, Limits, discover, is_utf8, shown_name
    from ..trust.model import Verdict

    keyring = load_keys(args.keys)
    if args.max_bytes is not None:
        check_max_bytes(args.max_bytes)
    limits = Limits(max_bytes=args.max_bytes) if args.max_bytes is not None else Limits()
    targets: list[tuple[Path, str, Path, str]] = []  # (file, name shown, its folder, the name there)
    stored: list[tuple[str, str]] = []  # (documents in object stores: URL, its store's folder)
    for given in args.paths:
        url = store_url(given)
        if url is not None:
            stored.extend(store_documents(url))
            continue
        path = Path(given)
        if path.is_dir():
            targets.extend(
                (p, shown_name((path / name).as_posix()), path, name) for p, name in discover(path)
            )
        elif path.exists() or path.is_symlink():
            targets.append((path, shown_name(path.as_posix()), path.parent, path.name))
        else:
            raise ConfigError("paths", f"no such file or folder: {path}")
    results = []
    for file_path, name, root, own_name in targets:
        if not is_utf8(own_name):  # refused unread, as the build refuses it
            results.append(Verdict(name, None, None, (Problem(Code.FILE_UNREADABLE, "", NOT_UTF8_NAME),)))
            continue
        verdict, _verified, _source = verify_file(file_path, name, root, keyring, limits)
        results.append(verdict)
    results.extend(verify_stored(stored, keyring, limits))
    rejected = [v for v in results if not v.ok]
    problems = {
        v.file: [Rejection(v.file, p.pointer, p.code, p.message) for p in v.problems] for v in rejected
    }
    causes = {file: cause_of(found) for file, found in problems.items()}
    if args.json:
        print(
            json.dumps(
                {
                    "results": [
                        {
                            "path": v.file,
                            "kind": v.kind,
                            "pith_number": v.pith_number,
                            "ok": v.ok,
                            "errors": [r.as_json() for r in problems.get(v.file, ())],
                            "cause": causes[v.file].as_json() if v.file in causes else None,
                        }
                        for v in results
                    ],
                    "causes": [
                        c.as_json()
                        for c in by_cause(
                            (r for found in problems.values() for r in found), pinned_names(keyring)
                        )
                    ],
                    "summary": {
                        "checked": len(results),
                        "ok": len(results) - len(rejected),
                        "rejected": len(rejected),
                    },
                },
                indent=2,
                ensure_ascii=False,
            )
        )
    else:
        for v in results:
            word = "verified" if v.ok else "REJECTED"
            cause = causes.get(v.file)
            more = len(v.problems) - 1
            first = "" if cause is None else f"  {cause.code.value}: {cause.message}"
            first += f" (and {more:,} more problem(s) that follow from it)" if more > 0 else ""
            print(f"{word:<9} {v.kind or '?':<7} {v.pith_number or '-':<38} {printable(v.file)}{first}")
        for v in rejected:
            for line in sorted(Rejection(v.file, p.pointer, p.code, p.message) for p in v.problems):
                print(line.line(), file=sys.stderr)
        print(f"{len(results)} checked, {len(results) - len(rejected)} verified, {len(rejected)} rejected")
    if not results:
        print("pith-mirror: no documents found (looked for *.json)", file=sys.stderr)
    return EXIT_REJECTED if rejected or not results else EXIT_OK
