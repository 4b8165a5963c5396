"""The publishing subcommands (`keygen`, `compare`, `checksums`, `verify-site`, `upload`): options and output.

Presentation only, like `cli.py`: the work is done by `integrity.py`,
`compare.py` and `upload.py`; these handlers print and return the exit code (0 good, 1 the
sites differ or the site does not verify). A ConfigError or BuildError is left
to `cli.main`, which prints it and exits 2.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..build.change_check import inside_a_built_site, is_built_site
from ..build.journal import unfinished
from ..build.write import lock_path, one_build_at_a_time, reading_site
from ..publish import change_log
from ..publish.integrity import files_disagree
from ..site.config import INSIDE_SITE, inside
from ..site.layout import MANIFEST_PATH, SIGNATURE_PATH, SUMS_PATH
from ..trust.errors import BuildError, ConfigError, SiteBusy, shown_line
from ..trust.files import write_atomic

if TYPE_CHECKING:
    from ..publish.integrity import MirrorKey

EXIT_OK, EXIT_DIFFERENT = 0, 1


def add_publish_commands(commands: Any) -> None:
    keygen = commands.add_parser(
        "keygen", help="create the mirror's own Ed25519 key (for signing its manifest, not records)"
    )
    keygen.add_argument("file", type=Path, metavar="FILE", help="where to write the private key (mode 0600)")
    keygen.add_argument("--key-id", metavar="ID", help="the key's name (default pith-mirror-YYYY-MM)")
    keygen.set_defaults(handler=run_keygen)

    compare = commands.add_parser("compare", help="check that two mirrors publish the same records")
    compare.add_argument("site_a", metavar="SITE_A", help="a site folder or the http(s) URL of its base")
    compare.add_argument("site_b", metavar="SITE_B", help="a site folder or the http(s) URL of its base")
    compare.add_argument("--json", action="store_true", help="print the comparison as JSON on stdout")
    compare.add_argument(
        "--budget",
        type=float,
        default=3600.0,
        metavar="SECONDS",
        help="the longest the whole comparison may take (default 3600)",
    )
    compare.set_defaults(handler=run_compare)

    checksums = commands.add_parser(
        "checksums", help="write SITE/SHA256SUMS and, with a mirror key, sign the manifest"
    )
    checksums.add_argument("site", type=Path, metavar="SITE", help="a built site folder")
    checksums.add_argument(
        "--mirror-key", type=Path, metavar="FILE", help="private key from `pith-mirror keygen`"
    )
    checksums.set_defaults(handler=run_checksums)

    verify_site = commands.add_parser(
        "verify-site", help="check SITE/SHA256SUMS and the mirror's manifest signature"
    )
    verify_site.add_argument("site", type=Path, metavar="SITE", help="a built site folder")
    verify_site.add_argument(
        "--trust",
        type=Path,
        metavar="FILE",
        help="the mirror key to require: its key file, or its public entry (a JSON object or list)",
    )
    verify_site.set_defaults(handler=run_verify_site)

    upload = commands.add_parser(
        "upload",
        help="publish a built SITE to object storage (s3://, gs://, az://) or a folder: changed files only,"
        " in an order no reader sees half of",
    )
    upload.add_argument("site", type=Path, metavar="SITE", help="a built site folder")
    upload.add_argument(
        "target", metavar="URL", help="s3://BUCKET/PREFIX/, gs://..., az://..., file://... or a folder"
    )
    upload.add_argument(
        "--jobs", type=int, default=8, metavar="N", help="objects written at once (default 8)"
    )
    upload.add_argument(
        "--keep-removed",
        action="store_true",
        help="leave objects the site no longer has (default: delete them last)",
    )
    upload.add_argument(
        "--force", action="store_true", help="write every object, also those already there byte for byte"
    )
    upload.add_argument(
        "--full",
        action="store_true",
        help="compare every object with the site, not only the files changed since the last upload"
        " (for a storage changed by other means)",
    )
    upload.add_argument(
        "--allow-removals",
        action="store_true",
        help="let the upload unpublish records the stored site has (the site lacking all of them or"
        " over 10%% of them), or publish fewer events of one than it has (an older copy of the site);"
        " what the builds since SITE's change log began took down as allowed needs no second one",
    )
    upload.set_defaults(handler=run_upload)


# ---------------------------------------------------------------- keygen


def run_keygen(args: argparse.Namespace) -> int:
    from ..publish.integrity import generate_mirror_key

    # (an empty --key-id is refused by generate_mirror_key, not replaced by the default)
    key_id = time.strftime("pith-mirror-%Y-%m", time.gmtime()) if args.key_id is None else args.key_id
    site = inside_a_built_site(args.file)
    if site is not None:  # (it would be uploaded with the site, and listed in SHA256SUMS)
        where = f"{args.file} is inside the site {site}, which is published"
        raise ConfigError("keygen", f"{where}: write the private key outside it")
    entry = generate_mirror_key(args.file, key_id)
    print(json.dumps(entry, indent=2, sort_keys=True))
    print(
        f"wrote the private key to {args.file} (mode 0600): keep it secret, never commit it.\n"
        "Publish the public entry above so readers can check your signature with "
        "`pith-mirror verify-site SITE --trust PUBLIC.json`.",
        file=sys.stderr,
    )
    return EXIT_OK


# ---------------------------------------------------------------- compare


def run_compare(args: argparse.Namespace) -> int:
    from ..publish.compare import compare_sites

    if not args.budget > 0:
        raise ConfigError("budget", "must be more than 0 seconds")
    last = [time.monotonic()]

    def progress(what: str, done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] >= 2:  # (quiet for a quick comparison; a slow one says how far it is)
            last[0] = now
            print(f"  {what}: {done}/{total} record(s)", file=sys.stderr)

    result = compare_sites(args.site_a, args.site_b, args.budget, progress)
    if args.json:
        print(json.dumps(result.as_json(), indent=2, ensure_ascii=False))
        return EXIT_OK if result.identical else EXIT_DIFFERENT
    print(f"A: {result.a}")
    print(f"B: {result.b}")
    for label, problems in (("A", result.problems_a), ("B", result.problems_b)):
        for problem in problems:
            print(f"{label} {problem}")
    for number in result.missing_in_b:
        print(f"only in A: {number}")
    for number in result.missing_in_a:
        print(f"only in B: {number}")
    for number, fields in sorted(result.different.items()):
        print(f"differs:   {number}: {', '.join(fields)}")
    total = result.same + len(result.different) + len(result.missing_in_a) + len(result.missing_in_b)
    if result.identical:
        print(
            f"identical: both publish the same {result.same} record(s); each one's record,"
            " bundle and state files match its manifest"
        )
        return EXIT_OK
    lies = len(result.problems_a) + len(result.problems_b)
    print(
        f"DIFFERENT: {result.same} of {total} record(s) the same, {len(result.different)} differ, "
        f"{len(result.missing_in_b)} only in A, {len(result.missing_in_a)} only in B, "
        f"{lies} file(s) disagree with their manifest"
    )
    return EXIT_DIFFERENT


# ---------------------------------------------------------------- checksums


def _write_atomic(path: Path, data: bytes) -> None:
    """`write.write_atomic`, with a failure turned into a BuildError naming the file."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, data)
    except OSError as exc:
        raise BuildError(str(path), f"cannot write: {exc.strerror}") from None


