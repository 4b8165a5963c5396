"""The `build` command end to end: exit codes, settings files and flags, the
summary line, and a site that stays whole when a build fails or is killed."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import factories as f
import manifestkit
import pytest
from fskit import refuse_listing
from sitekit import (
    BOTH_KEYS,
    BUNDLE_BODY,
    REAL_BUNDLE,
    RECORD_BODY,
    REPO,
    Project,
    all_paths,
    assert_same_as_fresh,
    bundle_events,
    record_doc,
    tree,
)
from sitekit import run_cli as run

from generator.build import journal, write
from generator.build.pipeline import build
from generator.build.write import one_build_at_a_time
from generator.commands.cli import main
from generator.trust.errors import BuildError, Code

SUMMARY = re.compile(r"^published (\d+), refused (\d+) file\(s\), (\d+) files written in \d+\.\d\ds\b")


@pytest.fixture
def cli(project: Project, monkeypatch: pytest.MonkeyPatch) -> Project:
    """A project whose folder is the working directory, with the real documents."""
    monkeypatch.chdir(project.root)
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    project.add_real()
    return project


def title_of(project: Project, page: str = "index.html") -> str:
    match = re.search(r"<title>(.*?)</title>", project.text(page), re.S)
    assert match
    return match.group(1)


# ---------------------------------------------------------------- exit codes and output


def test_exit_0_and_the_summary_line(cli: Project, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["build", "--jobs", "1"], capsys)
    assert code == 0, err
    lines = out.strip().splitlines()
    match = SUMMARY.match(lines[-1])
    assert match, out
    published, refused, written = map(int, match.groups())
    assert (published, refused) == (2, 0)
    assert written == len(tree(cli.site))
    assert lines[-1].endswith(" -> site; to view it: pith-mirror serve --jobs 1")  # (serve, same options)
    assert (cli.site / f"pith/{RECORD_BODY}.html").is_file()
    assert (cli.site / f"pith/{BUNDLE_BODY}/bundle.json").is_file()


_IMPORTED = (
    "import sys; from generator.commands.cli import main; code = main(sys.argv[1:]); "
    "print(sorted(m for m in ('concurrent.futures', 'generator.build.pipeline', 'jinja2', 'markdown_it') "
    "if m in sys.modules)); sys.exit(code)"
)


def test_a_build_with_nothing_to_do_does_not_import_the_rendering_code(cli: Project) -> None:
    """A second `build` with nothing changed answers from the check for no change,
    before the code that renders a site, and its template engine, is imported:
    importing them cost more than the check. Each build is a new interpreter, as a
    user runs it; the first shows what a build that renders imports."""

    def build_in_new_process() -> list[str]:
        done = subprocess.run(
            [sys.executable, "-c", _IMPORTED, "build", "--jobs", "1"],
            cwd=cli.root,
            env=dict(os.environ, PYTHONPATH=str(REPO)),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.splitlines()

    first = build_in_new_process()
    assert (
        first[-1] == "['concurrent.futures', 'generator.build.pipeline', 'jinja2']" and "(full:" in first[-2]
    )
    second = build_in_new_process()
    assert second[-1] == "[]"
    assert "0 files written" in second[-2] and "(incremental:" in second[-2]


def test_exit_1_when_something_is_refused_and_the_rest_is_published(
    cli: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    cli.add("garbage.json", b"{not json")
    bad = record_doc(source_id="2110.10101")  # signed by the test key, which is not pinned here
    cli.add("unpinned.json", bad)
    code, out, err = run(["build", "--jobs", "1"], capsys)
    assert code == 1
    assert "content/garbage.json: json.invalid:" in err
    assert "content/unpinned.json:" in err and "key.unknown" in err
    match = SUMMARY.match(out.strip().splitlines()[-1])
    assert match and match.groups()[:2] == ("2", "2")
    assert (cli.site / f"pith/{RECORD_BODY}.html").is_file()
    assert (cli.site / f"pith/{BUNDLE_BODY}.html").is_file()
    report = cli.json("report.json")
    assert report["summary"]["refused_files"] == 2
    assert {r["file"] for r in report["rejections"]} == {"content/garbage.json", "content/unpinned.json"}
    html = cli.text("report.html")
    assert "content/garbage.json" in html and "json.invalid" in html
    assert "<td>the whole file</td>" in html  # its pointer is "", the whole document


def test_refusals_are_grouped_by_cause_on_the_terminal_and_in_the_report(
    cli: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """Many bundles signed by a key that is not pinned are one cause, with a count, the
    key and its fingerprint, and how to pin it; a few files are named and the report
    lists all. A tampered bundle's cause (its edited title) comes first, and once; a
    cut-off file says that it ends early."""
    for i in range(8):
        cli.add(f"foreign-{i}.bundle.json", f.bundle(record=f.canonical_record(source_id=f"2110.1010{i}")))
    real = json.loads(REAL_BUNDLE.read_bytes())
    real["events"][1]["payload"]["graph_snapshot"]["paper"]["title"] = "Forged"
    cli.add("tampered.bundle.json", real)
    cli.add("cut.json", (cli.content / REAL_BUNDLE.name).read_bytes()[:1000])
    code, _, err = run(["build", "--jobs", "1"], capsys)
    assert code == 1
    lines = err.splitlines()
    assert len(lines) < 20, err
    assert lines[0].startswith("refused 10 file(s) for 3 cause(s)") and "site/report.json" in lines[0]
    heading = "key.not_pinned: 8 file(s): an embedded public key is not one of the pinned keys: embedded key "
    assert lines[1].startswith(heading + f"'{f.TEST_KEY_ID}' (fingerprint {f.TEST_SIGNER.fingerprint_hex})")
    assert "--keys FILE" in lines[2] and "content/foreign-0.bundle.json" in lines[2]
    assert "  ... and 5 more file(s) with this cause" in lines
    assert err.count("content/foreign-") == 3 + 1  # three named, one in the hint
    title = [line for line in lines if "content/tampered.bundle.json" in line]
    assert len(title) == 1 and ": title.mismatch: " in title[0] and "more problem(s) that follow" in title[0]
    assert "content/cut.json: json.invalid: the file ends early, after 1,000 bytes" in err
    report = cli.json("report.json")
    assert len(report["rejections"]) > 8 * 10  # every problem, as before
    causes = {c["code"]: c for c in report["causes"]}
    assert causes.keys() == {"key.not_pinned", "title.mismatch", "json.invalid"}
    assert [r["file"] for r in causes["key.not_pinned"]["refused"]] == [
        f"content/foreign-{i}.bundle.json" for i in range(8)
    ]
    assert causes["key.not_pinned"]["files"] == 8 and "--keys FILE" in causes["key.not_pinned"]["hint"]
    html = cli.text("report.html")
    by_cause, every_problem = html.split("Every problem, file by file")
    assert by_cause.count("content/foreign-3.bundle.json") == 1  # once, under its cause
    assert every_problem.count("content/foreign-3.bundle.json") > 8  # every problem, in a closed details
    assert "What to do:" in html and f.TEST_SIGNER.fingerprint_hex in html


def test_keys_flag_pins_other_keys(cli: Project, capsys: pytest.CaptureFixture[str]) -> None:
    cli.add("test-signed.json", record_doc(source_id="2110.10102"))
    keys = cli.write_keys()
    code, out, err = run(["build", "--jobs", "1", "--keys", str(keys)], capsys)
    assert code == 0, err
    assert SUMMARY.match(out.strip().splitlines()[-1]).group(1) == "3"


@pytest.mark.parametrize(
    ("args", "toml", "message"),
    [
        (["--base-url", "ftp://x"], None, "base_url"),
        (["--base-url", "https://example.org/m/?x=1"], None, "base_url"),
        (["--base-url", "https://"], None, "base_url"),
        (["--base-url", "mirror"], None, "is a relative path"),
        (["--mirror-key", "no-such-key.json"], None, "mirror_key: cannot read"),
        (["--mirror-key", "keys-not-json.txt"], None, "is not valid JSON"),
        (["--base-url", "https://example.org/a b/"], None, "a character a URL cannot"),
        (["--base-url", '/"><script>'], None, "a character a URL cannot"),
        (["--jobs", "0"], None, "jobs"),
        ([], "site_titel = 'typo'\n", "site_titel"),
        ([], "site_title = 3\n", "site_title: expected a string, found an integer"),
        ([], "checksums = 'yes'\n", "checksums: expected true or false, found a string"),
        ([], "jobs = 1979-05-27\n", "jobs: expected an integer, found a date or time"),
        ([], "[tool]\nx = 1\n", "tool"),
        ([], "this is not toml", "TOML"),
        (["--primary-url", "ftp://pith.science"], None, "primary_url"),
        (["--cname", "a/b"], None, "cname"),
        (["--keys", "missing-keys.json"], None, "keys"),
    ],
)
def test_exit_2_for_bad_settings_with_nothing_written(
    cli: Project, capsys: pytest.CaptureFixture[str], args: list[str], toml: str | None, message: str
) -> None:
    if toml is not None:
        (cli.root / "pith-mirror.toml").write_text(toml)
    (cli.root / "keys-not-json.txt").write_text("not a key")
    before = all_paths(cli.root)
    code, _out, err = run(["build", "--jobs", "1", *args], capsys)
    assert code == 2
    assert message in err
    assert "Traceback" not in err
    assert all_paths(cli.root) == before


def test_exit_2_for_a_missing_content_folder(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(project.root)
    before = all_paths(project.root)
    code, _, err = run(["build", "no-such-folder", "out", "--jobs", "1"], capsys)
    assert code == 2
    assert "no-such-folder" in err
    assert all_paths(project.root) == before


def test_exit_2_for_a_content_path_that_is_a_file(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(project.root)
    (project.root / "one.json").write_text("{}")
    code, _, err = run(["build", "one.json", "out", "--jobs", "1"], capsys)
    assert code == 2
    assert "one.json: the content path is a file, not a folder of documents" in err
    assert not (project.root / "out").exists()


@pytest.mark.parametrize(
    ("site", "message"),
    [
        (".", "the content folder is inside the site folder"),
        ("{root}", "the content folder is inside the site folder"),
        ("mydocs", "so pith-mirror did not build it"),
        ("other-tool", "so pith-mirror did not build it"),
        ("piped", "so pith-mirror did not build it"),
        ("linked", "so pith-mirror did not build it"),
    ],
)
def test_exit_2_for_a_site_folder_a_build_would_wipe(
    cli: Project, capsys: pytest.CaptureFixture[str], site: str, message: str
) -> None:
    """A full build replaces the whole site folder: one holding the content, or
    files pith-mirror did not write, is refused before anything is written."""
    (cli.root / "mydocs").mkdir()
    (cli.root / "mydocs" / "thesis.tex").write_text("years of work")
    # a file by the manifest's name is not enough: pith-mirror did not write this one
    manifest = cli.root / "other-tool" / ".well-known" / "pith" / "mirror.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text('{"manifest_type": "something else"}')
    (cli.root / "other-tool" / "index.html").write_text("another site")
    # a named pipe by that name must not be opened: the read would wait for a writer forever
    piped = cli.root / "piped" / ".well-known" / "pith"
    piped.mkdir(parents=True)
    os.mkfifo(piped / "mirror.json")
    (cli.root / "piped" / "precious.txt").write_text("keep")
    # nor does a .well-known linked from the site pith-mirror built make a folder its own
    assert run(["build", "content", "site", "--jobs", "1"], capsys)[0] == 0
    (cli.root / "linked").mkdir()
    (cli.root / "linked" / ".well-known").symlink_to(cli.site / ".well-known", target_is_directory=True)
    (cli.root / "linked" / "thesis.txt").write_text("years of work")
    before = tree(cli.root)
    code, _out, err = run(["build", "content", site.format(root=cli.root), "--jobs", "1"], capsys)
    assert code == 2
    assert message in err and "Traceback" not in err
    assert tree(cli.root) == before


def test_an_empty_folder_is_a_site_folder(cli: Project, capsys: pytest.CaptureFixture[str]) -> None:
    (cli.root / "empty").mkdir()
    assert run(["build", "content", "empty", "--jobs", "1"], capsys)[0] == 0
    assert run(["build", "content", "empty", "--jobs", "1", "--clean"], capsys)[0] == 0
    assert (cli.root / "empty" / "index.html").is_file()


def test_a_folder_named_like_a_page_is_one_note_and_the_build_goes_on(
    cli: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """The check made before a build reads every page for its title: a folder
    named like one is no page, said in one line, and never read as one."""
    assert run(["build", "--jobs", "1"], capsys)[0] == 0
    (cli.content / "pages" / "about.md").mkdir(parents=True)
    code, _out, err = run(["build", "--jobs", "1"], capsys)
    assert code == 0
    assert "Traceback" not in err
    notes = [line for line in err.splitlines() if "about.md" in line]
    assert notes == [
        f"note: {cli.content.name}/pages/about.md: not published as a page: it is not a regular file"
    ]
    assert not (cli.site / "about.html").exists()


def test_exit_2_for_a_bad_keys_file(cli: Project, capsys: pytest.CaptureFixture[str]) -> None:
    (cli.root / "keys.json").write_text(json.dumps({"key_id": "k", "public_key_b64": "short"}))
    before = all_paths(cli.root)
    code, _, err = run(["build", "--jobs", "1", "--keys", "keys.json"], capsys)
    assert code == 2 and "keys" in err
    assert all_paths(cli.root) == before


def test_usage_error_exits_2(cli: Project, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["build", "--no-such-flag"])
    assert exc.value.code == 2
    assert not cli.site.exists()


# ---------------------------------------------------------------- settings


def test_pith_mirror_toml_is_honoured(cli: Project, capsys: pytest.CaptureFixture[str]) -> None:
    (cli.root / "pith-mirror.toml").write_text(
        'site_title = "Toml Mirror"\njobs = 1\nbase_url = "https://example.org/sub/"\nper_page = 1\n'
    )
    code, _, err = run(["build"], capsys)
    assert code == 0, err
    assert title_of(cli) == "Toml Mirror"
    assert "Toml Mirror" in cli.text(f"pith/{RECORD_BODY}.html")
    assert 'href="/sub/browse"' in cli.text("index.html")
    assert (cli.site / "page/2.html").is_file()  # per_page = 1
    assert cli.json("pith-mirrors.json")["mirrors"][1]["base_url"] == "https://example.org/sub"


def test_pyproject_tool_table_is_honoured(cli: Project, capsys: pytest.CaptureFixture[str]) -> None:
    (cli.root / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.pith-mirror]\nsite_title = "Pyproject Mirror"\njobs = 1\n'
    )
    code, _, err = run(["build"], capsys)
    assert code == 0, err
    assert title_of(cli) == "Pyproject Mirror"


def test_pyproject_without_the_table_is_ignored(cli: Project, capsys: pytest.CaptureFixture[str]) -> None:
    (cli.root / "pyproject.toml").write_text('[project]\nname = "x"\n[tool.other]\nsite_title = "No"\n')
    code, _, err = run(["build", "--jobs", "1"], capsys)
    assert code == 0, err
    assert title_of(cli) == "Pith mirror"


def test_pith_mirror_toml_wins_over_pyproject(cli: Project, capsys: pytest.CaptureFixture[str]) -> None:
    (cli.root / "pyproject.toml").write_text('[tool.pith-mirror]\nsite_title = "Pyproject"\njobs = 1\n')
    (cli.root / "pith-mirror.toml").write_text('site_title = "Toml"\njobs = 1\n')
    code, _, err = run(["build"], capsys)
    assert code == 0, err
    assert title_of(cli) == "Toml"


def test_flags_override_the_settings_file(cli: Project, capsys: pytest.CaptureFixture[str]) -> None:
    (cli.root / "pith-mirror.toml").write_text('site_title = "Toml Mirror"\njobs = 1\nbase_url = "/a/"\n')
    code, _, err = run(["build", "--site-title", "Flag Mirror", "--base-url", "/b/"], capsys)
    assert code == 0, err
    assert title_of(cli) == "Flag Mirror"
    assert 'href="/b/browse"' in cli.text("index.html")


def test_explicit_config_file_and_paths_relative_to_it(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    conf = project.root / "conf"
    conf.mkdir()
    (conf / "mirror.toml").write_text(
        'content = "../docs"\nsite = "../public"\nsite_title = "Elsewhere"\njobs = 1\n'
    )
    (project.root / "docs").mkdir()
    shutil.copy(REPO / "content" / f"{RECORD_BODY}.record.json", project.root / "docs")
    work = project.root / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    code, _out, err = run(["build", "--config", str(conf / "mirror.toml")], capsys)
    assert code == 0, err
    assert (project.root / "public" / f"pith/{RECORD_BODY}.html").is_file()
    assert "Elsewhere" in (project.root / "public/index.html").read_text()
    assert not (work / "site").exists()


def test_cname_file(cli: Project, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["build", "--jobs", "1", "--cname", "mirror.example.org"], capsys)
    assert code == 0, err
    assert cli.read("CNAME") == b"mirror.example.org\n"


# ---------------------------------------------------------------- failures leave the site whole


def broken_templates(root: Path, name: str, edit: tuple[str, str] | None = None, append: str = "") -> Path:
    templates = root / "tpl"
    shutil.copytree(REPO / "templates", templates)
    target = templates / name
    text = target.read_text()
    if edit is not None:
        assert edit[0] in text
        text = text.replace(edit[0], edit[1], 1)
    target.write_text(text + append)
    return templates


def test_template_syntax_error_is_a_build_error_and_the_site_stays(project: Project) -> None:
    project.add_real()
    project.build()
    before = tree(project.site)
    templates = broken_templates(project.root, "record.html", append="{% if %}")
    with pytest.raises(BuildError, match=r"record\.html"):
        project.build(templates=templates)
    assert tree(project.site) == before
    assert not project.staging.exists()


def test_cli_exits_2_on_a_broken_template(cli: Project, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["build", "--jobs", "1"], capsys)[0] == 0
    before = tree(cli.site)
    broken_templates(cli.root, "paper.html", append="{% for %}")
    (cli.root / "pith-mirror.toml").write_text('templates = "tpl"\njobs = 1\n')
    code, _, err = run(["build"], capsys)
    assert code == 2
    assert "paper.html" in err and "Traceback" not in err
    assert tree(cli.site) == before
    assert not cli.staging.exists()


def test_template_render_error_in_a_record_page_is_a_build_error(project: Project) -> None:
    project.add_real()
    project.build()
    before = tree(project.site)
    templates = broken_templates(
        project.root, "record.html", edit=("{{ number }}", "{{ no_such_name.attr }}")
    )
    with pytest.raises(BuildError):
        project.build(templates=templates)
    assert tree(project.site) == before
    assert not project.staging.exists()


@pytest.mark.parametrize(
    ("name", "edit"),
    [
        pytest.param("browse.html", ("Browse the records", "{{ no_such_name.attr }}"), id="browse"),
        pytest.param(
            "report.html",
            ("{{ report.summary.published }}", "{{ no_such_name.attr }}"),
            id="report",
        ),
        pytest.param(
            "index.html",
            ('id="list-h">{{ heading }}', 'id="list-h">{{ no_such_name.attr }}'),
            id="index",
        ),
    ],
)
def test_template_render_error_in_a_site_wide_page_is_a_build_error(
    project: Project, name: str, edit: tuple[str, str]
) -> None:
    project.add_real()
    project.build()
    before = tree(project.site)
    templates = broken_templates(project.root, name, edit=edit)
    try:
        project.build(templates=templates)
    except BuildError as exc:
        assert name in str(exc)
    except Exception as exc:
        raise AssertionError(f"{type(exc).__name__} instead of BuildError: {exc}") from None
    else:
        raise AssertionError("the build succeeded with a broken template")
    assert tree(project.site) == before
    assert not project.staging.exists()


@pytest.mark.parametrize(
    ("name", "edit", "shown"),
    [
        pytest.param("record.html", ("{{ number }}", "{{ 1 // 0 }}"), "ZeroDivisionError", id="divide"),
        pytest.param(
            "404.html", ("{% block main %}", '{% block main %}{{ 1 + "a" }}'), "TypeError", id="add"
        ),
        pytest.param(
            "base.html", ("<!doctype html>", '{% extends "base.html" %}'), "RecursionError", id="loop"
        ),
    ],
)
def test_a_template_that_fails_while_rendering_is_a_build_error(
    cli: Project, capsys: pytest.CaptureFixture[str], name: str, edit: tuple[str, str], shown: str
) -> None:
    assert run(["build", "--jobs", "1"], capsys)[0] == 0
    before = tree(cli.site)
    broken_templates(cli.root, name, edit=edit)
    (cli.root / "pith-mirror.toml").write_text('templates = "tpl"\njobs = 1\n')
    code, _, err = run(["build"], capsys)
    assert code == 2
    assert name in err and shown in err and "Traceback" not in err, err
    assert tree(cli.site) == before


def test_a_template_that_is_not_utf8_is_a_build_error(
    cli: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    templates = broken_templates(cli.root, "paper.html")
    (templates / "paper.html").write_bytes(b"\xff" + (templates / "paper.html").read_bytes())
    (cli.root / "pith-mirror.toml").write_text('templates = "tpl"\njobs = 1\n')
    code, _, err = run(["build"], capsys)
    assert code == 2
    assert "paper.html" in err and "Traceback" not in err, err


def make_many(project: Project, count: int) -> None:
    for i in range(count):
        project.add(f"many/{i:03d}.json", record_doc(source_id=f"2112.{i:05d}", title=f"Paper number {i}"))


BUILD_ARGS = ["build", "content", "site", "--keys", "keys.json", "--jobs", "1", "--quiet"]


@pytest.mark.parametrize("mode", ["full", "incremental"])
def test_a_killed_build_leaves_the_old_site_whole(
    project: Project, mode: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project.add_real()
    project.write_keys()
    monkeypatch.chdir(project.root)
    assert run(BUILD_ARGS, capsys)[0] == 0  # the same settings as the killed build's, so its cache applies
    if mode == "full":
        shutil.rmtree(project.root / ".pith-cache", ignore_errors=True)
    before = tree(project.site)
    make_many(project, 40)

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("SOURCE_DATE_EPOCH", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "generator", *BUILD_ARGS],
        cwd=project.root,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        # wait until the build has started writing pages into its staging folder
        while not (project.staging / "pith").exists():
            assert proc.poll() is None, "the build finished before it could be killed: make the tree larger"
            assert time.monotonic() < deadline, "the build never started writing"
            time.sleep(0.002)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    assert project.staging.exists(), "killed midway: its staging folder is left behind"
    assert tree(project.site) == before

    code, out, err = run(BUILD_ARGS, capsys)
    assert code == 0, err
    assert not project.staging.exists()
    assert out.startswith("published 42, refused 0 file(s)")
    assert (project.site / f"pith/{RECORD_BODY}.html").is_file()
    assert all(project.looked_up("arxiv", f"2112.{i:05d}") for i in range(40))


def test_an_interrupted_swap_is_undone_by_the_next_build(project: Project) -> None:
    """Killed between the swap's two renames: SITE is gone, the old one is .site.previous."""
    project.add_real()
    project.build()
    before = tree(project.site)
    previous = project.root / ".site.previous"
    os.rename(project.site, previous)
    (project.staging / "pith").mkdir(parents=True)
    (project.staging / "pith" / "half-written.html").write_text("<p>half")
    shutil.rmtree(project.root / ".pith-cache", ignore_errors=True)
    report = project.build()
    assert report.rejections == ()
    assert tree(project.site) == before
    assert not previous.exists() and not project.staging.exists()


