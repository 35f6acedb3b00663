"""The web app without a browser: its page, its API, voice review, sessions per tab, binding.

Sessions use the real embedded grader and the shared index; speech is the
conftest's FakeSpeech (a path maps to a transcript), so no Whisper runs here.
"""

from __future__ import annotations

import argparse
import doctest
import importlib
import socket
import threading
import warnings
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import gradio as gr
import pytest

from interviewer.app.handlers import Interviews, make_manager
from interviewer.app.server import build_app, launch_options, run_ui
from interviewer.cli import build_parser
from interviewer.errors import BadAudio, BadInput
from interviewer.interview.session import SessionManager
from interviewer.interview.state import AnswerEvent
from interviewer.settings import load_settings
from interviewer.speech.review import ReviewedSpeech

ELEM_IDS = {"msg", "send", "chat", "audio", "transcript", "grade", "hint", "reveal", "skip", "end", "report",
            "start", "voice-mode", "review", "interviewer-voice"}  # fmt: skip
SECRET = "sk-test-0123456789abcdefSECRET"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def app_manager(settings, shared_store, fake_speech) -> Iterator[SessionManager]:  # type: ignore[no-untyped-def]
    manager = make_manager(settings, store=shared_store, speech=fake_speech)
    yield manager
    manager.close()
    manager.services.close()


@pytest.fixture
def interviews(settings, app_manager: SessionManager) -> Interviews:  # type: ignore[no-untyped-def]
    return Interviews(settings, app_manager)


def drain(handler: Iterator[Any]) -> list[Any]:
    return list(handler)


def started(interviews: Interviews, **options: Any) -> str:
    result = interviews.api_start(**{"source": "004", "questions": 2, **options})
    assert result["events"][-1]["type"] == "question"
    return str(result["session_id"])


def recorded(interviews: Interviews, sid: str, fake_speech: Any, folder: Path) -> tuple[str, str]:
    """A recorded answer, transcribed for review: (its transcript, its draft id)."""
    audio = str(folder / "answer.wav")
    fake_speech.transcripts[audio] = "BF16 keeps the FP32 exponent range"
    text, _, draft_id = interviews.on_audio(sid, audio)
    return text, draft_id


@pytest.mark.parametrize("module", ["interviewer.app.views", "interviewer.speech.review"])
def test_docstring_examples(module: str) -> None:
    assert doctest.testmod(importlib.import_module(module)).failed == 0


def test_build_app_has_the_documented_elements_and_api(settings, app_manager: SessionManager) -> None:  # type: ignore[no-untyped-def]
    app = build_app(settings, app_manager)
    config = app.get_config_file()
    elem_ids = {c["props"].get("elem_id") for c in config["components"]}
    assert elem_ids >= ELEM_IDS
    audio = next(c for c in config["components"] if c["props"].get("elem_id") == "audio")
    assert set(audio["props"]["sources"]) == {"upload", "microphone"}
    voice = next(c for c in config["components"] if c["props"].get("elem_id") == "interviewer-voice")
    assert voice["props"]["autoplay"] is True  # the interviewer's line plays by itself
    public = {d["api_name"] for d in config["dependencies"] if d.get("api_visibility") == "public"}
    assert public == {"start", "answer", "transcribe"}  # UI events stay private
    # every line is said: a voice event is not dropped while the previous line's still runs
    speaking = [d for d in config["dependencies"] if voice["id"] in d["outputs"]]
    assert len(speaking) >= 8 and all(d["trigger_mode"] == "multiple" for d in speaking)


def test_build_app_refuses_a_manager_without_reviewed_speech(settings, manager: SessionManager) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(TypeError, match="make_manager"):
        build_app(settings, manager)


