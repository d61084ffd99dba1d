"""One rule for time and one for importance on every write path (issue 31 items 2 and 3).

"Tomorrow" is resolved once, from when the turn was said, in the user's zone (MemoryConfig.timezone):
a todo expires at the end of the day it names there, whichever path wrote it (add with and without
infer, the deferred decision, observe, a session's extraction). An explicit "remember" is 0.8 on
every path. Real milvus-lite, the offline rules as the model.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from hippocampus import Memory
from hippocampus.agent.session import Session
from hippocampus.config import zone
from hippocampus.errors import ConfigError
from hippocampus.lifecycle.when import importance
from hippocampus.models import MemoryRecord
from hippocampus.text.dates import day_end, event_time_iso, named_day

SHANGHAI, NEW_YORK = ZoneInfo("Asia/Shanghai"), ZoneInfo("America/New_York")


def at(tz: ZoneInfo, *parts: int) -> int:
    return int(datetime(*parts, tzinfo=tz).timestamp())


# --- the rule itself ------------------------------------------------------------------------------
@pytest.mark.parametrize("text,said,tz,named", [
    ("Remind me to book the train tomorrow", (2026, 11, 26, 23, 59), SHANGHAI, date(2026, 11, 27)),
    ("Remind me to book the train tomorrow", (2026, 11, 27, 0, 1), SHANGHAI, date(2026, 11, 28)),
    ("明天去银行", (2026, 11, 30, 22, 0), SHANGHAI, date(2026, 12, 1)),      # across a month
    ("pay the rent tomorrow", (2026, 12, 31, 23, 30), NEW_YORK, date(2027, 1, 1)),  # across a year
    ("后天交报告", (2026, 12, 30, 9, 0), SHANGHAI, date(2027, 1, 1)),
    ("I saw Ana yesterday", (2027, 1, 1, 0, 30), NEW_YORK, date(2026, 12, 31)),
    ("dentist next Friday", (2026, 11, 26, 10, 0), SHANGHAI, date(2026, 12, 4)),   # said on a Thursday
    ("下周二开会", (2026, 11, 26, 10, 0), SHANGHAI, date(2026, 12, 1)),
    ("周五聚餐", (2026, 11, 26, 10, 0), SHANGHAI, date(2026, 11, 27)),
    ("flight on 2027-02-03", (2026, 11, 26, 10, 0), SHANGHAI, date(2027, 2, 3)),
    ("I like jazz", (2026, 11, 26, 10, 0), SHANGHAI, None),
])
def test_named_day_from_the_time_said(text: str, said: tuple[int, ...], tz: ZoneInfo, named: date | None) -> None:
    assert named_day(text, at(tz, *said), tz) == named


def test_the_same_instant_names_different_days_in_different_zones() -> None:
    """16:30 UTC on 31 Dec is 00:30 on 1 Jan in Shanghai: "tomorrow" is 2 Jan there, 1 Jan in New York."""
    instant = at(ZoneInfo("UTC"), 2026, 12, 31, 16, 30)
    assert named_day("tomorrow", instant, SHANGHAI) == date(2027, 1, 2)
    assert named_day("tomorrow", instant, NEW_YORK) == date(2027, 1, 1)
    assert day_end(date(2027, 1, 1), NEW_YORK) == at(NEW_YORK, 2027, 1, 2, 0, 0) - 1


def test_the_event_time_of_an_already_resolved_turn_is_not_moved_again() -> None:
    said = at(SHANGHAI, 2026, 11, 26, 23, 50)
    assert event_time_iso("book the train tomorrow", said, SHANGHAI).startswith("2026-11-27T23:50")
    assert event_time_iso("book the train", said, SHANGHAI).startswith("2026-11-26T23:50")


def test_unknown_zone_is_one_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown time zone 'Mars/Olympus'"):
        zone("Mars/Olympus")
    with pytest.raises(ConfigError, match="unknown time zone"):
        Memory(milvus_uri="/nonexistent/x.db", timezone="Mars/Olympus")


# --- every write path -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory):
    from hippocampus.embeddings import OfflineEmbedder

    db = str(tmp_path_factory.mktemp("when") / "m.db")
    emb = OfflineEmbedder()
    online = Memory(milvus_uri=db, collection_name=f"o_{uuid.uuid4().hex[:8]}", embedder=emb, timezone="Asia/Shanghai")
    deferred = Memory(milvus_uri=db, collection_name=f"d_{uuid.uuid4().hex[:8]}", embedder=emb, timezone="Asia/Shanghai",
                      write_decision="deferred")
    yield online, deferred
    online.close()
    deferred.close()


def _plain(m: Memory, _d: Memory, text: str, user: str, ts: int) -> list[MemoryRecord]:
    return [m.get(i, user) for i in m.add(text, user_id=user, ts=ts).ids]


def _infer(m: Memory, _d: Memory, text: str, user: str, ts: int) -> list[MemoryRecord]:
    return [m.get(i, user) for i in m.add([{"role": "user", "content": text}], user_id=user, ts=ts, infer=True).ids]


def _deferred(_m: Memory, d: Memory, text: str, user: str, ts: int) -> list[MemoryRecord]:
    ids = d.add(text, user_id=user, ts=ts, infer=True).ids
    d.decide_pending(user_id=user)
    return [d.get(i, user) for i in ids]


def _observe(m: Memory, _d: Memory, text: str, user: str, ts: int) -> list[MemoryRecord]:
    return [m.get(i, user) for i in m.observe(text, user_id=user, ts=ts).added]


def _session(m: Memory, _d: Memory, text: str, user: str, ts: int) -> list[MemoryRecord]:
    with Session(m, user, "s1") as session:
        session.add_message("user", text)
    return list(m.get_all(user))


PATHS: dict[str, Callable[..., list[MemoryRecord]]] = {
    "add": _plain, "add_infer": _infer, "deferred": _deferred, "observe": _observe, "session": _session}


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("text", ["Remember that my passport number ends in 4471", "请记住我对花生过敏"])
def test_remember_is_high_on_every_path(stores, path: str, text: str) -> None:
    user = f"imp_{uuid.uuid4().hex[:8]}"
    records = PATHS[path](*stores, text, user, at(SHANGHAI, 2026, 11, 26, 10, 0))
    assert records, f"{path} stored nothing"
    assert [r.life.importance for r in records] == [0.8] * len(records), (path, [r.text for r in records])


@pytest.mark.parametrize("path", [p for p in PATHS if p != "session"])  # a session writes at the time it is saved
@pytest.mark.parametrize("text,said,named", [
    ("Remind me to book the train tomorrow", (2026, 11, 26, 23, 50), date(2026, 11, 27)),   # ten minutes to midnight
    ("提醒我明天去银行", (2026, 11, 30, 23, 55), date(2026, 12, 1)),                            # across a month
    ("Remind me to pay the rent tomorrow", (2026, 12, 31, 0, 5), date(2027, 1, 1)),           # just after midnight, a year end
])
def test_tomorrow_is_the_same_day_on_every_path(stores, path: str, text: str, said: tuple[int, ...], named: date) -> None:
    """The issue's case: infer once gave 27 Nov as the event and the end of 28 Nov as the expiry, without infer
    the end of 27 Nov. Now every path expires at the end of the named day in the user's zone."""
    user = f"t_{uuid.uuid4().hex[:8]}"
    said_ts = at(SHANGHAI, *said)
    records = PATHS[path](*stores, text, user, said_ts)
    assert len(records) == 1, (path, records)
    r = records[0]
    assert r.life.category.value == "todo"
    assert r.life.expires_at == day_end(named, SHANGHAI), datetime.fromtimestamp(r.life.expires_at or 0, SHANGHAI)
    assert r.metadata["named_date"] == named.isoformat()
    assert datetime.fromisoformat(r.metadata["said_at"]).timestamp() == said_ts
    assert r.ts in (said_ts, said_ts + int((named - datetime.fromtimestamp(said_ts, SHANGHAI).date()) / timedelta(days=1)) * 86400)


