"""What every command shares: the exit codes, the pinned keys, the site options
as settings, and the lines a build is reported in."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..trust.errors import Interrupted, Rejection

if TYPE_CHECKING:
    from ..trust.keys import Keyring

EXIT_OK, EXIT_REJECTED, EXIT_USAGE = 0, 1, 2


def load_keys(path: Path | None) -> Any:
    from ..trust.keys import default_keyring, load_keyring

    return load_keyring(path) if path else default_keyring()


def settings_from(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "content": args.content,
        "site": args.site,
        "keys": args.keys,
        "base_url": args.base_url,
        "jobs": args.jobs,
        "site_title": args.site_title,
        "primary_url": args.primary_url,
        "cname": args.cname,
        "checksums": True if args.checksums or args.mirror_key else None,
        "relative": args.relative,
        "mirror_key": args.mirror_key,
        "allow_removals": args.allow_removals,
        "deployed": args.deployed,
        "scheduler": getattr(args, "scheduler", None),  # (`build` only)
    }


def print_rejections(rejections: tuple[Rejection, ...], keyring: Keyring, report_path: Path) -> None:
    """Refusals grouped by cause (`causes.py`): a few files each, all of them in the report."""
    from ..trust.causes import by_cause, pinned_names, terminal_lines

    for line in terminal_lines(by_cause(rejections, pinned_names(keyring)), report_path.as_posix()):
        print(line, file=sys.stderr)


def summary_line(report: Any) -> str:
    """One line per build: what was published and refused, what was rendered, how long."""
    return (
        f"published {report.published}, refused {report.refused_files} file(s), "
        f"{report.files_written} files written in {report.seconds:.2f}s "
        f"({report.mode}: {report.rendered} record(s) rendered, {len(report.changed)} input(s) changed)"
    )


def what_was_kept(exc: BaseException) -> str:
    """'; SITE is ...': what an interrupted build left, for the one line that says it stopped."""
    if not isinstance(exc, Interrupted) or exc.published is None or exc.site is None:
        return ""
    if exc.finished:
        return f"; {exc.site} holds this build's publication, whole"
    if exc.published:
        return f"; {exc.site} holds this build's publication, whole (its cache was not saved)"
    return f"; {exc.site} is as the last completed build left it"