def _log_ahead(site: Path, paths: list[str]) -> int:
    """`change_log.ahead`, a failure named as the build names it: nothing is written."""
    try:
        return change_log.ahead(site, paths)
    except OSError as exc:
        raise BuildError(str(change_log.log_path(site)), f"cannot write: {exc.strerror or exc}") from None


def run_checksums(args: argparse.Namespace) -> int:
    from ..publish.integrity import load_mirror_key

    site: Path = args.site
    if args.mirror_key is not None and inside(site, args.mirror_key):
        # (it would be listed in SHA256SUMS and uploaded with the site)
        raise ConfigError(str(args.mirror_key), f"the mirror key {INSIDE_SITE}")
    key = load_mirror_key(args.mirror_key) if args.mirror_key else None
    if site.is_dir() and not is_built_site(site):  # (a missing folder is named as such below)
        raise ConfigError(
            "site",
            f"{site} has no {MANIFEST_PATH} that pith-mirror wrote, so pith-mirror did not build it:"
            " SHA256SUMS is written only into a built site (build it first)",
        )
    if not site.is_dir():
        raise ConfigError("site", f"no such folder: {site}")
    with contextlib.ExitStack() as held:
        # A build that started while the sums were made would change files under them:
        # it is refused until they are written (and a running one refuses these).
        if not _hold_site(held, site):
            print(f"FAILED: {UNFINISHED.format(site=site)}", file=sys.stderr)
            print(
                f"{site}: refusing to write {SUMS_PATH}{' or sign' if key else ''}:"
                " another pith-mirror command is using it"
            )
            return EXIT_DIFFERENT
        return _write_checksums(site, key)


