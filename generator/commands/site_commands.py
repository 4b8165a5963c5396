"""The site subcommands (`build`, `serve`): their options and what they print.

Kept apart from `cli.py` so that module stays a thin dispatcher; like it, this
is presentation only: stages return values, these functions print them.
"""

from __future__ import annotations

import argparse
import contextlib
import shlex
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..trust.errors import Interrupted
from .common import EXIT_OK, EXIT_REJECTED, load_keys, print_rejections, settings_from, summary_line

MAX_PORT = 65535

if TYPE_CHECKING:  # (annotations only: a command imports what it runs, when it runs it)
    from ..build.change_check import Look
    from ..build.report import BuildReport
    from ..site.config import SiteConfig
    from ..trust.keys import Keyring


def add_site_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "content",
        nargs="?",
        metavar="CONTENT",
        help="signed documents: a folder (default content/, or file:///PATH), or for `build`"
        " an object store's s3://, gs:// or az://BUCKET/PREFIX/",
    )
    parser.add_argument(
        "site", nargs="?", metavar="SITE", help="output folder (default site/), or a file:// URL"
    )
    parser.add_argument("--keys", type=Path, metavar="FILE", help="pinned keys (JSON key object or list)")
    parser.add_argument(
        "--base-url", metavar="URL", help="where the site is served, e.g. https://example.github.io/mirror/"
    )
    parser.add_argument(
        "--config", type=Path, metavar="FILE", help="settings file (pith-mirror.toml or pyproject.toml)"
    )
    parser.add_argument(
        "--jobs", type=int, metavar="N", help="worker processes (default: all cores; at most 4 per core)"
    )
    parser.add_argument("--site-title", metavar="TEXT", help="the mirror's name in page titles")
    parser.add_argument(
        "--primary-url", metavar="URL", help="the primary resolver (default https://pith.science)"
    )
    parser.add_argument(
        "--cname", metavar="DOMAIN", help="write a CNAME file for a custom domain (GitHub Pages)"
    )
    parser.add_argument(
        "--checksums",
        action="store_true",
        default=None,
        help="also write SHA256SUMS of the whole site (reads every file: for publishing)",
    )
    parser.add_argument(
        "--mirror-key", type=Path, metavar="FILE", help="sign the mirror manifest (implies --checksums)"
    )
    parser.add_argument(
        "--allow-removals",
        action="store_true",
        default=None,
        help="let the build unpublish records even when CONTENT is empty or over 10%% of them go",
    )
    parser.add_argument(
        "--deployed",
        type=Path,
        metavar="FILE",
        help="the deployed site's .well-known/pith/mirror.json, its shards beside it in mirror/: "
        "its records count as published",
    )
    parser.add_argument("--clean", action="store_true", help="ignore the build cache: a full build")
    parser.add_argument("--quiet", action="store_true", help="print only the summary line and problems")
    parser.add_argument(
        "--relative",
        action="store_true",
        default=None,
        help="links relative to each page, so the site opens from disk (always a full build)",
    )