def test_the_api_drives_a_session_end_to_end(interviews: Interviews) -> None:
    bank = interviews.manager.services.bank
    first = interviews.api_start(source="004", questions=2, mode="drill")
    sid = first["session_id"]
    assert (first["number"], first["total"], first["awaiting"]) == (1, 2, "question")
    q = bank.get(first["events"][-1]["question_id"])

    hinted = interviews.api_answer(sid, "/hint")
    assert [e["type"] for e in hinted["events"]] == ["hint"]
    graded = interviews.api_answer(sid, q.reference)
    assert [e["type"] for e in graded["events"]] == ["answer", "grade", "question"]  # drill: no follow-up
    assert graded["events"][1]["score"] >= 3
    revealed = interviews.api_answer(sid, "/answer")
    assert [e["type"] for e in revealed["events"]] == ["reveal", "summary"]
    assert revealed["events"][0]["sources"]  # the model answer comes with its source passages
    assert revealed["finished"] is True
    with pytest.raises(gr.Error, match="finished"):
        interviews.api_answer(sid, "one more")


def test_two_sessions_stay_separate_over_http(settings, app_manager: SessionManager) -> None:  # type: ignore[no-untyped-def]
    from gradio_client import Client

    app = build_app(settings, app_manager)
    port = free_port()
    app.launch(**launch_options(settings, port=port), prevent_thread_lock=True, quiet=True)
    try:
        clients = [Client(f"http://127.0.0.1:{port}/", verbose=False) for _ in range(2)]
        starts: list[dict[str, Any]] = [{}, {}]

        def start(i: int) -> None:
            starts[i] = clients[i].predict(source="004", questions=2, api_name="/start")

        threads = [threading.Thread(target=start, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        a, b = (s["session_id"] for s in starts)
        assert a != b
        after = clients[0].predict(session_id=a, text="/skip", api_name="/answer")
        assert after["number"] == 2
        untouched = app_manager.state(b)
        assert (untouched.number, untouched.awaiting) == (1, "question")
        assert all(e.session_id == b for e in untouched.events)
    finally:
        app.close()


def test_a_reloaded_tab_resumes_its_session_and_a_new_tab_starts_fresh(interviews: Interviews) -> None:
    sid = started(interviews)
    resumed, chat, _grade, status, _setup = interviews.on_load(sid)
    assert resumed == sid
    assert chat and "Question 1 of 2" in chat[0]["content"]
    assert sid in status
    assert interviews.on_load("")[0] == ""
    assert interviews.on_load("no-such-session")[0] == ""


def test_a_spoken_answer_is_shown_for_review_and_graded_as_edited(
    interviews: Interviews,
    fake_speech,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    sid = started(interviews)
    audio = str(tmp_path / "answer.wav")
    fake_speech.transcripts[audio] = "Bee F sixteen keeps the exponent"
    text, figures, draft_id = interviews.on_audio(sid, audio)
    assert text == "Bee F sixteen keeps the exponent" and draft_id
    assert "words/min" in figures
    assert fake_speech.calls[0][1]  # Whisper is prompted with the question's terms
    events = interviews.manager.state(sid).events
    assert not any(isinstance(e, AnswerEvent) for e in events)  # nothing is sent before review

    drain(interviews.on_send_spoken(sid, "BF16 keeps the FP32 exponent range", draft_id))
    answer = next(e for e in interviews.manager.state(sid).events if isinstance(e, AnswerEvent))
    assert (answer.text, answer.audio) == ("BF16 keeps the FP32 exponent range", True)
    assert answer.delivery and answer.delivery["words_per_minute"] == 150.0

    with pytest.warns(UserWarning, match="already sent"):  # a second click sends nothing twice
        drain(interviews.on_send_spoken(sid, "again", draft_id))


def test_send_spoken_answer_transcribes_a_recording_whose_transcript_never_came(
    interviews: Interviews,
    fake_speech,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    """The recording reached the server but its transcript never reached the page (the
    connection dropped): "Send spoken answer" transcribes it then and sends it as heard."""
    sid = started(interviews)
    audio = str(tmp_path / "answer.wav")
    fake_speech.transcripts[audio] = "BF16 keeps the FP32 exponent range"
    drain(interviews.on_send_spoken(sid, "", "", audio))
    answer = next(e for e in interviews.manager.state(sid).events if isinstance(e, AnswerEvent))
    assert (answer.text, answer.audio) == ("BF16 keeps the FP32 exponent range", True)
    with pytest.warns(UserWarning, match="Nothing to send"):  # heard once already: not sent twice
        drain(interviews.on_send_spoken(sid, "", "", audio))


def test_a_voice_interview_sends_a_recording_when_it_stops_and_speaks_the_next_line(
    interviews: Interviews,
    fake_speech,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    """Hands-free: no "Send" between the end of the answer and the interviewer's next words,
    which come back as a WAV (a real voice: flite or espeak-ng) for the page to play."""
    import wave

    def said(parts: list[str]) -> float:  # seconds of speech streamed, part by part
        seconds = 0.0
        for part in parts:
            with wave.open(part) as wav:
                seconds += wav.getnframes() / wav.getframerate()
        return seconds

    sid = started(interviews)
    first = list(interviews.on_voice(sid, True))  # the first question, said aloud
    assert said(first) > 1.0
    text, draft_id = recorded(interviews, sid, fake_speech, tmp_path)
    with ThreadPoolExecutor(max_workers=1) as page:
        # the page asks for the voice as the recording is sent, and it waits for the grade
        voice = page.submit(lambda: list(interviews.on_voice_heard(sid, True, False, draft_id, text)))
        drain(interviews.on_hands_free(sid, text, draft_id, True, False))
        answer = next(e for e in interviews.manager.state(sid).events if isinstance(e, AnswerEvent))
        assert answer.text == "BF16 keeps the FP32 exponent range" and answer.audio
        reply = voice.result(timeout=60)  # the reaction's first sentence, then the next question
    assert len(reply) == 2 and not set(reply) & set(first) and said(reply) > 1.0
    assert not interviews._said_ahead  # the first sentence was said ahead, and used


def test_a_recording_that_was_not_sent_says_nothing(
    interviews: Interviews,
    fake_speech,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    sid = started(interviews)
    text, draft_id = recorded(interviews, sid, fake_speech, tmp_path)
    drain(interviews.on_hands_free(sid, text, draft_id, True, False))
    assert list(interviews.on_voice_heard(sid, True, False, draft_id, text))  # sent and said
    with pytest.warns(UserWarning, match="already sent"):  # the same recording again: not sent
        drain(interviews.on_hands_free(sid, text, draft_id, True, False))
    assert list(interviews.on_voice_heard(sid, True, False, draft_id, text)) == [gr.skip()]
    assert list(interviews.on_voice_heard(sid, True, True, draft_id, text)) == [gr.skip()]  # review on


def test_the_voice_of_a_hands_free_turn_is_said_though_the_page_cleared_its_draft_first(
    interviews: Interviews,
    fake_speech,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    """Under load the page can start the voice handler after the sending has cleared the draft
    (seen in a fresh-clone run: the transcript still there, the draft id empty): the voice is
    still said, for the session's last transcription. A recording that failed leaves none."""
    sid = started(interviews)
    text, draft_id = recorded(interviews, sid, fake_speech, tmp_path)
    with ThreadPoolExecutor(max_workers=1) as page:
        voice = page.submit(lambda: list(interviews.on_voice_heard(sid, True, False, "", text)))
        drain(interviews.on_hands_free(sid, text, draft_id, True, False))
        assert len(voice.result(timeout=60)) == 2  # the reaction, then the next question
    assert list(interviews.on_voice_heard(sid, True, False, "", "")) == [gr.skip()]  # used once


def test_outside_a_voice_interview_a_recording_waits_for_review_and_nothing_is_spoken(
    interviews: Interviews,
    fake_speech,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    sid = started(interviews)
    assert list(interviews.on_voice(sid, False)) == [gr.skip()]
    text, draft_id = recorded(interviews, sid, fake_speech, tmp_path)
    for voice_on, review in ((False, False), (True, True)):  # not a voice interview / review asked for
        outputs = drain(interviews.on_hands_free(sid, text, draft_id, voice_on, review))
        assert all(o == gr.skip() for o in outputs[0])
    assert not any(isinstance(e, AnswerEvent) for e in interviews.manager.state(sid).events)


def test_a_typed_answer_in_a_voice_interview_is_answered_aloud_too(interviews: Interviews) -> None:
    """Typed and spoken turns mix: a typed answer's reply is said, its first part
    synthesized as soon as the turn is graded."""
    sid = started(interviews)
    drain(interviews.on_send(sid, "BF16 keeps the FP32 exponent range.", True))
    ahead = {str(path) for path in interviews._said_ahead}
    reply = list(interviews.on_voice(sid, True))
    assert reply and reply[0] in ahead and not interviews._said_ahead
    drain(interviews.on_send(sid, "It needs no loss scaling.", False))  # not a voice interview
    assert not interviews._said_ahead


def test_a_missing_voice_is_a_notice_and_the_session_goes_on(
    interviews: Interviews,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    sid = started(interviews)
    monkeypatch.setattr(interviews.settings, "voice", "no-such-voice")
    with pytest.warns(UserWarning, match="voice is off: Unknown voice"):
        assert list(interviews.on_voice(sid, True)) == [None]
    send_result = drain(interviews.on_send(sid, "An answer typed instead."))
    assert send_result  # the session answers as before
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once: the next line is silent, with no second notice
        assert list(interviews.on_voice(sid, True)) == [None]


@pytest.mark.parametrize(
    ("problem", "message"),
    [
        ("corrupt", "answer.wav: it is corrupt"),
        ("silence", "No speech detected"),
        ("uh,", "No speech detected"),
    ],
)
def test_bad_audio_or_silence_warns_and_submits_nothing(
    interviews: Interviews,
    fake_speech,
    tmp_path: Path,
    problem: str,
    message: str,  # type: ignore[no-untyped-def]
) -> None:
    sid = started(interviews)
    audio = str(tmp_path / "answer.wav")
    corrupt = BadAudio(f"Could not decode {audio}: it is corrupt.")
    fake_speech.transcripts[audio] = {"corrupt": corrupt, "silence": ""}.get(problem, problem)
    before = len(interviews.manager.state(sid).events)
    with pytest.warns(UserWarning, match=message) as warned:
        outputs = interviews.on_audio(sid, audio)
    assert str(tmp_path) not in str(warned[0].message)  # the upload's name, not the server's path
    assert all(o == gr.skip() for o in outputs)  # the transcript box keeps what it had
    with pytest.warns(UserWarning, match="Record or upload"):
        drain(interviews.on_send_spoken(sid, "", ""))
    assert len(interviews.manager.state(sid).events) == before  # no phantom answer


def test_the_graphs_audio_path_refuses_silence_too(fake_speech) -> None:  # type: ignore[no-untyped-def]
    fake_speech.transcripts["silence.wav"] = ""
    with pytest.raises(BadAudio, match="No speech"):
        ReviewedSpeech(fake_speech).transcribe("silence.wav", [])


def test_a_failed_send_keeps_the_typed_answer(interviews: Interviews) -> None:
    sid = started(interviews, questions=1)
    drain(interviews.on_send(sid, "/end"))
    with pytest.warns(UserWarning, match="finished"):
        outputs = drain(interviews.on_send(sid, "my long answer"))
    assert outputs[-1][-1] == "my long answer"


def test_the_default_bind_is_localhost_without_share_or_password(settings) -> None:  # type: ignore[no-untyped-def]
    args = build_parser().parse_args(["ui"])
    assert (args.host, args.port, args.share) == ("127.0.0.1", 7860, False)
    options = launch_options(settings, args.host, args.port, args.share)
    assert (options["server_name"], options["share"], options["auth"]) == ("127.0.0.1", False, None)


def test_auth_is_wired_when_set(monkeypatch: pytest.MonkeyPatch, indexed_home: Path) -> None:
    monkeypatch.setenv("INTERVIEWER_AUTH", "alice:s3cret-pass")
    settings = load_settings()
    assert launch_options(settings)["auth"] == ("alice", "s3cret-pass")

    launched: dict[str, Any] = {}
    monkeypatch.setattr(gr.Blocks, "launch", lambda self, **kw: launched.update(kw))
    monkeypatch.setattr(Interviews, "warm_up_in_background", lambda self: None)
    run_ui(settings, argparse.Namespace(host="0.0.0.0", port=7999, share=False))
    assert (launched["server_name"], launched["server_port"]) == ("0.0.0.0", 7999)
    assert launched["auth"] == ("alice", "s3cret-pass") and launched["share"] is False

    monkeypatch.setenv("INTERVIEWER_AUTH", "no-colon")
    with pytest.raises(BadInput, match="user:password"):
        launch_options(load_settings())


def test_no_key_reaches_the_page_or_a_warning(
    monkeypatch: pytest.MonkeyPatch,
    settings,
    app_manager: SessionManager,  # type: ignore[no-untyped-def]
) -> None:
    from interviewer.errors import MissingCredentials

    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    app = build_app(settings, app_manager)
    assert SECRET not in str(app.get_config_file())
    interviews = Interviews(settings, app_manager)
    sid = started(interviews)

    def leaky(*args: Any) -> Iterator[Any]:
        raise MissingCredentials(f"The key {SECRET} was refused.")

    monkeypatch.setattr(app_manager, "stream", leaky)
    with pytest.warns(UserWarning) as warned:
        drain(interviews.on_command(sid, "/hint"))
    assert "refused" in str(warned[0].message) and SECRET not in str(warned[0].message)


def test_llm_tokens_stream_into_the_chat(monkeypatch: pytest.MonkeyPatch, interviews: Interviews) -> None:
    from interviewer.interview.state import FollowUpEvent, TokenEvent

    sid = started(interviews)
    pieces = ["How would ", "you check that?"]

    def streamed(session_id: str, message: Any) -> Iterator[Any]:
        yield from (TokenEvent(session_id, "004-01", p, of="follow_up") for p in pieces)
        yield FollowUpEvent(session_id, "004-01", "".join(pieces), point="p", number=1)

    monkeypatch.setattr(interviews.manager, "stream", streamed)
    shown = [chat[-1]["content"] for chat, _grade, _status, _msg in interviews.on_send(sid, "my answer")]
    assert "How would  ▌" in shown and "How would you check that? ▌" in shown  # growing, with a cursor
    statuses = [status for _chat, _grade, status, _msg in interviews.on_send(sid, "again")]
    assert statuses[0].endswith("working…") and not statuses[-1].endswith("working…")


def test_the_report_tab_shows_charts_and_offers_both_downloads(interviews: Interviews) -> None:
    sid = started(interviews, questions=1)
    drain(interviews.on_send(sid, "/answer"))  # the last question: the session ends
    report, mastery, scores, grill, speech, md, html = interviews.on_finished(sid, "This session")
    assert report.startswith(f"# Weakness report — session {sid}")
    assert mastery is not None and scores is not None and grill is not None
    assert speech is None  # no spoken answer, no speech chart
    assert Path(md).read_text().startswith("# Weakness report")
    assert "data:image/png;base64," in Path(html).read_text()
    assert "No session in this tab" in interviews.on_report("", "This session")[0]
    assert interviews.on_report("", "All sessions")[0].startswith("# Weakness report — all sessions")


def test_closing_stops_the_background_embedding_and_waits_for_it(interviews: Interviews) -> None:
    """`interviewer ui` exiting (Ctrl-C, SIGTERM) while the warm-up still embeds the bank must
    not leave a thread inside torch: the interpreter's exit could abort (SIGABRT)."""
    import threading

    asked_to_stop = threading.Event()

    class Embedding:  # the bank's rubric vectors, a chunk at a time until asked to stop
        def prime_bank(self, stop: threading.Event) -> tuple[int, int]:
            if stop.wait(30):
                asked_to_stop.set()
            return 0, 0

    priming = threading.Thread(target=interviews._prime_bank, args=(Embedding(),), daemon=True)
    interviews._priming = priming
    priming.start()
    interviews.settle(timeout_s=30)
    assert asked_to_stop.is_set() and not priming.is_alive()