def _hold_site(held: contextlib.ExitStack, site: Path, *, reading: bool = False) -> bool:
    """Take SITE's build lock until `held` closes: exclusively, or shared when only
    `reading` it (`write.reading_site`); False when another command holds it so.

    The lock every build of SITE takes is the one beside its real path (a build
    refuses a SITE that is itself a link, and names "." by its real path), so
    that is the one taken, once: the same file reached by two spellings and
    locked twice would refuse itself (`flock` locks each opening)."""
    real = Path(os.path.realpath(site))
    try:
        held.enter_context(reading_site(real) if reading else one_build_at_a_time(real))
    except SiteBusy:
        return False
    except OSError as exc:  # (its lock file cannot be made or read: a build could not run either)
        why = f"cannot take the site's lock: {exc.strerror or exc}"
        raise BuildError(str(lock_path(real)), why) from None
    return True


def _write_checksums(site: Path, key: MirrorKey | None) -> int:
    """`checksums` once it holds SITE's lock."""
    from ..publish.integrity import SITE_FILE_LIMIT, sha256sums, sign_manifest, verify_manifest_signature
    from ..trust.files import read_regular

    manifest = site / MANIFEST_PATH
    disagreements = manifest_problems(site, holding_lock=True)
    if disagreements:  # (a half-updated or edited site: nothing is written or signed)
        for problem in disagreements:
            print(f"FAILED: {shown_line(problem)}", file=sys.stderr)
        print(
            f"{site}: refusing to write {SUMS_PATH}{' or sign' if key else ''}: its files disagree with"
            f" its manifest ({len(disagreements)} problem(s))"
        )
        return EXIT_DIFFERENT
    sums = sha256sums(site)
    seq = _log_ahead(site, [SUMS_PATH, SIGNATURE_PATH])  # (so that the next upload sends them)
    _write_atomic(site / SUMS_PATH, sums)
    print(f"wrote {site / SUMS_PATH} ({len(sums.splitlines())} files)")
    if key is not None:
        try:
            manifest_bytes = read_regular(manifest, SITE_FILE_LIMIT)
        except OSError as exc:
            raise BuildError(str(manifest), f"cannot read: {exc.strerror}") from None
        _write_atomic(site / SIGNATURE_PATH, sign_manifest(manifest_bytes, sums, key))
        entry = key.public_entry
        fingerprint = entry["fingerprint_sha256_hex"]
        print(f"signed {MANIFEST_PATH} and {SUMS_PATH} with {shown_line(key.key_id)} ({fingerprint})")
    elif (site / SIGNATURE_PATH).exists() and verify_manifest_signature(site, None):
        print(
            f"warning: {site / SIGNATURE_PATH} no longer matches this site; "
            "sign again with --mirror-key FILE or delete it",
            file=sys.stderr,
        )
    change_log.completed(site, seq)
    return EXIT_OK


# ---------------------------------------------------------------- verify-site


def load_trust(path: Path) -> list[dict[str, Any]]:
    """Public entries from a key file of `keygen`, a public entry, or a list of them."""
    from ..publish.integrity import KEY_FILE_LIMIT, load_mirror_key
    from ..trust.keys import keyring_from_json
    from ..trust.load import read_json_setting

    data = read_json_setting(path, "trust", KEY_FILE_LIMIT)
    if isinstance(data, dict) and "private_key_seed_b64" in data:
        return [load_mirror_key(path).public_entry]
    return [dict(k.entry) for k in keyring_from_json(data, str(path)).keys]


def run_verify_site(args: argparse.Namespace) -> int:
    from ..publish.integrity import check_manifest_signature, check_sha256sums

    site: Path = args.site
    if not site.is_dir():
        raise ConfigError("site", f"no such folder: {site}")
    trusted = load_trust(args.trust) if args.trust else None
    problems = manifest_problems(site) + check_sha256sums(site)
    signed = (site / SIGNATURE_PATH).exists()
    signature = check_manifest_signature(site, trusted) if signed or trusted is not None else None
    if signature is not None:
        problems += signature.problems
    for problem in problems:
        print(f"FAILED: {shown_line(problem)}", file=sys.stderr)
    if problems:
        print(f"{site}: does NOT verify ({len(problems)} problem(s))")
        return EXIT_DIFFERENT
    if signature is None or signature.key is None:
        print(f"{site}: every file matches SHA256SUMS (the manifest is not signed)")
    else:
        key = signature.key  # (as verified: the file is not read again, nor its claims believed)
        how = "a trusted key" if trusted is not None else "its own key (pass --trust to require yours)"
        covers = "" if signature.covers_sums else " (SHA256SUMS is not covered by the signature)"
        print(
            f"{site}: every file matches SHA256SUMS; manifest signed by {shown_line(key.key_id)} "
            f"({key.fingerprint_hex}), {how}{covers}"
        )
    return EXIT_OK


