"""The weakness report from real sessions: real embedded grader, real index, SQLite checkpoints.

Speech is the conftest's FakeSpeech, so a spoken answer carries known figures.
"""

from __future__ import annotations

import doctest
import importlib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from interviewer.cli import main
from interviewer.corpus.schema import Question
from interviewer.interview.context import Services
from interviewer.interview.session import AudioAnswer, SessionManager, SessionOptions
from interviewer.report.build import GRILL_BANDS, build_report
from interviewer.report.render import redact, to_html, to_markdown
from interviewer.settings import load_settings

SECRET = "sk-test-0123456789abcdefSECRET"


@pytest.fixture
def disk_manager(settings, shared_store, fake_speech) -> Iterator[SessionManager]:  # type: ignore[no-untyped-def]
    """Sessions checkpointed in the test's data directory, where `interviewer report` looks."""
    manager = SessionManager(settings, services=Services(settings, store=shared_store, speech=fake_speech))
    yield manager
    manager.close()
    manager.services.close()


def question(manager: SessionManager, events: list) -> Question:  # type: ignore[type-arg]
    return manager.services.bank.get(events[-1].question_id)


def weak_answer_with_a_misconception(q: Question) -> str:
    wrong = q.rubric.misconceptions[0].text if q.rubric.misconceptions else ""
    return f"{q.key_points[-1].text}. Also, {wrong}."


@pytest.fixture
def interview(disk_manager: SessionManager, fake_speech, tmp_path: Path) -> str:  # type: ignore[no-untyped-def]
    """A finished two-question interview: a spoken weak answer, a follow-up, a model answer."""
    sid, events = disk_manager.start(
        SessionOptions(source="002", topics=("precision",), questions=2, seed=11)
    )
    q1 = question(disk_manager, events)
    audio = str(tmp_path / "q1.wav")
    fake_speech.transcripts[audio] = weak_answer_with_a_misconception(q1)
    events = disk_manager.send(sid, AudioAnswer(audio))
    while events[-1].type == "follow_up":
        events = disk_manager.send(sid, "/skip")
    disk_manager.send(sid, "/answer")
    assert disk_manager.state(sid).finished
    return sid


@pytest.mark.parametrize("module", ["interviewer.report.build", "interviewer.report.render"])
def test_docstring_examples(module: str) -> None:
    assert doctest.testmod(importlib.import_module(module)).failed == 0


def test_a_session_report_has_every_section(disk_manager: SessionManager, interview: str) -> None:
    report = build_report(disk_manager, interview)
    md = to_markdown(report)
    headings = ["Mastery by topic", "Score per question", "Missed key points", "Misconceptions stated",
                "Speech", "The grill (document 002), answered cold", "Recommended next drill"]  # fmt: skip
    assert all(f"## {heading}" in md for heading in headings)
    assert [r.outcome for r in report.rows] == ["answered", "revealed"]
    assert all(r.question_id in md for r in report.rows)
    # a missed point comes with its excerpt and a source a person can read (title, section, item)
    assert "model answer, *Training Behaviors — Interview Grill, " in md and " chars " not in md
    assert report.misconceptions and report.misconceptions[0].text in md
    assert "| 150 |" in md  # the spoken answer's words per minute
    assert all(says in md for _, _, says in GRILL_BANDS) and "/45** answered cold" in md
    assert "interviewer practice --mode drill --questions 5" in md
    assert set(report.mastery) == {r.topic for r in report.rows}
    # the grill's items are terse notes ("FP16 vs BF16?"): the report words them as they were asked
    asked = [disk_manager.services.bank.get(r.question_id).ask for r in report.rows]
    assert [r.question for r in report.rows] == asked and all(a in md for a in asked)


def test_html_is_self_contained_and_never_shows_a_key(
    monkeypatch: pytest.MonkeyPatch,
    disk_manager: SessionManager,
    interview: str,
    settings,  # type: ignore[no-untyped-def]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    sid, events = disk_manager.start(SessionOptions(source="002", questions=1, seed=5))
    disk_manager.send(
        sid, f"My key is {SECRET}, {weak_answer_with_a_misconception(question(disk_manager, events))}"
    )
    page = to_html(build_report(disk_manager, None), settings)
    assert SECRET not in page
    assert page.startswith("<!doctype html>") and "<img" in page
    links = re.findall(r"""(?:src|href)\s*=\s*["']([^"']*)""", page)
    assert links and all(link.startswith("data:image/png;base64,") for link in links)
    assert not re.search(r"<(script|link|iframe)\b|@import|url\(", page)
    assert redact(f"key={SECRET}", load_settings()) == "key=[redacted]"


def test_the_grill_counts_cold_drill_answers_only(disk_manager: SessionManager) -> None:
    def first_answers(mode: str, hint: bool) -> str:
        sid, events = disk_manager.start(SessionOptions(source="002", questions=1, mode=mode, seed=21))  # type: ignore[arg-type]
        if hint:
            disk_manager.send(sid, "/hint")
        disk_manager.send(sid, question(disk_manager, events).reference)
        if not disk_manager.state(sid).finished:  # an interview may follow up
            disk_manager.send(sid, "/end")
        return str(events[-1].question_id)

    assert first_answers("interview", hint=False)  # the right answer, but not a drill
    assert first_answers("drill", hint=True)  # a drill, but after a hint
    assert build_report(disk_manager).grill.answered == []
    qid = first_answers("drill", hint=False)
    report = build_report(disk_manager)
    assert report.grill.answered == [int(qid.split("-")[1])]
    assert sum(report.grill.in_band(lo, hi) for lo, hi, _ in GRILL_BANDS) == 1


def test_the_report_command(disk_manager: SessionManager, interview: str, tmp_path: Path,
                            capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    assert main(["report"]) == 0  # --last by default, Markdown on stdout
    assert f"session {interview}" in capsys.readouterr().out
    out = tmp_path / "report.html"
    assert main(["report", "--session", interview, "--format", "html", "-o", str(out)]) == 0
    assert out.read_text().startswith("<!doctype html>")
    assert main(["report", "--all"]) == 0
    assert "all sessions (1)" in capsys.readouterr().out
    assert main(["report", "--session", "nope"]) == 2
    assert "No session 'nope'" in capsys.readouterr().err


def test_no_session_yet_is_a_clean_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--last"]) == 2
    assert "No session yet" in capsys.readouterr().err
