"""Settings and options the real CLI refuses: exit 2 and one sentence naming the
setting, never a traceback, and nothing started or written."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from generator.commands.cli import main

REPO = Path(__file__).resolve().parents[2]
CONTENT = REPO / "content"


def project(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the real content folder, and a site folder that does not exist yet."""
    content = tmp_path / "content"
    shutil.copytree(CONTENT, content)
    return content, tmp_path / "site"


@pytest.mark.parametrize("port", ["70000", "65536", "-1"])
def test_serve_refuses_a_port_outside_0_to_65535_as_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], port: str
) -> None:
    content, site = project(tmp_path)
    with pytest.raises(SystemExit) as info:
        main(["serve", "--no-watch", "--jobs", "1", "--port", port, str(content), str(site)])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert f"argument --port: {port} is not a port: a port is from 0 to 65535" in err
    assert "Traceback" not in err
    assert not site.exists()


def run(capsys: pytest.CaptureFixture[str], *args: str | int | Path) -> tuple[int, str]:
    code = main([str(arg) for arg in args])
    return code, capsys.readouterr().err


def test_jobs_beyond_four_per_core_or_below_one_is_refused_with_the_range(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    content, site = project(tmp_path)
    most = 4 * (os.cpu_count() or 1)
    sentence = f"pith-mirror: configuration: jobs: must be from 1 to {most} "
    settings = tmp_path / "pith-mirror.toml"
    # (one above the bound first: were it accepted, 100000 would fork 100000 workers)
    for jobs in (most + 1, 0, -3, 100000):
        code, err = run(capsys, "build", "--jobs", jobs, content, site)
        assert code == 2 and err.startswith(sentence), err
        settings.write_text(f"jobs = {jobs}\n")
        code, err = run(capsys, "build", "--config", settings, content, site)
        assert code == 2 and err.startswith(sentence), err
        assert not site.exists()
    code, err = run(capsys, "build", "--quiet", "--jobs", most, content, site)
    assert code == 0, err


def refused_as_flag_and_setting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], setting: str, value: str, sentence: str
) -> None:
    """The same refusal, and nothing built, for a value given as a flag (`--name=value`,
    since a value may start with '-') and in a settings file."""
    content, site = project(tmp_path)
    flag = "--" + setting.replace("_", "-")
    code, err = run(capsys, "build", "--jobs", "1", f"{flag}={value}", content, site)
    assert code == 2 and err.startswith(sentence), err
    settings = tmp_path / "pith-mirror.toml"
    settings.write_text(f"{setting} = {json.dumps(value)}\n")
    code, err = run(capsys, "build", "--jobs", "1", "--config", settings, content, site)
    assert code == 2 and err.startswith(sentence), err
    assert not site.exists()


@pytest.mark.parametrize(
    "cname",
    [
        "mirror.example.org\nevil.example",
        "mirror example.org",
        " mirror.example.org",
        "a_b.example.org",
        "mirror.example.org/",
        "spiegel.bücher.example",
        "-mirror.example.org",
        "192.0.2.1",
    ],
)
def test_a_cname_that_is_not_a_host_name_is_refused_and_no_cname_file_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cname: str
) -> None:
    sentence = f"pith-mirror: configuration: cname: {cname!r} is not a domain name: name one like "
    refused_as_flag_and_setting(tmp_path, capsys, "cname", cname, sentence)


@pytest.mark.parametrize(
    "url",
    [
        "http://",
        "https://",
        "https://:443/",
        "https://user@/",
        "http://[",
        "https://pith.science:99999",
        "ftp://pith.science",
        "pith.science",
        "http://exa mple",
        'https://pith.science/"x',
        "https://pith.science/?q=1",
        "https://pith.science/#top",
        "https://pith.science:0",
    ],
)
def test_a_primary_url_without_an_http_scheme_and_a_host_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], url: str
) -> None:
    sentence = f"pith-mirror: configuration: primary_url: {url!r} is not an http(s) URL with a host, like "
    refused_as_flag_and_setting(tmp_path, capsys, "primary_url", url, sentence)


