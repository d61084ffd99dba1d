"""The CLI's smaller faces (issue 31, case 15): `list` gives the text a fair share at 80 columns (CJK by
cell width), `list --help` says which kinds it lists, `add -` / `--file` read the text, `--version`,
and `search -f` errors name --filter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.cells import cell_len
from typer.testing import CliRunner

import hippocampus
from hippocampus.cli.app import app

NARROW = CliRunner(env={"COLUMNS": "80"})
CJK = "我妹妹住在杭州，她每个周末都去西湖边跑步，然后在湖边的咖啡馆里看书"
LONG = "Deployed the three node redis cluster on Friday; the config lives at /opt/redis and the runbook in the wiki"


def cli(uri: str, *args: str, code: int = 0, input: str | None = None, runner: CliRunner = NARROW):
    result = runner.invoke(app, ["--uri", uri, *args], input=input)
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr, result.exception)
    assert "Traceback" not in result.stdout + result.stderr
    return result


def column(out: str, name: str) -> tuple[int, str]:
    """(width in cells, the cells' text joined) of the table column headed `name`."""
    lines = out.splitlines()
    header = next(line for line in lines if f" {name} " in line and "┃" in line)
    index = [cell.strip() for cell in header.split("┃")].index(name)
    width = cell_len(header.split("┃")[index])
    body = [line.split("│")[index] for line in lines if line.count("│") > index]
    return width, "".join("".join(cell.split()) for cell in body)


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> str:
    uri = str(tmp_path_factory.mktemp("cmds") / "m.db")
    for args in (["add", LONG], ["add", CJK], ["add", "retry the deploy with --force", "--procedural"]):
        cli(uri, *args, "-u", "zoe", "-c", "a-chat-with-a-rather-long-name", "--who", "somebody-with-a-long-name")
    return uri


def test_list_at_80_columns_gives_the_text_a_fair_share(store: str):
    """Before: id, type, when, chat (18) and who took all but 10 cells of 80; Chinese showed 4 characters."""
    out = cli(store, "list", "-u", "zoe").stdout
    assert max(cell_len(line) for line in out.splitlines()) <= 80
    width, texts = column(out, "text")
    assert width >= 32  # 30 cells of text plus its padding
    assert "".join(CJK.split()) in texts and "".join(LONG.split())[:45] in texts  # folded, not cut
    first_cjk_line = next(line for line in out.splitlines() if "我妹妹" in line).split("│")[-2]
    assert cell_len(first_cjk_line.strip()) >= 28  # 14+ characters of two cells on its first line
    assert "a-chat-with…" in out  # the long chat id yields, with an ellipsis
    width, _ = column(cli(store, "search", "redis cluster config", "-u", "zoe").stdout, "text")
    assert width >= 30


def test_list_help_says_what_is_listed_by_default(store: str):
    """Before: '(default: episodic and semantic)' while procedural memories were listed too."""
    listed = {r["memory_type"] for r in json.loads(cli(store, "list", "-u", "zoe", "--json").stdout)}
    assert listed == {"episodic", "procedural"}
    help_text = " ".join(cli(store, "list", "--help").stdout.split())
    assert "(default: all three kinds)" in help_text and "episodic and semantic" not in help_text


def test_add_reads_stdin_and_files(tmp_path: Path):
    uri = str(tmp_path / "m.db")
    mid = json.loads(cli(uri, "add", "-", "-u", "ann", "--json", input="from stdin [x]\nsecond line\n").stdout)["ids"][0]
    assert json.loads(cli(uri, "get", str(mid), "-u", "ann", "--json").stdout)["text"] == "from stdin [x]\nsecond line"
    long_text = "\n".join(f"line {i}: " + "x" * 90 for i in range(600))  # ~60 KB, one memory
    (tmp_path / "notes.txt").write_text(long_text + "\n", encoding="utf-8")
    mid = json.loads(cli(uri, "add", "--file", str(tmp_path / "notes.txt"), "-u", "ann", "--json").stdout)["ids"][0]
    assert json.loads(cli(uri, "get", str(mid), "-u", "ann", "--json").stdout)["text"] == long_text


@pytest.mark.parametrize("args,stdin,says", [
    (["-"], "  \n\n", "stdin gave no text to remember"),
    (["--file", "{empty}"], None, "gave no text to remember"),
    (["--file", "{missing}"], None, "no such file"),
    (["--file", "{latin1}"], None, "is not UTF-8 text"),
    ([], None, "give the text to remember"),
    (["both", "--file", "{empty}"], None, "give the text to remember"),
])
def test_add_without_a_text_is_one_clear_line(tmp_path: Path, args: list[str], stdin: str | None, says: str):
    (tmp_path / "empty.txt").write_text("\n")
    (tmp_path / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    names = {"empty": tmp_path / "empty.txt", "missing": tmp_path / "nope.txt", "latin1": tmp_path / "latin1.txt"}
    args = [a.format(**names) for a in args]
    result = cli(str(tmp_path / "m.db"), "add", *args, "-u", "ann", code=2, input=stdin)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: InvalidInput:") and says in lines[0]
    assert not (tmp_path / "m.db").exists()  # refused before the store opened


def test_version():
    result = NARROW.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.stdout.strip() == f"hippocampus {hippocampus.__version__}"


def test_search_filter_errors_name_the_filter_option(tmp_path: Path):
    """Before: `search -f nokeyvalue` said '--meta takes key=value'."""
    result = cli(str(tmp_path / "m.db"), "--create", "search", "q", "-u", "ann", "-f", "nokeyvalue", code=2)
    assert result.stderr.strip() == "error: InvalidInput: --filter takes key=value, got 'nokeyvalue'"