def test_rule_keeps_a_higher_level_and_an_import_as_it_is() -> None:
    assert importance("Remember my sister is Ana", 0.4) == 0.8
    assert importance("I like tea", 0.4) == 0.4
    assert importance("do you remember my sister?") == 0.6
    assert importance("Don't forget my dentist on Friday") == 0.8
    pottery = "I just started a pottery class on Thursdays, and please remember I'm vegetarian"
    assert importance(pottery, 0.4, memory="The user attends a pottery class on Thursdays") == 0.4  # not what was asked
    assert importance(pottery, 0.6, memory="The user is vegetarian") == 0.8
    assert importance("请记住，我对青霉素过敏", memory="我对青霉素过敏") == 0.8


def test_cli_add_with_and_without_infer_expires_at_the_same_moment(tmp_path: Path) -> None:
    """The issue's reproduction through the CLI: `add ... --infer` and plain `add` of "Remind me to book the train
    tomorrow" said at 23:50 on 26 Nov (Shanghai) both expire at the end of 27 Nov there, both name 27 Nov,
    and a "remember" is 0.8 either way."""
    import json

    from typer.testing import CliRunner

    from hippocampus.cli.app import app

    runner = CliRunner(env={"HIPPOCAMPUS_TIMEZONE": "Asia/Shanghai"})
    uri, said = str(tmp_path / "m.db"), str(at(SHANGHAI, 2026, 11, 26, 23, 50))

    def rows(user: str, *extra: str) -> list[dict]:
        for text in ("Remind me to book the train tomorrow", "Remember that my passport number ends in 4471"):
            added = runner.invoke(app, ["--uri", uri, "add", text, "-u", user, "--ts", said, *extra])
            assert added.exit_code == 0, (added.stdout, added.stderr)
        listed = runner.invoke(app, ["--uri", uri, "list", "-u", user, "--json"])
        assert listed.exit_code == 0, listed.stderr
        return sorted(json.loads(listed.stdout), key=lambda r: r["text"])

    plain, inferred = rows("plain"), rows("inferred", "--infer")
    end_27 = day_end(date(2026, 11, 27), SHANGHAI)
    for got in (plain, inferred):
        train = next(r for r in got if "train" in r["text"])
        passport = next(r for r in got if "passport" in r["text"])
        assert (train["metadata"]["life"]["expires_at"], train["metadata"]["named_date"]) == (end_27, "2026-11-27")
        assert passport["metadata"]["life"]["importance"] == 0.8