def manifest_problems(site: Path, *, holding_lock: bool = False) -> list[str]:
    """Why SHA256SUMS or a mirror signature must not be written for `site`, one sentence
    each: a build of it is running or did not finish (`journal.unfinished`), or its
    files disagree with its own manifest (`files_disagree`). Both state "this mirror
    publishes exactly this manifest and these files", which must not be said of a
    half-updated or edited site."""
    problems = [UNFINISHED.format(site=site)] if unfinished(site, holding_lock=holding_lock) else []
    return problems + files_disagree(site)


UNFINISHED = (
    "{site}: a build of this site is running or did not finish, or `checksums` or `upload`"
    " is using it (some files may be new, others old): wait for it to end, or build again"
    " if none is running"
)


# ---------------------------------------------------------------- upload


def run_upload(args: argparse.Namespace) -> int:
    """Upload a built site as `publish/upload.py` orders it. Refused (exit 1, nothing
    written) for a site whose build did not finish or whose files to upload disagree
    with its manifest, as `checksums` refuses: a mirror must not publish half a build."""
    site: Path = args.site
    if args.jobs < 1:
        raise ConfigError("--jobs", "must be at least 1")
    if not site.is_dir():
        raise ConfigError("site", f"no such folder: {site}")
    if not is_built_site(site):
        raise ConfigError("site", f"{site} has no manifest that pith-mirror wrote: build it first")
    with contextlib.ExitStack() as held:
        # (a build that changed files while they were read would leave the store holding
        # some of each build: builds wait, or are refused, until the upload is done)
        if not _hold_site(held, site, reading=True) or unfinished(site, holding_lock=True):
            print(f"FAILED: {UNFINISHED.format(site=site)}", file=sys.stderr)
            print(f"{site}: refusing to upload half a build")
            return EXIT_DIFFERENT
        return _upload(args, site)


def _refuse_overlap(storage: object, site: Path) -> None:
    """A folder target that holds SITE, or lies inside it: the upload would delete SITE's
    own files (and whatever is beside them) as objects the site does not have."""
    from ..publish.storage_local import LocalStorage

    if not isinstance(storage, LocalStorage):
        return
    target, source = storage.root.resolve(), site.resolve()
    if target == source or source in target.parents or target in source.parents:
        raise ConfigError(
            "upload target",
            f"{storage.root}: the folder {'is' if target == source else 'overlaps'} the site folder "
            f"{site}; upload into a folder apart from it",
        )


def _upload(args: argparse.Namespace, site: Path) -> int:
    """`upload` once it holds SITE's lock."""
    from ..publish.storage import open_storage
    from ..publish.upload import UploadRefused, upload_site

    storage = open_storage(args.target, setting="upload target")
    _refuse_overlap(storage, site)
    started = time.monotonic()
    try:
        report = upload_site(
            site,
            storage,
            workers=args.jobs,
            delete=not args.keep_removed,
            force=args.force,
            full=args.full,
            allow_removals=args.allow_removals,
            check=lambda paths: files_disagree(site, paths),
        )
    except UploadRefused as refused:
        for problem in refused.problems:
            print(f"FAILED: {shown_line(problem)}", file=sys.stderr)
        print(
            f"{site}: refusing to upload: its files disagree with its manifest"
            f" ({len(refused.problems)} problem(s))"
        )
        return EXIT_DIFFERENT
    how = "" if report.compared else " (the files changed since the last upload)"
    kept = f", {len(report.kept):,} the site no longer has kept" if report.kept else ""
    if report.foreign:
        kept += f", {report.foreign:,} not the site's left as they are"
    print(
        f"uploaded {len(report.written):,} object(s){how}, {report.unchanged:,} already there,"
        f" {len(report.deleted):,} deleted{kept} in {time.monotonic() - started:.2f}s -> {args.target}"
    )
    return EXIT_OK