@pytest.mark.parametrize(
    ("cache", "folder", "why"),
    [
        ("content/cache", "content", "where its files would be read as documents"),
        ("content", "content", "where its files would be read as documents"),
        ("site/cache", "site", "where its files would be published"),
        ("site", "site", "where its files would be published"),
    ],
)
def test_a_cache_folder_inside_the_content_or_site_folder_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cache: str, folder: str, why: str
) -> None:
    content, site = project(tmp_path)
    settings = tmp_path / "pith-mirror.toml"
    settings.write_text(f'cache = "{cache}"\njobs = 1\n')
    before = sorted(tmp_path.rglob("*"))
    code, err = run(capsys, "build", "--config", settings, content, site)
    assert code == 2, err
    assert (
        err
        == f"pith-mirror: {tmp_path / cache}: the cache folder must be outside the {folder} folder, {why}\n"
    )
    assert sorted(tmp_path.rglob("*")) == before


@pytest.mark.parametrize("url", ["http://[", "https://mirror.example:99999/", "https://", "https://:80/m/"])
def test_a_base_url_that_does_not_parse_or_names_no_host_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], url: str
) -> None:
    content, site = project(tmp_path)
    code, err = run(capsys, "build", "--jobs", "1", "--base-url", url, content, site)
    assert code == 2 and "Traceback" not in err
    assert err == f"pith-mirror: configuration: base_url: {url!r} is not a path or an http(s) URL\n"
    assert not site.exists()


def test_a_site_named_dot_keeps_its_default_cache_beside_the_folder_not_inside(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    content, _ = project(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.chdir(out)
    code, err = run(capsys, "build", "--jobs", "1", "--quiet", content, ".")
    assert code == 0, err
    assert (out / "index.html").is_file()
    assert (tmp_path / ".pith-cache" / "out").is_dir()
    assert not (out / ".pith-cache").exists()


@pytest.mark.parametrize(
    ("setting", "value", "says"),
    [
        ("base-url", "//evil.example/m/", "names a host: write it as https://host/..."),
        ("base-url", "/m/\ufffe/", "holds a character a URL cannot (percent-encode it)"),
        ("base-url", "/m/\x85/", "holds a character a URL cannot (percent-encode it)"),
        ("base-url", "https://example.org//evil.example/", "has a path starting with '//'"),
        ("base-url", "////evil.example/m/", "has a path starting with '//'"),
        ("base-url", "/m/?", "a base URL has no query or fragment"),
        ("base-url", "https://example.org:0/m/", "is not a path or an http(s) URL"),
        ("primary-url", "https://pith.science?", "is not an http(s) URL with a host"),
        ("primary-url", "https://pith.science/#", "is not an http(s) URL with a host"),
        ("base-url", "/" + "a" * 2048, "is 2,049 characters long; at most 2,048"),
        ("base-url", "https://ex.org/\udcff/", "holds bytes that are not UTF-8"),
        ("site-title", "Mirror \udcff", "holds bytes that are not UTF-8"),
        ("primary-url", "https://pith.science/\udcff", "holds bytes that are not UTF-8"),
    ],
)
def test_a_url_or_title_that_pages_could_not_use_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], setting: str, value: str, says: str
) -> None:
    """`\\udcff` is how Python gives a command-line byte that is not UTF-8."""
    content, site = project(tmp_path)
    code, err = run(capsys, "build", "--jobs", "1", f"--{setting}={value}", content, site)
    assert code == 2 and "Traceback" not in err
    assert err.startswith(f"pith-mirror: configuration: {setting.replace('-', '_')}: ") and says in err, err
    assert not site.exists()


