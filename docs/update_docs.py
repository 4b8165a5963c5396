"""Regenerate the documentation's generated parts: the rejection codes
(docs/trust-model.md) and the CLI reference (docs/cli.md).

Run `python3 docs/update_docs.py`; `tests/test_docs.py` fails when either is
out of date, so the documented codes and options are the real ones.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from generator.commands.cli import build_parser  # noqa: E402
from generator.trust.errors import CODE_HELP, Code  # noqa: E402


def codes_table() -> str:
    rows = ["| code | meaning |", "|---|---|"]
    rows += [f"| `{code.value}` | {CODE_HELP[code]} |" for code in Code]
    return "\n".join(rows)


def cli_reference() -> str:
    os.environ["COLUMNS"] = "100"  # argparse wraps help to the terminal: fix it
    parser = build_parser()
    parts = []
    actions = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    commands = actions[0].choices if actions else {}
    for name, sub in [("pith-mirror", parser), *commands.items()]:
        text = io.StringIO()
        with contextlib.redirect_stdout(text):
            sub.print_help()
        title = name if name == "pith-mirror" else f"pith-mirror {name}"
        parts += [f"## `{title}`", "", "```", text.getvalue().rstrip(), "```", ""]
    return "\n".join(parts).rstrip()


GENERATED = {"trust-model.md": "codes", "cli.md": "cli"}
"""Each page of docs/ with a generated part, and the marker around it."""


def render(text: str) -> str:
    """`text` with every generated part it has made anew."""
    for marker, make in (("codes", codes_table), ("cli", cli_reference)):
        pattern = re.compile(rf"(<!-- {marker}:begin -->\n).*?(<!-- {marker}:end -->)", re.S)
        if pattern.search(text):
            body = make()
            text = pattern.sub(lambda m, body=body: m.group(1) + body + "\n" + m.group(2), text)
    return text


def main() -> int:
    for name in GENERATED:
        path = ROOT / "docs" / name
        path.write_text(render(path.read_text("utf-8")), "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
