"""`checksums` and `verify-site` with files no one should have written: a clear error, never a traceback.

Named pipes get a rescuer: if the command opens one and blocks (the bug),
a thread opens its other end after a few seconds, so the test fails instead
of hanging the suite.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from generator.commands.cli import main
from generator.publish.integrity import generate_mirror_key
from generator.site.layout import SIGNATURE_PATH, SUMS_PATH
from generator.trust.load import NOT_UTF8_NAME

DEEP = b"[" * 100_000


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    """The real CLI in this process: exit code, stdout and stderr."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


@contextlib.contextmanager
def fifo(path: Path) -> Iterator[Path]:
    """A named pipe at `path`; a reader still blocked on it after 3 s is let go (with no data)."""
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    done = threading.Event()

    def rescue() -> None:
        while not done.wait(3):
            with contextlib.suppress(OSError):  # (ENXIO: nobody is reading)
                os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))

    thread = threading.Thread(target=rescue, daemon=True)
    thread.start()
    try:
        yield path
    finally:
        done.set()
        thread.join()


@pytest.fixture
def site(built_site: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(built_site, tmp_path / "site", symlinks=True))


@pytest.fixture
def signed(site: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    key = tmp_path / "mirror-key.json"
    generate_mirror_key(key, "lab-mirror")
    assert run(capsys, "checksums", site, "--mirror-key", key)[0] == 0
    return site


def test_a_trust_or_key_file_nested_too_deep(
    site: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deep = tmp_path / "deep.json"
    deep.write_bytes(DEEP)
    code, _, err = run(capsys, "verify-site", site, "--trust", deep)
    assert code == 2 and f"trust: {deep} is not valid JSON: it nests too deeply" in err
    code, _, err = run(capsys, "checksums", site, "--mirror-key", deep)
    assert code == 2 and f"mirror_key: {deep} is not valid JSON: it nests too deeply" in err


def test_a_signature_file_nested_too_deep(signed: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (signed / SIGNATURE_PATH).write_bytes(DEEP)
    code, _, err = run(capsys, "verify-site", signed)
    assert code == 1 and f"FAILED: {SIGNATURE_PATH} is not valid JSON: it nests too deeply" in err


def test_a_signature_key_without_its_fingerprint(signed: Path, capsys: pytest.CaptureFixture[str]) -> None:
    document = json.loads((signed / SIGNATURE_PATH).read_bytes())
    del document["key"]["fingerprint_sha256_hex"]
    (signed / SIGNATURE_PATH).write_text(json.dumps(document))
    code, _, err = run(capsys, "verify-site", signed)
    assert code == 1
    assert f"{SIGNATURE_PATH}: /key/fingerprint_sha256_hex: fingerprint_sha256_hex is missing" in err


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"manifest_sha256": None}, "/manifest_sha256: manifest_sha256 is missing"),
        ({"manifest_sha256": 5}, "/manifest_sha256: manifest_sha256 is not a sha256 in lowercase hex"),
        ({"sha256sums_sha256": None}, "/sha256sums_sha256: sha256sums_sha256 is missing"),
        ({"sha256sums_sha256": ["x"]}, "/sha256sums_sha256: sha256sums_sha256 is not a sha256"),
        ({"signature_b64": 5}, "signature_b64 is not 64 bytes of standard base64"),
    ],
)
def test_a_signature_field_missing_or_of_another_type(
    signed: Path, capsys: pytest.CaptureFixture[str], change: dict[str, object], said: str
) -> None:
    document = json.loads((signed / SIGNATURE_PATH).read_bytes())
    for name, value in change.items():  # (None: the field is taken out)
        document.pop(name) if value is None else document.update({name: value})
    (signed / SIGNATURE_PATH).write_text(json.dumps(document))
    code, _, err = run(capsys, "verify-site", signed)
    assert code == 1 and said in err


def test_a_file_name_that_is_not_utf8_is_refused(site: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (site / os.fsdecode(b"bad\xff")).touch()
    code, _, err = run(capsys, "checksums", site)
    assert code == 2 and f"{site}/bad\\xff: {NOT_UTF8_NAME}" in err
    assert not (site / SUMS_PATH).exists()


def test_named_pipes_given_as_key_files(
    site: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with fifo(tmp_path / "pipe") as pipe:
        code, _, err = run(capsys, "verify-site", site, "--trust", pipe)
        assert code == 2 and f"cannot read {pipe}: it is a named pipe, not a regular file" in err
        code, _, err = run(capsys, "checksums", site, "--mirror-key", pipe)
        assert code == 2 and f"cannot read {pipe}: it is a named pipe, not a regular file" in err


@pytest.mark.parametrize("name", [SUMS_PATH, SIGNATURE_PATH])
def test_a_named_pipe_in_place_of_the_integrity_files(
    signed: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    with fifo(signed / name):
        code, _, err = run(capsys, "verify-site", signed)
    assert code == 1 and f"FAILED: cannot read {name}: it is a named pipe, not a regular file" in err


def test_a_named_pipe_inside_the_site_is_not_checksummed(
    site: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with fifo(site / "pipe"):
        code, _, err = run(capsys, "checksums", site)
    assert code == 2 and f"{site}/pipe: is a named pipe; a published site holds only regular files" in err
    assert not (site / SUMS_PATH).exists()