def test_a_base_url_with_letters_beyond_ascii_is_written_as_a_url(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A base URL may be written as a reader writes it; every URL the site holds
    is ASCII (RFC 3986), as sitemaps, robots.txt and feed readers expect: the
    host in its IDNA form, the path percent-encoded. Both spellings make one site."""
    content, site = project(tmp_path)
    code, err = run(
        capsys,
        "build",
        "--jobs",
        "1",
        "--quiet",
        "--base-url=https://bücher.example/spiegel-ü/",
        content,
        site,
    )
    assert code == 0, err
    base = "https://xn--bcher-kva.example/spiegel-%C3%BC/"
    assert 'href="/spiegel-%C3%BC/assets/' in (site / "index.html").read_text()
    for name in (
        "feed.xml",
        "sitemap.xml",
        "robots.txt",
        ".well-known/pith/mirror.json",
        "pith-mirrors.json",
    ):
        text = (site / name).read_text()
        assert base in text or base.rstrip("/") in text, name
        assert "bücher" not in text and "spiegel-ü" not in text, name
    spelled = tmp_path / "spelled"
    code, err = run(capsys, "build", "--jobs", "1", "--quiet", f"--base-url={base}", content, spelled)
    assert code == 0, err
    assert (spelled / "sitemap.xml").read_bytes() == (site / "sitemap.xml").read_bytes()
    assert (spelled / "index.html").read_bytes() == (site / "index.html").read_bytes()


def test_a_base_url_whose_host_has_no_idna_form_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    content, site = project(tmp_path)
    code, err = run(
        capsys, "build", "--jobs", "1", "--base-url=https://" + "ü" * 70 + ".example/", content, site
    )
    assert code == 2 and "Traceback" not in err
    assert "base_url: the host of" in err and "has no IDNA form" in err, err
    assert not site.exists()


def test_a_current_folder_whose_name_is_not_utf8_is_named_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    here = tmp_path / os.fsdecode(b"caf\xe9")
    here.mkdir()
    shutil.copytree(CONTENT, here / "content")
    monkeypatch.chdir(here)
    code, err = run(capsys, "build", "--jobs", "1")
    assert code == 2 and "Traceback" not in err
    assert err.startswith("pith-mirror: configuration: content: the path ") and "caf\\xe9" in err, err


def test_a_command_run_from_a_folder_that_is_gone_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full build into "." replaces the folder the shell is in; the next command
    there used to end in a traceback."""
    content, _ = project(tmp_path)
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    code, err = run(capsys, "build", "--jobs", "1", content, tmp_path / "site")
    assert code == 2
    assert err == "pith-mirror: configuration: current folder: it no longer exists: change into it again\n"
    code, err = run(capsys, "verify", content)  # (a command given whole paths needs no current folder)
    assert code == 0, err


@pytest.mark.parametrize("setting", ["content", "site", "templates", "cache", "keys", "mirror_key"])
def test_a_path_setting_holding_a_nul_is_refused_naming_the_setting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], setting: str
) -> None:
    """No file name holds NUL: the first system call used to fail with "embedded null byte"."""
    content, site = project(tmp_path)
    settings = tmp_path / "pith-mirror.toml"
    settings.write_text(f'{setting} = "a\\u0000b"\n')
    code, err = run(capsys, "build", "--jobs", "1", "--config", settings, content, site)
    assert code == 2, err
    assert err == (
        f"pith-mirror: configuration: {setting}: "
        "the path holds a NUL character (\\u0000), which no file name can\n"
    )
    assert not site.exists()


@pytest.mark.parametrize(
    ("toml", "key", "says"),
    [
        ("tool = 5\n", "tool", "expected a table, found an integer"),
        (
            "[[tool.pith-mirror]]\njobs = 1\n",
            "tool.pith-mirror",
            "found an array of tables ([[tool.pith-mirror]]); write one table, [tool.pith-mirror]",
        ),
        (
            '[tool]\npith-mirror = "x"\n',
            "tool.pith-mirror",
            "expected a table ([tool.pith-mirror]), found a string",
        ),
        (
            "[tool]\npith-mirror = []\n",
            "tool.pith-mirror",
            "expected a table ([tool.pith-mirror]), found an array",
        ),
    ],
)
def test_a_pyproject_whose_tool_table_is_no_table_is_refused_not_ignored(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    toml: str,
    key: str,
    says: str,
) -> None:
    """Ignoring `[[tool.pith-mirror]]` would build with the defaults while the user
    believes their settings apply; `tool = 5` used to end in an AttributeError."""
    content, site = project(tmp_path)
    (tmp_path / "pyproject.toml").write_text(toml)
    monkeypatch.chdir(tmp_path)
    code, err = run(capsys, "build", "--jobs", "1", content, site)
    assert code == 2, err
    assert err == f"pith-mirror: configuration: {key}: in {tmp_path / 'pyproject.toml'}: {says}\n"
    assert not site.exists()


@pytest.mark.parametrize("special", ["fifo", "device", "large"])
def test_a_settings_file_that_is_no_regular_file_or_too_large_is_refused_unread(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], special: str
) -> None:
    """A named pipe used to wait for a writer forever, and /dev/zero to fill memory."""
    content, site = project(tmp_path)
    settings = tmp_path / "pith-mirror.toml"
    if special == "fifo":
        os.mkfifo(settings)
    elif special == "large":
        settings.write_text("# padding\n" * 110_000)
    else:
        settings = Path("/dev/zero")
    code, err = run(capsys, "build", "--jobs", "1", "--config", settings, content, site)
    assert code == 2, err
    why = "is larger than 1,048,576 bytes" if special == "large" else "not a regular file"
    assert err.startswith("pith-mirror: configuration: config: ") and why in err and str(settings) in err, err
    assert not site.exists()