def test_refused_files_are_reported_by_code(project: Project) -> None:
    project.add_real()
    project.add("empty.json", b"")
    project.add("array.json", b"[]")
    project.add("bom.json", b"\xef\xbb\xbf{}")
    project.add("dup.json", b'{"a": 1, "a": 2}')
    project.add("notes.txt", b"not a document")
    project.add(".hidden.json", b"{not json")
    project.add("draft.json~", b"{not json")
    report = project.build()
    assert sorted((r.file, r.code) for r in report.rejections) == [
        ("content/array.json", Code.JSON_NOT_OBJECT),
        ("content/bom.json", Code.JSON_BOM),
        ("content/dup.json", Code.JSON_DUPLICATE_KEY),
        ("content/empty.json", Code.JSON_INVALID),
    ]
    assert report.published == 2


def test_collection_is_deferred_only_while_the_build_runs(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The build pauses cyclic garbage collection and leaves it as it found it."""
    import gc

    from generator.build.sitewide_write import SitewideStage

    seen: list[bool] = []
    real = SitewideStage.write

    def spy(self: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(gc.isenabled())
        return real(self, *args, **kwargs)

    monkeypatch.setattr(SitewideStage, "write", spy)
    project.add_real()
    was_enabled = gc.isenabled()
    try:
        gc.enable()
        project.build()
        assert seen == [False] and gc.isenabled()
        gc.disable()
        project.add("b.json", record_doc(source_id="2305.00066", title="Another"))
        project.build()
        assert seen == [False, False] and not gc.isenabled()
    finally:
        (gc.enable if was_enabled else gc.disable)()


def test_the_reported_time_covers_replacing_the_old_site(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full build over a site deletes the old one before it returns (seconds
    at tens of thousands of records): the time it reports includes that."""
    project.add_real()
    project.build()
    real = write.remove_tree
    deleted: list[Path] = []

    def slow(folder: Path) -> None:
        time.sleep(0.3)
        deleted.append(folder)
        real(folder)

    monkeypatch.setattr(write, "remove_tree", slow)
    report = build(project.config(), BOTH_KEYS, incremental=False)
    assert report.mode == "full" and [p.name for p in deleted] == [".site.previous"]
    assert report.seconds >= 0.3


def test_a_site_built_with_the_longest_base_url_is_still_its_own(
    cli: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """The manifest's base_url comes before the marks that say pith-mirror wrote it:
    a long one must not make the next build take the site for another tool's."""
    longest = "https://example.org/" + "a" * (2048 - len("https://example.org/") - 1) + "/"
    assert len(longest) == 2048
    for clean in ([], ["--clean"], []):
        code, _out, err = run(["build", "--jobs", "1", "--quiet", "--base-url", longest, *clean], capsys)
        assert code == 0, err


@pytest.mark.parametrize(
    ("flag", "name", "text"),
    [
        pytest.param("--keys", "keys.json", None, id="keys"),
        pytest.param("--mirror-key", "mirror-key.json", None, id="mirror-key"),
        pytest.param("--config", "settings.toml", "jobs = 1\n", id="settings"),
    ],
)
def test_an_input_file_inside_the_site_folder_is_refused_and_kept(
    cli: Project, capsys: pytest.CaptureFixture[str], flag: str, name: str, text: str | None
) -> None:
    """A full build replaces the site folder whole: a keys, key or settings file
    there would be deleted (and a private key published before that)."""
    assert run(["build", "--jobs", "1"], capsys)[0] == 0
    inside = cli.site / name
    if flag == "--mirror-key":  # (keygen itself refuses a path in a site: made outside, moved in)
        made = cli.root / "made-key.json"
        assert run(["keygen", str(made)], capsys)[0] == 0
        made.rename(inside)
    elif flag == "--keys":
        inside.write_bytes(cli.write_keys().read_bytes())
    else:
        inside.write_text(text or "")
    kept = inside.read_bytes()
    code, _, err = run(["build", "--jobs", "1", "--clean", flag, str(inside)], capsys)
    assert code in (1, 2) and "inside the site folder" in err and "Traceback" not in err, err
    assert inside.read_bytes() == kept


def test_a_site_folder_that_is_a_link_is_refused_and_left_as_it_is(
    cli: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["build", "--jobs", "1", "content", "real"], capsys)[0] == 0
    before = tree(cli.root / "real")
    (cli.root / "linked").symlink_to("real")
    code, _, err = run(["build", "--jobs", "1", "--clean", "content", "linked"], capsys)
    assert code == 2 and "symbolic link" in err and "Traceback" not in err, err
    assert (cli.root / "linked").is_symlink() and tree(cli.root / "real") == before
    assert not (cli.root / ".linked.previous").exists()


# ---------------------------------------------------------------- an incremental build: all or none


def _fail_after(monkeypatch: pytest.MonkeyPatch, module: Any, name: str, calls: int) -> None:
    """Make `module.name` raise ENOSPC from its `calls`-th call on, like a full disk."""
    real = getattr(module, name)
    count = [0]

    def failing(*args: Any, **kwargs: Any) -> Any:
        count[0] += 1
        if count[0] >= calls:
            raise OSError(28, "No space left on device")
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, failing)


@pytest.mark.parametrize(
    ("name", "calls"),
    [
        pytest.param("os.replace", 3, id="record-files"),  # (a number's files are moved in first)
        pytest.param("write_atomic", 2, id="site-wide"),
    ],
)
def test_an_incremental_build_that_fails_part_way_leaves_the_site_as_it_was(
    project: Project, monkeypatch: pytest.MonkeyPatch, name: str, calls: int
) -> None:
    """Files already replaced are put back, new ones removed: the site is the last
    build's, manifest and pages alike, and the next build completes the change."""
    project.add_real(bundle=False)
    project.build()
    before = tree(project.site)
    project.add_real()  # the bundle arrives: a new number, and most site-wide pages change
    owner = journal.os if name == "os.replace" else journal
    _fail_after(monkeypatch, owner, name.rsplit(".", 1)[-1], calls)
    with pytest.raises(BuildError, match="No space left"):
        project.build()
    assert tree(project.site) == before
    assert not (project.root / ".site.undo").exists()
    monkeypatch.undo()
    assert project.build().mode == "incremental"
    assert_same_as_fresh(project, project.root.parent / f"{project.root.name}-fresh")


def test_a_killed_incremental_build_is_undone_by_the_next_build(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A publication stopped part-way (the process making the changes lost its power)
    cannot put the site back itself: its journal stays, and the next build, even one
    with nothing changed since the last complete one, undoes it."""
    project.add_real(bundle=False)
    project.build()
    before = tree(project.site)
    project.add_real()
    monkeypatch.setattr(journal.Journal, "rollback", lambda self: None)  # (as if killed: no rollback)
    _fail_after(monkeypatch, journal.Journal, "replace", 3)  # (in the process that publishes)
    with pytest.raises(BuildError):
        project.build()
    assert tree(project.site) != before and (project.root / ".site.undo").is_dir()
    monkeypatch.undo()
    project.remove(REAL_BUNDLE.name)  # content as the last complete build saw it
    project.build()
    assert tree(project.site) == before
    assert not (project.root / ".site.undo").exists()


_KILLED_AT_A_RENAME = """
import os, signal, sys
real = os.replace
def dying(source, target, *args, **kwargs):
    # killed (as by a power loss) just before a file is renamed into place in SITE
    if sys.argv[2] in os.fspath(source) and os.fspath(target).startswith(sys.argv[1]):
        os.kill(os.getpid(), signal.SIGKILL)
    return real(source, target, *args, **kwargs)
os.replace = dying
from generator.commands.cli import main
sys.exit(main(sys.argv[3:]))
"""


@pytest.mark.parametrize(
    ("target", "source", "checksums"),
    [
        pytest.param("site/index.html", ".site.staging/", False, id="site-wide"),
        pytest.param("site/SHA256SUMS", ".tmp-", True, id="checksums"),
    ],
)
def test_a_publication_killed_part_way_is_put_back_at_once(
    project: Project, target: str, source: str, checksums: bool
) -> None:
    """The process that makes an incremental build's changes to SITE, killed part-way
    (the build's own process lives on): the build puts the site back at once, with
    no temporary file left in it (one stayed, `.SHA256SUMS.tmp-PID`, to be published),
    and says so; the next build makes the change."""
    if checksums:
        (project.root / "pith-mirror.toml").write_text("checksums = true\n", "utf-8")
    project.add_real(bundle=False)
    arguments = ["build", "content", "site", "--jobs", "1", "--quiet"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "generator", *arguments]
    assert subprocess.run(command, cwd=project.root, env=env, timeout=120).returncode == 0
    before = tree(project.site)
    assert ("SHA256SUMS" in before) == checksums
    project.add_real()
    killed = [sys.executable, "-c", _KILLED_AT_A_RENAME, target, source, *arguments]
    result = subprocess.run(killed, cwd=project.root, env=env, timeout=120, capture_output=True, text=True)
    assert result.returncode == 2, result.stderr
    assert "was stopped (signal 9); the site was put back as the last build left it" in result.stderr
    assert tree(project.site) == before
    assert not (project.root / ".site.undo").exists()
    assert subprocess.run(command, cwd=project.root, env=env, timeout=120).returncode == 0
    assert f"pith/{BUNDLE_BODY}/bundle.json" in tree(project.site)


def test_a_document_replaced_by_a_named_pipe_is_refused_without_waiting(project: Project) -> None:
    """An incremental build hashes a known document whose stat changed: a named pipe
    in its place was opened to be hashed, and the build waited for a writer forever."""
    project.add_real()
    command = [sys.executable, "-m", "generator", "build", "content", "site", "--jobs", "1", "--quiet"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    assert subprocess.run(command, cwd=project.root, env=env, timeout=120).returncode == 0
    pipe = project.content / REAL_BUNDLE.name
    pipe.unlink()
    os.mkfifo(pipe)
    result = subprocess.run(command, cwd=project.root, env=env, timeout=60, capture_output=True, text=True)
    assert result.returncode == 1, result.stderr
    assert f"{REAL_BUNDLE.name}: file.unreadable: cannot read: it is a named pipe" in result.stderr
    assert "incremental" in result.stdout


def test_a_second_build_of_the_same_site_at_once_is_refused(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two builds at once shared SITE's staging folder and undo journal: one swapped in
    or undid the other's files, and left bundles older than the manifest listed."""
    monkeypatch.chdir(project.root)
    keys = str(project.write_keys())
    project.add("record.json", f.to_bytes(f.record_document()))
    assert main(["build", "--keys", keys, "--jobs", "1", "--quiet"]) == 0
    before = tree(project.site)
    project.add("bundle.json", f.to_bytes(f.bundle(title="Another Paper")))
    capsys.readouterr()
    with one_build_at_a_time(project.site):  # (another build, holding the lock)
        assert main(["build", "--keys", keys, "--jobs", "1", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "another pith-mirror command (a build, `checksums` or `upload`) is using this site now" in err
    assert tree(project.site) == before
    assert main(["build", "--keys", keys, "--jobs", "1", "--quiet"]) == 0  # once it is done
    assert tree(project.site) != before


def published_from_a_subfolder(project: Project, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """Build (by the CLI, in the project) a record kept in content/sub/: the keys file and its body."""
    monkeypatch.chdir(project.root)
    keys = str(project.write_keys())
    record = f.record_document()
    project.add("sub/record.json", f.to_bytes(record))
    assert main(["build", "--keys", keys, "--jobs", "1", "--quiet"]) == 0
    return keys, record["pith_number"].split(":")[2]


def test_a_folder_of_documents_replaced_by_a_link_keeps_its_numbers_published(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A link to a folder is not followed, and a folder that cannot be listed is not
    read: both were skipped without a word, their documents taken as deleted and
    their numbers unpublished. Each is now refused by name, like an unreadable file."""
    keys, body = published_from_a_subfolder(project, monkeypatch)
    page = (project.site / "pith" / f"{body}.html").read_bytes()
    moved = project.root / "moved"
    (project.content / "sub").rename(moved)
    (project.content / "sub").symlink_to(moved)
    capsys.readouterr()
    assert main(["build", "--keys", keys, "--jobs", "1", "--quiet"]) == 1
    assert "content/sub: file.outside_content:" in capsys.readouterr().err
    assert (project.site / "pith" / f"{body}.html").read_bytes() == page


def test_a_folder_that_cannot_be_listed_is_refused_as_such(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """It was refused as "it is a folder, not a regular file", which says nothing of why."""
    keys, body = published_from_a_subfolder(project, monkeypatch)
    refuse_listing(monkeypatch, "sub")
    capsys.readouterr()
    assert main(["build", "--keys", keys, "--jobs", "1", "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "content/sub: file.unreadable: a folder that cannot be listed (Permission denied)" in err
    assert (project.site / "pith" / f"{body}.html").is_file()


def test_signed_values_too_long_to_name_a_file_get_no_file_and_break_no_build(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 300-character arXiv id, a version of 4,000 digits or a 300-character category
    made a path segment longer than a file system names: the build failed with "File
    name too long", and every build after it, --clean included."""
    monkeypatch.chdir(project.root)
    keys = str(project.write_keys())
    project.add("plain.json", f.to_bytes(f.record_document()))
    assert main(["build", "--keys", keys, "--jobs", "1", "--quiet"]) == 0
    odd = [
        {"source_id": "1" * 300},
        {"source_id": "2101.00002", "version": 10**4000 - 1},
        {"source_id": "2101.00003", "primary_cat": "c" * 300},
        {"source_id": "/".join(["x"] * 2000)},
    ]
    for index, fields in enumerate(odd):
        record = f.canonical_record(title=f"Odd {index}", **fields)
        project.add(f"odd{index}.bundle.json", f.to_bytes(f.bundle(record=record, title=f"Odd {index}")))
    assert main(["build", "--keys", keys, "--jobs", "1", "--quiet"]) == 0  # incremental
    assert main(["build", "--keys", keys, "--jobs", "1", "--quiet", "--clean"]) == 0
    names = [p.relative_to(project.site).as_posix() for p in project.site.rglob("*")]
    assert all(len(part.encode()) <= 255 for name in names for part in name.split("/"))
    assert len(manifestkit.numbers(project.site)) == 5


def test_a_category_whose_page_would_be_another_categorys_file_breaks_no_build(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two signed primary categories, "cs.DC" and "cs.DC.html": the folder twin of the
    second's listing page is the first's page file, and every build failed ("File
    exists"). The second gets no listing page; both records are published."""
    monkeypatch.chdir(project.root)
    keys = str(project.write_keys())
    for index, category in enumerate(("cs.DC", "cs.DC.html")):
        title = f"Paper {index}"
        record = f.canonical_record(source_id=f"2101.0000{index}", title=title, primary_cat=category)
        project.add(f"r{index}.json", f.to_bytes(f.record_document(record=record, title=title)))
    assert main(["build", "--keys", keys, "--jobs", "1", "--quiet"]) == 0
    assert (project.site / "browse/category/cs.DC.html").is_file()
    assert not (project.site / "browse/category/cs.DC.html.html").exists()
    assert len(manifestkit.numbers(project.site)) == 2


def test_unfinished_says_whether_a_build_is_in_progress_or_was_stopped(project: Project) -> None:
    """What a command that must not read a half-made site (signing it, say) asks."""
    project.add_real()
    project.build()
    assert not journal.unfinished(project.site)
    with one_build_at_a_time(project.site):  # a build in progress holds the lock
        assert journal.unfinished(project.site)
    assert not journal.unfinished(project.site)
    for left in (project.root / ".site.undo", project.root / ".site.previous"):
        left.mkdir()  # what a build stopped part-way while changing SITE leaves
        assert journal.unfinished(project.site), left
        left.rmdir()
    project.staging.mkdir()  # a build stopped before it changed SITE: SITE is whole
    assert not journal.unfinished(project.site)
    project.staging.rmdir()


def test_unfinished_sees_a_build_whatever_the_site_is_called(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command run inside the site (`pith-mirror upload . URL`) or through a link to it
    sees the marks of a build that was given the folder's own path, and the reverse."""
    project.add_real()
    project.build()
    link = project.root / "link"
    link.symlink_to(project.site)
    monkeypatch.chdir(project.site)
    with one_build_at_a_time(project.site):
        assert journal.unfinished(Path(".")) and journal.unfinished(link)
    with one_build_at_a_time(link):  # (a build given the link: its lock is beside the link)
        assert journal.unfinished(link) and not journal.unfinished(project.site)
    assert not journal.unfinished(Path(".")) and not journal.unfinished(link)


def test_a_link_from_a_subfolder_to_a_document_beside_it_is_the_contents_own(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two names of one bundle make its number contested, rendered again from the chosen
    file: that file was judged within its own folder, so `sub/l.json -> ../a.json` left
    the content and the number was dropped. It is judged within the content folder."""
    monkeypatch.chdir(project.root)
    keys = str(project.write_keys())
    title = "A paper under two names"
    record = f.canonical_record(source_id="2203.07777", title=title)
    events = bundle_events(record, title, 1)
    project.add("a.json", f.to_bytes(f.bundle(record=record, title=title, events=events)))
    (project.content / "sub").mkdir()
    (project.content / "sub" / "l.json").symlink_to("../a.json")
    capsys.readouterr()
    assert main(["build", "--keys", keys, "--jobs", "1", "--quiet"]) == 0, capsys.readouterr().err
    assert (project.site / "pith" / f"{f.pith_body(record)}.html").is_file()


def test_a_document_changed_in_place_keeps_its_number_published(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A record document rewritten in place with its size and time kept is one the build
    state still takes for the one it verified: when a new bundle of its number then
    arrives, rendering the number again finds other bytes. The number was dropped from
    SITE, past the removal guard; now that file is refused by name and the number keeps
    what it published."""
    monkeypatch.chdir(project.root)
    keys = str(project.write_keys())
    title = "A paper kept"
    record = f.canonical_record(source_id="2203.08888", title=title)
    doc = f.record_document(record=record, title=title)
    project.add("rec.json", f.to_bytes(doc))
    events = bundle_events(record, title, 1)
    project.add("b.json", f.to_bytes(f.bundle(record=record, title=title, events=events)))
    assert main(["build", "--keys", keys, "--jobs", "1", "--quiet"]) == 0
    body = f.pith_body(record)
    page = project.site / "pith" / f"{body}.html"
    published = page.read_bytes()
    path = project.content / "rec.json"
    stat = path.stat()
    data = path.read_bytes()
    authors = doc["paper"]["authors_text"]
    path.write_bytes(data.replace(authors.encode(), authors[::-1].encode()))  # (same size)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    events = bundle_events(record, title, 2)
    project.add("b.json", f.to_bytes(f.bundle(record=record, title=title, events=events)))
    capsys.readouterr()
    assert main(["build", "--keys", keys, "--jobs", "1", "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "content/rec.json: file.unreadable: the file no longer holds the document the build" in err
    assert page.read_bytes() == published
    assert [n for n in manifestkit.numbers(project.site) if n.endswith(body)]


def test_a_published_copy_edited_by_hand_is_named_and_its_number_kept(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its content file gone, a record document is rendered again from SITE's copy: that
    copy edited by hand is named (not the content file, which no longer exists), and the
    number keeps what it published."""
    monkeypatch.chdir(project.root)
    keys = str(project.write_keys())
    title = "A paper whose copy was edited"
    record = f.canonical_record(source_id="2203.08887", title=title)
    project.add("rec.json", f.to_bytes(f.record_document(record=record, title=title)))
    events = bundle_events(record, title, 1)
    project.add("b.json", f.to_bytes(f.bundle(record=record, title=title, events=events)))
    assert main(["build", "--keys", keys, "--jobs", "1", "--quiet"]) == 0
    body = f.pith_body(record)
    page = project.site / "pith" / f"{body}.html"
    published = page.read_bytes()
    copy = project.site / "pith" / f"{body}.json"
    copy.write_bytes(copy.read_bytes().replace(b'"A paper', b'"A Paper'))
    (project.content / "rec.json").unlink()
    events = bundle_events(record, title, 2)
    project.add("b.json", f.to_bytes(f.bundle(record=record, title=title, events=events)))
    capsys.readouterr()
    assert main(["build", "--keys", keys, "--jobs", "1", "--quiet"]) == 1
    err = capsys.readouterr().err
    assert f"site/pith/{body}.json: file.unreadable: the site's copy of a published document" in err, err
    assert page.read_bytes() == published
