"""`pull` against a real HTTP server on loopback: a whole mirror copied, then rebuilt the same;
every number form; verify before write; never roll back; a site that lies or misbehaves."""

from __future__ import annotations

import json
import os
import subprocess
import time
import zlib
from http.server import SimpleHTTPRequestHandler
from pathlib import Path

import factories as f
import manifestkit

from .pullkit import (
    GROWN_BODY,
    REAL_BUNDLE_BODY,
    REAL_RECORD_BODY,
    RECORD,
    RECORD_BODY,
    Server,
    all_whole_and_verified,
    answer,
    build,
    documents,
    newer_bundle,
    older_bundle,
    pull,
    pull_process,
    run,
    tree,
)

BUNDLE_PATH = f"/pith/{GROWN_BODY}/bundle.json"


def test_pull_all_copies_a_mirror_that_then_builds_to_the_same_site(
    built: tuple[Path, Path], server: Server, content: Path, keys: Path, tmp_path: Path
) -> None:
    result = pull(server.url, content, keys, "--all")
    assert result.code == 0, result.err
    assert "3 fetched" not in result.out and "4 fetched, 0 unchanged, 0 refused, 0 failed" in result.out
    original_content, original_site = built
    assert documents(content) == documents(original_content)  # (the derived record is not stored)
    rebuilt = build(content, tmp_path / "rebuilt", keys)
    assert tree(rebuilt) == tree(original_site)


def test_a_pull_with_nothing_changed_fetches_no_document_and_reads_only_the_manifest(
    server: Server, content: Path, keys: Path
) -> None:
    """The manifest's index, then each shard it names (checked against its hash)."""
    assert pull(server.url, content, keys, "--all").code == 0
    server.log.clear()
    again = pull(server.url, content, keys, "--all", "--json")
    assert again.code == 0, again.err
    shards = sorted(p for p in server.log if p.startswith("/.well-known/pith/mirror/"))
    assert server.log[0] == "/.well-known/pith/mirror.json" and sorted(server.log[1:]) == shards
    assert len(shards) == 4  # (four numbers, each the first of its body's first character)
    assert again.json()["summary"]["unchanged"] == 4 and again.json()["summary"]["requests"] == 5


def test_every_written_form_of_a_number_and_every_look_up(server: Server, content: Path, keys: Path) -> None:
    listing = content.parent / "list.txt"
    listing.write_text(f"# my lab's papers\n{REAL_BUNDLE_BODY[:12]}   # a short form\n\narxiv:2111.04007\n")
    result = pull(
        server.url,
        content,
        keys,
        f"pith:2021:{RECORD_BODY}",
        GROWN_BODY.lower(),
        "--doi",
        "https://doi.org/10.48550/arXiv.2111.04007",
        "--list",
        listing,
        "--json",
    )
    assert result.code == 0, result.err
    numbers = [r["pith_number"] for r in result.json()["results"]]
    assert numbers[:2] == [f.pith_number(RECORD), f"pith:2021:{GROWN_BODY}"]
    assert numbers[2] == numbers[4] == f"pith:2021:{REAL_RECORD_BODY}"
    assert numbers[3] == f"pith:2020:{REAL_BUNDLE_BODY}"
    assert set(documents(content)) == {
        f"{RECORD_BODY}.record.json",
        f"{GROWN_BODY}.bundle.json",
        f"{REAL_RECORD_BODY}.record.json",
        f"{REAL_BUNDLE_BODY}.bundle.json",
    }
    all_whole_and_verified(content)


def test_a_number_the_source_does_not_have_fails(server: Server, content: Path, keys: Path) -> None:
    result = pull(server.url, content, keys, "A" * 26, "--json")
    assert result.code == 1
    assert result.json()["results"][0]["errors"][0]["code"] == "fetch.not_found"
    assert "0 fetched, 0 unchanged, 0 refused, 1 failed" in result.err


def test_usage_errors_exit_2(server: Server, content: Path, keys: Path) -> None:
    assert pull(server.url, content, keys).code == 2  # nothing selected
    assert pull(server.url, content, keys, "not-a-number").code == 2
    assert pull("file:///etc", content, keys, "--all").code == 2
    assert not content.exists()


# ---------------------------------------------------------------- verify before write


def refused(result_json: dict[str, object], code: str) -> None:
    errors = [e for r in result_json["results"] for e in r["errors"]]  # type: ignore[attr-defined]
    assert code in {e["code"] for e in errors}, errors


