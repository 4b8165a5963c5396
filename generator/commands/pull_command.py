"""The `pull` subcommand: its options, its progress and summary, and its exit code.

Presentation only, like `cli.py`: `pull.py` fetches, verifies and writes; this
prints and returns 0 when every selected number is present and verified, 1
when any was refused or could not be fetched. A usage or settings error is a
ConfigError, which `cli.main` prints with exit 2, before anything is fetched.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..trust.errors import ConfigError, Rejection, printable

if TYPE_CHECKING:
    from ..publish.pull import Outcome
    from ..publish.pull_destination import Destination

EXIT_OK, EXIT_REFUSED = 0, 1
DEFAULT_JOBS = 8
DEFAULT_RATE = 20.0
DEFAULT_TIMEOUT = 30.0
DEFAULT_RETRIES = 4


def add_pull_command(commands: Any) -> None:
    pull = commands.add_parser(
        "pull", help="fetch signed documents into content/ from the resolver or a mirror, verified"
    )
    pull.add_argument(
        "selection",
        nargs="*",
        metavar="SELECTION",
        help="Pith numbers (pith:YYYY:..., the 26-character body, or an 8/12/16-character short form)",
    )
    pull.add_argument(
        "--from", dest="source", metavar="URL", help="the resolver or a mirror (default: primary_url)"
    )
    pull.add_argument("--arxiv", action="append", default=[], metavar="ID", help="an arXiv id (repeatable)")
    pull.add_argument("--doi", action="append", default=[], metavar="DOI", help="a DOI (repeatable)")
    pull.add_argument(
        "--list", action="append", default=[], type=Path, metavar="FILE", help="one item a line, # comments"
    )
    pull.add_argument(
        "--all", action="store_true", help="every number the source's .well-known/pith/mirror.json lists"
    )
    pull.add_argument(
        "--mirrors", action="store_true", help="spread the fetches over the mirrors the source lists"
    )
    pull.add_argument(
        "--content",
        metavar="DIR|URL",
        help="where documents go: a folder (default content/), or a store: s3://BUCKET/PREFIX/",
    )
    pull.add_argument("--keys", type=Path, metavar="FILE", help="pinned keys (JSON key object or list)")
    pull.add_argument(
        "--config", type=Path, metavar="FILE", help="settings file (pith-mirror.toml or pyproject.toml)"
    )
    pull.add_argument(
        "--jobs",
        type=int,
        default=DEFAULT_JOBS,
        metavar="N",
        help=f"fetches at once (default {DEFAULT_JOBS})",
    )
    pull.add_argument(
        "--rate",
        type=float,
        default=DEFAULT_RATE,
        metavar="N",
        help=f"requests per second to one host (default {DEFAULT_RATE:g}; 0 for no limit)",
    )
    pull.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"time for one whole answer (default {DEFAULT_TIMEOUT:g})",
    )
    pull.add_argument(
        "--retries",
        type=int,
        default=DEFAULT_RETRIES,
        metavar="N",
        help=f"tries again after a 429, 5xx or timeout (default {DEFAULT_RETRIES})",
    )
    pull.add_argument("--max-bytes", type=int, metavar="N", help="largest document accepted, in bytes")
    pull.add_argument("--json", action="store_true", help="print per-number results as JSON on stdout")
    pull.add_argument("--quiet", action="store_true", help="print only the summary line and problems")
    pull.set_defaults(handler=run_pull)


def _targets(args: argparse.Namespace) -> list[Any]:
    from ..publish.pull_selection import parse_alias, parse_item, read_list

    targets = []
    try:
        targets += [parse_item(item) for item in args.selection]
        targets += [parse_alias(item, "arxiv") for item in args.arxiv]
        targets += [parse_alias(item, "doi") for item in args.doi]
        for path in args.list:
            targets += read_list(path)
    except OSError as exc:
        raise ConfigError("list", f"cannot read {exc.filename}: {exc.strerror}") from None
    except ValueError as exc:
        raise ConfigError("selection", str(exc)) from None
    return list(dict.fromkeys(targets))  # (each once, in the order given)


def _check(args: argparse.Namespace) -> None:
    if args.jobs < 1 or args.jobs > 256:
        raise ConfigError("jobs", "must be from 1 to 256")
    if args.rate < 0 or args.rate != args.rate:
        raise ConfigError("rate", "must be 0 (no limit) or more")
    if not 0 < args.timeout <= 3600:
        raise ConfigError("timeout", "must be more than 0 and at most 3600 seconds")
    if not 0 <= args.retries <= 20:
        raise ConfigError("retries", "must be from 0 to 20")


def run_pull(args: argparse.Namespace) -> int:
    from ..publish.client import Client, run_sync
    from ..publish.client import Limits as NetLimits
    from ..publish.pull import Plan, Puller, base_url, manifest_targets, mirror_sources
    from ..publish.pull_destination import ContentFolder, ContentStore
    from ..publish.pull_selection import Target
    from ..site.config import check_max_bytes, load_config
    from ..trust.load import Limits
    from .common import load_keys

    _check(args)
    config = load_config(args.config, {"content": args.content, "keys": args.keys})
    if args.max_bytes is not None:
        check_max_bytes(args.max_bytes)
    max_bytes = args.max_bytes if args.max_bytes is not None else config.max_bytes
    content: Destination
    if config.content_store is not None:
        from ..publish.storage import open_storage
        from ..publish.storage_object import ObjectStorage

        storage = open_storage(config.content_store, setting="content")
        assert isinstance(storage, ObjectStorage)  # (a content store is s3://, gs:// or az://)
        content = ContentStore(storage, max_bytes)
    else:
        content = ContentFolder(config.content, max_bytes)
    keyring = load_keys(config.keys)
    source = base_url(args.source or config.primary_url)
    targets = _targets(args)
    if not targets and not args.all:
        raise ConfigError("selection", "nothing to pull: give Pith numbers, --arxiv, --doi, --list or --all")
    net = NetLimits(
        limit=max_bytes, seconds=args.timeout, retries=args.retries, rate=args.rate, jobs=args.jobs
    )
    progress = Progress(quiet=args.quiet or args.json)
    started = time.monotonic()

    async def pull() -> tuple[list[Outcome], int]:
        async with Client(net) as client:
            sources = await mirror_sources(client, source) if args.mirrors else (source,)
            listed: dict[str, dict[str, Any]] = {}
            chosen = list(targets)
            if args.all:
                entries = await manifest_targets(client, source)
                listed = {number.rsplit(":", 1)[1]: entry for number, entry in entries.items()}
                chosen += [Target("number", body) for body in sorted(listed)]
                chosen = list(dict.fromkeys(chosen))
            progress.total = len(chosen)
            plan = Plan(sources, content, keyring, Limits(max_bytes=max_bytes))
            outcomes = await Puller(plan, client, progress.done).run(chosen, listed, args.jobs)
            return outcomes, client.requests

    outcomes, requests = run_sync(pull())
    progress.finish()
    seconds = time.monotonic() - started
    counts = {
        s: sum(1 for o in outcomes if o.status == s) for s in ("fetched", "unchanged", "refused", "failed")
    }
    if args.json:
        print(json.dumps(as_json(outcomes, counts, requests, content), indent=2, ensure_ascii=False))
    for outcome in outcomes:
        for where, problem in outcome.problems:
            print(Rejection(where, problem.pointer, problem.code, problem.message).line(), file=sys.stderr)
        if not args.quiet:
            for note in outcome.notes:
                print(f"note: {printable(note)}", file=sys.stderr)
    line = (
        f"pulled {len(outcomes)} number(s) from {source}: {counts['fetched']} fetched, "
        f"{counts['unchanged']} unchanged, {counts['refused']} refused, {counts['failed']} failed "
        f"({requests} request(s) in {seconds:.2f}s) -> {content.where()}"
    )
    print(line, file=sys.stderr if args.json else sys.stdout)
    return EXIT_REFUSED if counts["refused"] or counts["failed"] else EXIT_OK


def as_json(
    outcomes: list[Outcome], counts: dict[str, int], requests: int, content: Destination
) -> dict[str, Any]:
    """Per-number results in the shape of `verify --json`, with each number's status."""
    results = []
    for outcome in outcomes:
        main = next((f for f in reversed(outcome.files) if f.endswith(".bundle.json")), None)
        main = main or (outcome.files[0] if outcome.files else None)
        results.append(
            {
                "path": content.where(main) if main else None,
                "kind": ("bundle" if main.endswith(".bundle.json") else "record") if main else None,
                "pith_number": outcome.pith_number,
                "ok": outcome.ok,
                "status": outcome.status,
                "selection": outcome.target,
                "files": [content.where(f) for f in outcome.files],
                "errors": [
                    {**Rejection(where, p.pointer, p.code, p.message).as_json(), "source": where}
                    for where, p in outcome.problems
                ],
            }
        )
    ok = counts["fetched"] + counts["unchanged"]
    summary = {"checked": len(outcomes), "ok": ok, "rejected": len(outcomes) - ok, **counts}
    return {"results": results, "summary": {**summary, "requests": requests}}


class Progress:
    """A bar on a terminal (count, rate, time left); a plain line a number otherwise."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.tty = sys.stderr.isatty()
        self.total = 0
        self.count = 0
        self.started = time.monotonic()
        self.shown = 0.0

    def done(self, outcome: Outcome) -> None:
        self.count += 1
        if self.quiet and not self.tty:
            return
        if not self.tty:
            number = outcome.pith_number or outcome.target
            print(f"{outcome.status:<9} {printable(number)}", file=sys.stderr)
            return
        now = time.monotonic()
        if now - self.shown < 0.1 and self.count != self.total:
            return
        self.shown = now
        rate = self.count / max(now - self.started, 1e-9)
        left = (self.total - self.count) / rate if rate else 0
        width = 30
        filled = int(width * self.count / self.total) if self.total else width
        bar = "#" * filled + "-" * (width - filled)
        sys.stderr.write(
            f"\r[{bar}] {self.count}/{self.total} {rate:.1f}/s ETA {int(left) // 60}:{int(left) % 60:02d}"
        )
        sys.stderr.flush()

    def finish(self) -> None:
        if self.tty and self.count:
            sys.stderr.write("\n")
