"""`pith-mirror keygen` through the real CLI: a key id that cannot name a key is a
usage error (exit 2), and no key file is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from generator.commands.cli import main


@pytest.mark.parametrize("key_id", ["", " ", "my key"])
def test_keygen_refuses_an_empty_or_blank_key_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], key_id: str
) -> None:
    key = tmp_path / "mirror-key.json"
    code = main(["keygen", f"--key-id={key_id}", str(key)])
    out, err = capsys.readouterr()
    assert code == 2
    assert err == "pith-mirror: configuration: key_id: must be a non-empty name without spaces\n"
    assert out == ""
    assert not key.exists()


def test_keygen_without_a_key_id_names_the_key_by_month(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = tmp_path / "mirror-key.json"
    assert main(["keygen", str(key)]) == 0
    entry = json.loads(capsys.readouterr().out)
    assert entry["key_id"].startswith("pith-mirror-20")
    assert json.loads(key.read_text())["key_id"] == entry["key_id"]


@pytest.mark.parametrize("key_id", ["key\udcff", "key\x1b[2J"])
def test_keygen_refuses_a_key_id_it_could_not_write_and_leaves_no_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], key_id: str
) -> None:
    """A byte that is not UTF-8 (as the shell passes `$'\\xff'`) could not be written
    into the key file: it was created first and left empty, so a retry was refused."""
    key = tmp_path / "mirror-key.json"
    code = main(["keygen", f"--key-id={key_id}", str(key)])
    _, err = capsys.readouterr()
    assert code == 2 and "key_id" in err and "Traceback" not in err, err
    assert not key.exists()
    assert main(["keygen", "--key-id=mirror-1", str(key)]) == 0