def test_a_byte_changed_in_a_bundle_is_refused_and_nothing_written(
    server: Server, content: Path, keys: Path
) -> None:
    for path in (server.root / BUNDLE_PATH[1:], server.root / f".well-known{BUNDLE_PATH}"):
        path.write_bytes(path.read_bytes().replace(b"A Bundle That Grows", b"A Bundle That Grew!"))
    result = pull(server.url, content, keys, GROWN_BODY, "--json")
    assert result.code == 1
    refused(result.json(), "title.mismatch")
    assert result.json()["results"][0]["status"] == "refused"
    assert documents(content) == {}


def test_a_forged_bundle_is_refused_with_the_codes_and_pointers_of_verify(
    server: Server, content: Path, keys: Path, tmp_path: Path
) -> None:
    forged = f.to_bytes(f.sign_bundle(f.ATTACKER, older_bundle()))
    server.routes[BUNDLE_PATH] = answer(200, forged)
    result = pull(server.url, content, keys, GROWN_BODY, "--json")
    assert result.code == 1
    (tmp_path / "forged.json").write_bytes(forged)
    checked = run("verify", tmp_path / "forged.json", "--keys", keys, "--json").json()
    expected = [(e["code"], e["pointer"]) for e in checked["results"][0]["errors"]]
    errors = [(e["code"], e["pointer"]) for e in result.json()["results"][0]["errors"]]
    # (then the source's derived record, which stands for no bundle now)
    assert expected and errors == [*expected, ("pull.wrong_document", "")]
    assert documents(content) == {}


def test_an_older_bundle_never_replaces_the_local_one(server: Server, content: Path, keys: Path) -> None:
    content.mkdir()
    local = f.write(content / f"{GROWN_BODY}.bundle.json", newer_bundle()).read_bytes()
    server.routes[BUNDLE_PATH] = answer(200, f.to_bytes(older_bundle()))
    result = pull(server.url, content, keys, GROWN_BODY, "--json")
    assert result.code == 1
    refused(result.json(), "bundle.rollback")
    assert (content / f"{GROWN_BODY}.bundle.json").read_bytes() == local


def test_a_newer_bundle_replaces_the_older_local_one(server: Server, content: Path, keys: Path) -> None:
    content.mkdir()
    f.write(content / f"{GROWN_BODY}.bundle.json", older_bundle())
    result = pull(server.url, content, keys, GROWN_BODY)
    assert result.code == 0, result.err
    assert (content / f"{GROWN_BODY}.bundle.json").read_bytes() == (
        server.root / BUNDLE_PATH[1:]
    ).read_bytes()


def test_a_record_with_another_signed_receipt_does_not_replace_the_local_one(
    server: Server, content: Path, keys: Path
) -> None:
    content.mkdir()
    other = f.record_document(
        record=RECORD, title="A Record Only", receipt_overrides={"signed_at": "2027-01-01"}
    )
    local = f.write(content / f"{RECORD_BODY}.record.json", other).read_bytes()
    result = pull(server.url, content, keys, RECORD_BODY, "--json")
    assert result.code == 1
    refused(result.json(), "record.signature_changed")
    assert (content / f"{RECORD_BODY}.record.json").read_bytes() == local


def test_a_record_swapped_between_numbers_is_refused(server: Server, content: Path, keys: Path) -> None:
    other = (server.root / f"pith/{REAL_RECORD_BODY}.json").read_bytes()
    server.routes[f"/pith/{RECORD_BODY}.json"] = answer(200, other)
    result = pull(server.url, content, keys, RECORD_BODY, "--json")
    assert result.code == 1
    refused(result.json(), "pull.wrong_document")
    assert documents(content) == {}


def test_a_ten_megabyte_answer_is_refused_unread(server: Server, content: Path, keys: Path) -> None:
    server.routes[BUNDLE_PATH] = answer(200, b" " * (10 * 1024 * 1024))
    result = pull(server.url, content, keys, GROWN_BODY, "--json")
    assert result.code == 1
    refused(result.json(), "file.too_large")
    assert documents(content) == {}