def test_a_keys_setting_naming_a_device_is_refused_unread(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    content, site = project(tmp_path)
    settings = tmp_path / "pith-mirror.toml"
    settings.write_text('keys = "/dev/zero"\n')
    code, err = run(capsys, "build", "--jobs", "1", "--config", settings, content, site)
    assert code == 2, err
    said = "cannot read /dev/zero: it is a device, not a regular file"
    assert err == f"pith-mirror: configuration: keys: {said}\n"
    assert not site.exists()


@pytest.mark.parametrize(
    ("epoch", "says"),
    [
        ("99999999999999999999", "is later than 9999-12-31T23:59:59Z"),
        ("253402300800", "is later than 9999-12-31T23:59:59Z"),
        ("9" * 5000, "is later than 9999-12-31T23:59:59Z"),
        ("\u00b2", "is not a whole number of seconds since 1970"),
        ("-1", "is not a whole number of seconds since 1970"),
        ("1.5", "is not a whole number of seconds since 1970"),
    ],
)
def test_a_source_date_epoch_that_is_no_time_a_page_can_show_is_refused_before_building(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, epoch: str, says: str
) -> None:
    """These used to end in OverflowError, "year 10000 is out of range" or int()'s ValueError."""
    content, site = project(tmp_path)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", epoch)
    code, err = run(capsys, "build", "--jobs", "1", content, site)
    assert code == 2, err
    assert err.startswith("pith-mirror: configuration: SOURCE_DATE_EPOCH: ") and says in err, err
    assert not site.exists()


@pytest.mark.parametrize("entry", ["notes.txt", "passwd", ".profile", "build-cache.json.bak"])
def test_a_cache_folder_that_holds_other_files_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], entry: str
) -> None:
    """`cache = "/etc"` was accepted, and the build wrote, renamed and deleted files there:
    a cache folder must be the mirror's own (new, empty, or holding only its files)."""
    content, site = project(tmp_path)
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / entry).write_text("keep me\n")
    settings = tmp_path / "pith-mirror.toml"
    settings.write_text(f'cache = "{folder}"\njobs = 1\n')
    code, err = run(capsys, "build", "--config", settings, content, site)
    assert code == 2, err
    assert err.startswith(f"pith-mirror: configuration: cache: {folder} holds {entry!r}, which is no build")
    assert "a folder of the mirror's own" in err
    assert sorted(p.name for p in folder.iterdir()) == [entry]
    assert not site.exists()


def test_a_cache_path_that_is_a_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    content, site = project(tmp_path)
    (tmp_path / "cachefile").write_text("x")
    (tmp_path / "pith-mirror.toml").write_text(f'cache = "{tmp_path / "cachefile"}"\njobs = 1\n')
    code, err = run(capsys, "build", "--config", tmp_path / "pith-mirror.toml", content, site)
    assert code == 2 and "configuration: cache:" in err and "is a file, not a folder" in err


def test_a_new_or_empty_cache_folder_is_used_and_then_still_accepted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What the cache writes is all the rule allows: a second build uses it (and so
    does the check for no change, answering without a build)."""
    from generator.site.config import CACHE_NAMES

    content, site = project(tmp_path)
    (tmp_path / "empty").mkdir()
    for folder in (tmp_path / "new" / "cache", tmp_path / "empty"):
        settings = tmp_path / "pith-mirror.toml"
        settings.write_text(f'cache = "{folder}"\njobs = 1\n')
        for _ in range(2):
            code, err = run(capsys, "build", "--config", settings, content, site)
            assert code == 0, err
        names = sorted(p.name for p in folder.iterdir())
        assert "build-cache.json" in names and "templates" in names
        assert all(CACHE_NAMES.fullmatch(name) for name in names), names


def test_a_build_into_a_bucket_url_is_refused_and_writes_no_folder_named_after_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    content, site = project(tmp_path)
    monkeypatch.chdir(tmp_path)
    code, err = run(capsys, "build", "--quiet", content, "s3://bucket/site/")
    assert code == 2 and "pith-mirror upload SITE s3://bucket/site/" in err, err
    assert not (tmp_path / "s3:").exists()
    code, err = run(capsys, "build", "--quiet", f"file://{content}", f"file://{site}")
    assert code == 0, err
    assert (site / "index.html").is_file()
