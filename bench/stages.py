"""Where a cold build's time goes, stage by stage, per record.

Builds N bench bundles (`corpus.py`) once, in this process, with one job (the
workers' code then runs here, where a profiler sees it), under cProfile, and
prints each stage's time per record: the profiler's own cost inflates Python
code more than C, so read the shares, not the absolute figures, and compare
runs of the same N. Output goes to tmpfs (`/dev/shm`) when there is one.

    python bench/stages.py --records 2000
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import corpus
from generator.commands.cli import main as cli_main

STAGES: tuple[tuple[str, str, str], ...] = (
    # (stage, file suffix, function): cumulative time of that function
    ("load and decode (bytes -> JSON)", "trust/load.py", "load_document"),
    ("parse, hash and verify signatures", "trust/verify.py", "verify_document"),
    ("  of which: parse (JSON -> typed document)", "trust/parse.py", "parse"),
    ("  of which: the merge, recomputed", "trust/merge.py", "merge"),
    ("  of which: Ed25519 checks", "trust/keys.py", "verify_signature"),
    ("render a record's files", "site/render.py", "render_publication"),
    ("  of which: templates", "site/templating.py", "render_template"),
    ("write a record's files", "build/write.py", "write"),
    ("site-wide files (listings, search, manifest)", "build/sitewide_write.py", "write"),
    ("build cache (save)", "build/state.py", "save_after_build"),
)


def cumulative(stats: pstats.Stats, suffix: str, name: str) -> float:
    """The cumulative seconds of every function `name` defined in a file ending in `suffix`."""
    total = 0.0
    for (filename, _line, function), row in stats.stats.items():  # type: ignore[attr-defined]
        if function == name and filename.endswith(suffix):
            total += row[3]
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/stages.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=2000, metavar="N")
    args = parser.parse_args(argv)
    shm = Path("/dev/shm")
    root = Path(tempfile.mkdtemp(prefix="pith-stages-", dir=shm if shm.is_dir() else None))
    try:
        content = root / "content"
        content.mkdir()
        for index in range(args.records):
            body, data = corpus.make_bundle(index)
            (content / f"{body}.bundle.json").write_bytes(data)
        corpus.write_keys(root / "keys.json")
        build = [
            "build", str(content), str(root / "site"), "--keys", str(root / "keys.json"),
            "--jobs", "1", "--quiet",
        ]  # fmt: skip
        profile = cProfile.Profile()
        profile.enable()
        code = cli_main(build)
        profile.disable()
        if code != 0:
            print(f"the build failed (exit {code})", file=sys.stderr)
            return 1
        stats = pstats.Stats(profile)
        total = stats.total_tt  # type: ignore[attr-defined]
        n = args.records
        print(f"\ncold build of {n:,} records, one job, profiled: {total:.2f} s in all\n")
        print(f"{'stage':<48} {'µs/record':>10} {'share':>7}")
        for label, suffix, name in STAGES:
            seconds = cumulative(stats, suffix, name)
            print(f"{label:<48} {seconds / n * 1e6:>10,.0f} {seconds / total:>7.1%}")
        print(f"{'the whole build':<48} {total / n * 1e6:>10,.0f} {1:>7.1%}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