def port_number(text: str) -> int:
    """`--port`: a TCP port, 0 to 65535 (0 picks a free one); argparse reports anything else
    as a usage error (exit 2) before the server is started."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= MAX_PORT:
        raise argparse.ArgumentTypeError(f"{port} is not a port: a port is from 0 to {MAX_PORT}")
    return port


def run_build(args: argparse.Namespace) -> int:
    from ..build.change_check import look
    from ..site.config import load_config

    config = load_config(args.config, settings_from(args))
    try:
        keyring = load_keys(config.keys)
        # First ask whether anything changed: when nothing did, the answer is the
        # whole build, and the code that renders a site is never imported.
        seen = look(config, keyring, quick=not args.clean)
        report = seen.report or _build(args, config, keyring, seen)
    except Interrupted as exc:
        if exc.site is None:  # (stopped before the build began to change SITE)
            exc.published, exc.site = False, str(config.site)
        raise
    try:
        return _report_build(args, config, report, keyring)
    except Interrupted as exc:  # (the build is over: only its report was cut short)
        exc.published, exc.site, exc.finished = True, str(config.site), True
        raise


def _report_build(args: argparse.Namespace, config: SiteConfig, report: BuildReport, keyring: Keyring) -> int:
    print_rejections(report.rejections, keyring, config.site / "report.json")
    if not args.quiet:
        for note in report.notes:
            print(f"note: {note}", file=sys.stderr)
    opened = f"open {(config.site / 'index.html').as_posix()}, or " if config.relative else ""
    if config.content_store is not None:  # (`serve` watches a folder: any static server shows SITE)
        view = f"python3 -m http.server -d {shlex.quote(str(config.site))}"
    else:
        view = view_command(args)
    print(summary_line(report) + f" -> {config.site}; to view it: {opened}{view}")
    return EXIT_REJECTED if report.rejections else EXIT_OK


def view_command(args: argparse.Namespace) -> str:
    """The `serve` command that shows the site just built: this build's own words with
    `serve` for `build` (the same folders, keys and settings, less the options only
    `build` takes, such as `--scheduler`), and the program as it was
    started when that is inside the folder it runs in (`.venv/bin/pith-mirror`, which
    works before the environment is activated)."""
    shown = "pith-mirror"
    program = Path(sys.argv[0])
    if program.name == "pith-mirror":
        with contextlib.suppress(ValueError, OSError):
            shown = program.absolute().relative_to(Path.cwd()).as_posix()
    words = list(getattr(args, "argv", None) or ["build"])
    return shlex.join([shown, "serve", *_serve_words(words[1:], getattr(args, "build_only", {}))])


def _serve_words(words: list[str], build_only: dict[str, bool]) -> list[str]:
    """`words` less every option `serve` does not take (`build_only`: each such
    option's name, and whether it takes a value), however abbreviated."""
    kept: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
            continue
        flag, equals, _ = word.partition("=")
        named = [name for name in build_only if flag.startswith("--") and name.startswith(flag)]
        if len(named) == 1:  # (an abbreviation argparse took for it)
            skip = build_only[named[0]] and not equals
            continue
        kept.append(word)
    return kept


def _build(args: argparse.Namespace, config: SiteConfig, keyring: Keyring, seen: Look) -> BuildReport:
    from ..build.pipeline import build

    last = [0.0]

    def progress(label: str, done: int, total: int) -> None:
        now = time.monotonic()
        if not args.quiet and total >= 200 and (now - last[0] > 1 or done == total):
            last[0] = now
            print(f"  {label} {done}/{total}", file=sys.stderr)

    return build(config, keyring, progress, incremental=not args.clean, seen=seen)


def run_build_or_watch(args: argparse.Namespace) -> int:
    if args.watch:
        from .watch_commands import run_build_watch

        return run_build_watch(args)
    return run_build(args)


def run_serve(args: argparse.Namespace) -> int:
    from .watch_commands import run_serve as serve

    return serve(args)


def add_site_commands(commands: Any) -> None:
    build = commands.add_parser("build", help="verify content/ and write the static site into site/")
    add_site_options(build)
    build_only = [
        build.add_argument("--watch", action="store_true", help="then rebuild whenever an input changes"),
        build.add_argument(
            "--scheduler",
            metavar="ADDR",
            help="run the workers' tasks on a Dask cluster: its scheduler's address (tcp://host:8786),"
            " or 'local' for one of --jobs processes on this machine (needs pith-mirror[cluster])",
        ),
    ]
    # (what the `serve` command a build suggests leaves out: see `view_command`)
    names = {name: action.nargs != 0 for action in build_only for name in action.option_strings}
    build.set_defaults(handler=run_build_or_watch, build_only=names)

    serve = commands.add_parser("serve", help="build, preview the site locally and rebuild it on changes")
    add_site_options(serve)
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument(
        "--port", type=port_number, default=8000, help="port (default 8000; 0 picks a free one)"
    )
    serve.add_argument("--no-watch", dest="watch", action="store_false", help="do not rebuild on changes")
    serve.set_defaults(handler=run_serve)