def test_a_server_that_trickles_is_given_up_on_at_the_deadline(
    server: Server, content: Path, keys: Path
) -> None:
    def trickle(handler: SimpleHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Length", "1000")
        handler.end_headers()
        for _ in range(1000):
            handler.wfile.write(b" ")
            handler.wfile.flush()
            time.sleep(1)

    server.routes[BUNDLE_PATH] = trickle
    started = time.monotonic()
    result = pull(server.url, content, keys, GROWN_BODY, "--json", "--timeout", "1", "--retries", "0")
    assert time.monotonic() - started < 10
    assert result.code == 1
    refused(result.json(), "fetch.too_slow")
    assert documents(content) == {}


def test_a_redirect_to_a_file_url_is_refused_with_its_reason(
    server: Server, content: Path, keys: Path
) -> None:
    server.routes[BUNDLE_PATH] = answer(302, headers={"Location": "file:///etc/passwd"})
    result = pull(server.url, content, keys, GROWN_BODY, "--json")
    assert result.code == 1
    refused(result.json(), "fetch.redirect_refused")
    assert "file:///etc/passwd" in result.err and "from http only to http or https" in result.err
    assert documents(content) == {}


def test_a_redirect_loop_is_refused(server: Server, content: Path, keys: Path) -> None:
    server.routes[BUNDLE_PATH] = answer(302, headers={"Location": BUNDLE_PATH})
    result = pull(server.url, content, keys, GROWN_BODY, "--json")
    assert result.code == 1
    refused(result.json(), "fetch.redirect_refused")
    assert "a redirect loop" in result.err


def test_500s_then_success_is_retried(server: Server, content: Path, keys: Path) -> None:
    served = (server.root / BUNDLE_PATH[1:]).read_bytes()
    calls: list[int] = []
    agents: list[str] = []

    def flaky(handler: SimpleHTTPRequestHandler) -> None:
        calls.append(1)
        agents.append(handler.headers["User-Agent"])
        (answer(500, b"busy") if len(calls) <= 2 else answer(200, served))(handler)

    server.routes[BUNDLE_PATH] = flaky
    result = pull(server.url, content, keys, GROWN_BODY)
    assert result.code == 0, result.err
    assert len(calls) == 3
    assert all(a.startswith("pith-mirror/") for a in agents)
    assert (content / f"{GROWN_BODY}.bundle.json").read_bytes() == served


def test_429_with_retry_after_is_waited_for(server: Server, content: Path, keys: Path) -> None:
    served = (server.root / BUNDLE_PATH[1:]).read_bytes()
    times: list[float] = []

    def limited(handler: SimpleHTTPRequestHandler) -> None:
        times.append(time.monotonic())
        first = len(times) == 1
        (answer(429, b"slow down", {"Retry-After": "1"}) if first else answer(200, served))(handler)

    server.routes[BUNDLE_PATH] = limited
    result = pull(server.url, content, keys, GROWN_BODY)
    assert result.code == 0, result.err
    assert len(times) == 2 and times[1] - times[0] >= 0.95
    assert (content / f"{GROWN_BODY}.bundle.json").read_bytes() == served


def test_a_bad_mirror_is_skipped_for_a_good_one(
    server: Server, content: Path, keys: Path, tmp_path: Path
) -> None:
    """--mirrors: the source's pith-mirrors.json lists another mirror; whichever serves a bad
    bundle is named and the other one used."""
    from .pullkit import serve

    with serve(server.root) as other:
        listing = json.loads((server.root / "pith-mirrors.json").read_bytes())
        listing["mirrors"].append({"base_url": other.url, "status": "mirror"})
        server.routes["/pith-mirrors.json"] = answer(200, json.dumps(listing).encode())
        bad = f.to_bytes(older_bundle()).replace(b"A Bundle", b"B Bundle")
        server.routes[BUNDLE_PATH] = answer(200, bad)
        result = pull(server.url, content, keys, GROWN_BODY, "--mirrors")
    assert result.code == 0, result.err
    assert other.requests_for(BUNDLE_PATH) == 1
    assert (content / f"{GROWN_BODY}.bundle.json").read_bytes() == newer_bundle_bytes(server)


def newer_bundle_bytes(server: Server) -> bytes:
    return (server.root / BUNDLE_PATH[1:]).read_bytes()


def test_a_source_whose_manifest_shard_is_not_the_one_it_names_is_refused(
    server: Server, content: Path, keys: Path
) -> None:
    """`--all` takes a shard only with the hash the index names: an altered shard (or
    one swapped in mid-upload) stops the pull with exit 2 and writes nothing."""
    shard = next((server.root / ".well-known/pith/mirror").iterdir())
    manifestkit.tamper(shard, b'"event_count": ', b'"event_count": 9')
    result = pull(server.url, content, keys, "--all")
    assert result.code == 2 and "Traceback" not in result.err
    assert f"mirror/{shard.name}: is not the shard the manifest names (its sha256 differs)" in result.err
    assert not content.exists() or not any(content.glob("*.json"))
    shard.unlink()
    result = pull(server.url, content, keys, "--all")
    assert result.code == 2 and ": cannot read this manifest shard: " in result.err
    assert f"pith-mirror: {server.url}.well-known/pith/mirror/" in result.err


def test_a_number_the_state_names_for_another_body_is_not_reported(
    server: Server, content: Path, keys: Path
) -> None:
    """A "not modified" answer is reported with the number the pull's state remembers, only
    if that number is of the body asked for: a state edited by hand names no other number."""
    assert pull(server.url, content, keys, GROWN_BODY).code == 0
    path = content / ".pith-pull.json"
    state = json.loads(path.read_bytes())
    assert all(entry["pith_number"].endswith(f":{GROWN_BODY}") for entry in state["entries"].values())
    for entry in state["entries"].values():
        entry["pith_number"] = f"pith:2026:{'A' * 26}"
    path.write_text(json.dumps(state))
    result = pull(server.url, content, keys, GROWN_BODY, "--json")
    assert result.code == 0 and result.json()["summary"]["unchanged"] == 1
    assert result.json()["results"][0]["pith_number"].endswith(f":{GROWN_BODY}")


def test_a_derived_record_without_its_bundle_is_not_reported_present(
    server: Server, content: Path, keys: Path
) -> None:
    """A mirror's derived record stands for its bundle, and is not stored: a mirror that
    lost the bundle (both its paths answer 404) leaves the number refused, not present."""
    for path in (BUNDLE_PATH, f"/.well-known/pith/{GROWN_BODY}/bundle.json"):
        server.routes[path] = answer(404)
    result = pull(server.url, content, keys, GROWN_BODY, "--json")
    assert result.code == 1 and "Traceback" not in result.err
    assert result.json()["summary"]["refused"] == 1
    assert f"a record a mirror derived from its bundle, and this pull has no bundle of {GROWN_BODY}" in (
        result.err
    )
    assert documents(content) == {}


def test_a_record_marked_derived_by_a_source_does_not_stop_the_pull_asking_the_next(
    server: Server, content: Path, keys: Path
) -> None:
    """`derived_by` is outside every signature: a source that adds it to the resolver's
    record of a record-only number is skipped for the next source, which gives the record."""
    from .pullkit import serve

    record_path = f"/pith/{RECORD_BODY}.json"
    marked = json.loads((server.root / record_path[1:]).read_bytes())
    marked["derived_by"] = {"tool": "pith-mirror"}
    with serve(server.root) as other:
        listing = json.loads((server.root / "pith-mirrors.json").read_bytes())
        listing["mirrors"] = [{"base_url": other.url, "status": "mirror"}]
        server.routes["/pith-mirrors.json"] = answer(200, json.dumps(listing).encode())
        # (the number's first source is chosen by its body, see pull.pull_document)
        first, second = (server, other) if zlib.crc32(RECORD_BODY.encode()) % 2 == 0 else (other, server)
        first.routes[record_path] = answer(200, f.to_bytes(marked))
        result = pull(server.url, content, keys, RECORD_BODY, "--mirrors")
        alone = pull(first.url, content.parent / "alone", keys, RECORD_BODY)
    assert result.code == 0, result.err
    assert f"{first.url}pith/{RECORD_BODY}.json: skipped (pull.wrong_document" in result.err
    assert second.requests_for(record_path) == 1
    assert documents(content) == {f"{RECORD_BODY}.record.json": (server.root / record_path[1:]).read_bytes()}
    assert alone.code == 1 and "1 refused" in alone.out and documents(content.parent / "alone") == {}


def test_a_manifest_entry_naming_no_document_is_not_reported_present(
    server: Server, content: Path, keys: Path
) -> None:
    """`--all` fetches what the manifest's hashes say differs: an entry with no hash at
    all names nothing to fetch, and its number is a failure, not "unchanged"."""

    def no_hashes(entry: dict[str, object]) -> None:
        if str(entry["pith_number"]).endswith(GROWN_BODY):
            entry.pop("bundle_sha256", None)
            entry.pop("record_sha256", None)

    manifestkit.forge(server.root, no_hashes)
    result = pull(server.url, content, keys, "--all", "--json")
    assert result.code == 1 and "Traceback" not in result.err
    failed = [r for r in result.json()["results"] if r["status"] == "failed"]
    assert [r["pith_number"] for r in failed] == [f"pith:2021:{GROWN_BODY}"]
    assert f"fetch.not_found: no document of {GROWN_BODY} was fetched or is stored" in result.err


def test_a_local_copy_that_is_no_regular_file_is_refused_unread(
    server: Server, content: Path, keys: Path
) -> None:
    """A FIFO where a document goes would block the pull for ever, a link to /dev/zero
    fill its memory: each is refused as unreadable, unread, and left as it is."""
    content.mkdir()
    os.mkfifo(content / f"{RECORD_BODY}.record.json")
    (content / f"{GROWN_BODY}.bundle.json").symlink_to("/dev/zero")
    process = pull_process(server.url, content, keys, RECORD_BODY, GROWN_BODY, stderr=subprocess.PIPE)
    try:
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 1 and "Traceback" not in err
    assert err.count("file.unreadable: the local copy cannot be read") == 2, err
    assert (content / f"{GROWN_BODY}.bundle.json").is_symlink()


def test_a_local_write_that_fails_stops_the_pull_with_a_sentence(
    server: Server, content: Path, keys: Path, tmp_path: Path
) -> None:
    """A content folder that cannot be made, or a state that cannot be written, is the
    folder's failure as a store's is: exit 2 and one line naming the file, no traceback."""
    not_a_folder = tmp_path / "a-file"
    not_a_folder.write_text("")
    result = pull(server.url, not_a_folder, keys, GROWN_BODY)
    assert result.code == 2 and "Traceback" not in result.err
    assert f"{not_a_folder.as_posix()}: cannot make the content folder (" in result.err
    (content / ".pith-pull.json").mkdir(parents=True)
    result = pull(server.url, content, keys, GROWN_BODY)
    assert result.code == 2 and "Traceback" not in result.err
    assert f"{content.as_posix()}/.pith-pull.json: cannot write the pull's state (" in result.err
    assert (content / f"{GROWN_BODY}.bundle.json").is_file()  # (what was written is whole)


def test_a_state_edited_by_hand_is_only_a_hint(server: Server, content: Path, keys: Path) -> None:
    """Validators of the wrong type, or holding a line break, are not sent as headers."""
    assert pull(server.url, content, keys, GROWN_BODY).code == 0
    path = content / ".pith-pull.json"
    state = json.loads(path.read_bytes())
    for index, entry in enumerate(state["entries"].values()):
        entry["etag"] = 7 if index % 2 else '"a"\r\nX-Injected: 1'
        entry["last_modified"] = ["not", "a", "date"]
    path.write_text(json.dumps(state))
    server.log.clear()
    result = pull(server.url, content, keys, GROWN_BODY, "--json")
    assert result.code == 0 and "Traceback" not in result.err, result.err
    assert result.json()["summary"]["unchanged"] == 1


def test_a_manifest_shard_far_larger_than_its_entries_is_not_read(
    server: Server, content: Path, keys: Path
) -> None:
    """The index says how many numbers each shard lists: a shard of a few entries that
    is megabytes long is refused unread, so a source cannot make `--all` hold gigabytes."""
    shard = next((server.root / ".well-known/pith/mirror").iterdir())
    shard.write_bytes(b" " * (3 * 1024 * 1024))
    result = pull(server.url, content, keys, "--all")
    assert result.code == 2 and "Traceback" not in result.err
    assert f"pith-mirror: {server.url}.well-known/pith/mirror/" in result.err
    assert "cannot read this manifest shard: " in result.err
    assert "more than the limit" in result.err


def test_a_derived_record_not_modified_stands_for_nothing_without_its_bundle(
    server: Server, content: Path, keys: Path
) -> None:
    """The state remembers a derived record; the bundle is then deleted locally and gone
    from the source. "Not modified" for the record must not count: asked unconditionally,
    it is refused by the derived record's own rule, with its own message."""
    assert pull(server.url, content, keys, GROWN_BODY).code == 0
    (content / f"{GROWN_BODY}.bundle.json").unlink()
    for path in (BUNDLE_PATH, f"/.well-known/pith/{GROWN_BODY}/bundle.json"):
        server.routes[path] = answer(404)
    server.log.clear()
    result = pull(server.url, content, keys, GROWN_BODY)
    assert result.code == 1 and "a record a mirror derived from its bundle" in result.err, result.err
