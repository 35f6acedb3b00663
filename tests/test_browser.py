"""The app in a real browser: Debian's Chromium driven by Playwright, the app started by the CLI.

A typed two-question interview with one spoken answer (espeak-ng speech,
transcribed by Whisper), the grade panel, the end of the session and its
report; and two tabs at once, each its own session, a reload resuming one.
Screenshots and timings go to test-artifacts/ (gitignored).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REPO = Path(__file__).resolve().parent.parent
ARTIFACTS = REPO / "test-artifacts"
CHROMIUM = next((p for p in ("/usr/lib/chromium/chromium", "/usr/bin/chromium") if Path(p).exists()), None)
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run",
        # a fake microphone (it plays a tone) and no permission prompt, for the recording test
        "--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream"]  # fmt: skip
TIMINGS: dict[str, float] = {}
APP_LOG: dict[str, Path] = {}  # the app's log file, shown when a wait on the app times out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def app_url(built_index: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`interviewer ui` in a subprocess, on a free port, with a copy of the prebuilt index."""
    home = tmp_path_factory.mktemp("browser-home")
    shutil.copytree(built_index / "chroma", home / "chroma")
    shutil.copytree(
        built_index / "cache", home / "cache"
    )  # rubric vectors, as `interviewer index` leaves them
    port = free_port()
    # DEBUG: the log then says how long each transcription, grade and spoken line took
    env = {**os.environ, "INTERVIEWER_HOME": str(home), "GRADIO_ANALYTICS_ENABLED": "False",
           "INTERVIEWER_LOG_LEVEL": "DEBUG"}  # fmt: skip
    env.pop("OPENAI_API_KEY", None)
    APP_LOG["path"] = tmp_path_factory.mktemp("browser-log") / "ui.log"
    log = open(APP_LOG["path"], "w+")  # noqa: SIM115
    began = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "interviewer.cli", "ui", "--port", str(port)], cwd=REPO,
                            env=env, stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
    url = f"http://127.0.0.1:{port}/"
    try:
        while True:
            try:
                with urllib.request.urlopen(url, timeout=2) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.perf_counter() - began > 120:
                log.seek(0)
                pytest.fail(f"the app did not start:\n{log.read()[-3000:]}")
            time.sleep(0.25)
        TIMINGS["app_ready_s"] = round(time.perf_counter() - began, 1)
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)  # closes the app as Ctrl-C does (a worker ignores SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        ARTIFACTS.mkdir(exist_ok=True)
        (ARTIFACTS / "timings.json").write_text(json.dumps(TIMINGS, indent=2))


@pytest.fixture(scope="module")
def playwright() -> Iterator[Any]:
    """One Playwright per module (a second one in the same thread is refused)."""
    if CHROMIUM is None:
        pytest.skip("Chromium is not installed (apt-get install -y chromium chromium-driver)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="module")
def browser(playwright: Any) -> Iterator[Any]:
    browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
    yield browser
    browser.close()


@pytest.fixture(scope="module")
def bank() -> Any:
    from interviewer.corpus.bank import load_bank
    from interviewer.settings import load_settings

    return load_bank(load_settings())


def speak(words: str, folder: Path) -> Path:
    """A spoken answer: espeak-ng speech as a 16 kHz mono WAV."""
    if not (shutil.which("espeak-ng") and shutil.which("sox")):
        pytest.skip("espeak-ng and sox make the spoken answer (apt-get install -y espeak-ng sox)")
    raw, wav = folder / "raw.wav", folder / "answer.wav"
    subprocess.run(["espeak-ng", "-v", "en-us", "-s", "150", "-w", str(raw), words], check=True)
    subprocess.run(["sox", str(raw), "-r", "16000", "-c", "1", "-b", "16", str(wav)], check=True)
    return wav


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def text(page: Any, selector: str) -> str:
    return str(page.inner_text(selector))


def wait_text(page: Any, selector: str, needle: str, timeout_s: float = 60) -> None:
    page.wait_for_function(
        "([sel, needle]) => (document.querySelector(sel)?.innerText || '').includes(needle)",
        arg=[selector, needle], timeout=timeout_s * 1000,
    )  # fmt: skip


def choose(page: Any, dropdown: str, option: str) -> None:
    page.click(f"{dropdown} input")
    page.get_by_role("option", name=option, exact=True).click()


def start_session(page: Any, url: str, questions: int, source: str = "", difficulty: str = "") -> str:
    page.goto(url)
    page.wait_for_selector("#start")
    page.fill("#questions input[type=number]", str(questions))
    page.press("#questions input[type=number]", "Enter")
    if source:
        choose(page, "#source", source)
    if difficulty:
        choose(page, "#difficulty", difficulty)
    page.click("#start")
    wait_text(page, "#chat", f"Question 1 of {questions}", timeout_s=90)
    return text(page, "#status").split("Session ")[1].split(" ")[0]


def asked(page: Any) -> str:
    """The id of the question on screen, from its chat header ("Question 2 of 2 · 002-28 · ...")."""
    return str(re.findall(r"Question \d+ of \d+(?: \(repeated\))? · (\S+)", text(page, "#chat"))[-1])


def partial_answer(bank: Any, question_id: str) -> str:
    """An answer that covers some of the question's key points, in the rubric's words."""
    points = [kp.text for kp in bank.get(question_id).key_points if kp.core]
    return ". ".join(points[: max(1, len(points) // 2)]).capitalize() + "."


def settle(page: Any) -> None:
    """Wait until the turn in flight is over (the status says "working…" meanwhile)."""
    page.wait_for_function("!document.querySelector('#status').innerText.includes('working')", timeout=60_000)


def send_typed(page: Any, answer: str) -> float:
    """Type and send an answer; the seconds until its grade is on screen."""
    grades = page.locator('#chat [data-testid="bot"]', has_text="key points covered").count()
    page.fill("#msg textarea", answer)
    began = time.perf_counter()
    page.click("#send")
    page.wait_for_function(
        "n => [...document.querySelectorAll('#chat [data-testid=\"bot\"]')]"
        ".filter(m => m.innerText.includes('key points covered')).length > n", arg=grades, timeout=60_000,
    )  # fmt: skip
    return time.perf_counter() - began


def test_a_spoken_and_typed_interview_ends_with_its_report(
    app_url: str, browser: Any, bank: Any, tmp_path: Path
) -> None:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    began = time.perf_counter()  # the first start also waits for the warm-up (grading model)
    start_session(page, app_url, questions=2, source="002 — the grill (45 items)", difficulty="medium")
    TIMINGS["first_question_s"] = round(time.perf_counter() - began, 2)
    first = asked(page)
    assert first.startswith("002-")

    # Question 1, spoken: upload, review and edit the transcript, send it.
    wav = speak("Um, " + partial_answer(bank, first), tmp_path)
    page.set_input_files("#audio input[type=file]", str(wav))
    began = time.perf_counter()
    transcribed = "document.querySelector('#transcript textarea').value.length > 10"
    page.wait_for_function(transcribed, timeout=120_000)
    TIMINGS["transcribe_s"] = round(time.perf_counter() - began, 2)  # the first one loads Whisper
    heard = page.input_value("#transcript textarea")
    assert "words/min" in text(page, "#speech")  # the figures are shown with the editable transcript
    assert "Spoken answer" not in text(page, "#chat")  # nothing is sent before the review
    page.fill("#transcript textarea", heard + " That is my answer.")
    shot(page, "1-transcript-review")
    page.click("#send-voice")
    wait_text(page, "#chat", "Spoken answer")
    wait_text(page, "#grade", "Speech.")
    settle(page)
    assert "That is my answer." in text(page, "#chat")  # the edited text is what was graded
    assert page.input_value("#transcript textarea") == ""
    assert "“" in text(page, "#grade")  # the evidence, quoted
    shot(page, "2-mid-session")
    if "follow-up" in text(page, "#status"):
        send_typed(page, bank.get(first).reference)  # the model answer covers the point asked about
        page.wait_for_function(  # the follow-up's grade, or the question's debrief when it was the last
            "() => ['follow-up scored', 'debrief'].some(w => document.querySelector('#grade').innerText.includes(w))",
            timeout=60_000,
        )
        settle(page)  # the turn may still be streaming its next follow-up
    if "follow-up" in text(page, "#status"):
        page.click("#skip")  # on to question 2
    wait_text(page, "#status", "question 2 of 2 · your answer")

    # Question 2, typed.
    TIMINGS["turn_s"] = round(send_typed(page, partial_answer(bank, asked(page))), 2)
    assert "Covered" in text(page, "#grade")
    shot(page, "3-typed-answer")

    page.click("#end")
    wait_text(page, "#report", "Weakness report", timeout_s=60)
    report = text(page, "#report")
    assert "Mastery by topic" in report and "/45" in report and "Recommended next drill" in report
    assert "Words/min" in report  # the spoken answer's figures
    assert page.locator("#mastery img, #mastery canvas, #mastery svg").count() > 0
    shot(page, "4-report")
    page.close()


def test_two_tabs_are_two_sessions_and_a_reload_resumes_its_own(app_url: str, browser: Any) -> None:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    first, second = context.new_page(), context.new_page()
    sid_a = start_session(first, app_url, questions=2)
    sid_b = start_session(second, app_url, questions=2)
    assert sid_a != sid_b
    send_typed(first, "Only the first tab answers this.")
    assert "Only the first tab" not in text(second, "#chat")

    first.reload()
    wait_text(first, "#status", sid_a)
    assert "Only the first tab answers this." in text(first, "#chat")  # the reload resumed its session
    second.reload()
    wait_text(second, "#status", sid_b)
    assert "Only the first tab" not in text(second, "#chat")
    shot(first, "5-tab-after-reload")
    context.close()


def test_a_recording_without_speech_warns_and_submits_nothing(app_url: str, browser: Any) -> None:
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, permissions=["microphone"])
    page = context.new_page()
    start_session(page, app_url, questions=1)
    page.click("#audio button[aria-label='Record audio']")
    page.locator("#audio button", has_text="Record").first.click()
    stop = page.locator("#audio button", has_text="Stop").first
    stop.wait_for(state="visible", timeout=30_000)  # the recorder has the (fake) microphone
    time.sleep(3)  # three seconds of the fake device's tone
    stop.click()
    toasts, heard = wait_for_toast_or_transcript(page, timeout_s=120)
    shot(page, "6-recording-without-speech")
    assert heard == "", f"a tone was transcribed as speech: {heard!r}"
    assert any("No speech detected" in t for t in toasts), (
        f"no 'No speech detected' warning; toasts: {toasts}"
    )
    page.click("#send-voice")  # nothing to send: a warning, no phantom answer
    page.wait_for_selector("[data-testid='toast-body']:has-text('Nothing to send')", timeout=10_000)
    settle(page)
    assert page.locator('#chat [data-testid="user"]').count() == 0
    context.close()


def wait_for_toast_or_transcript(page: Any, timeout_s: float) -> tuple[list[str], str]:
    """The toasts on screen and the transcript, once either shows (both empty after `timeout_s`)."""
    deadline = time.perf_counter() + timeout_s
    while True:
        toasts = [str(t) for t in page.locator("[data-testid='toast-body']").all_inner_texts()]
        heard = str(page.input_value("#transcript textarea"))
        if toasts or heard or time.perf_counter() > deadline:
            return toasts, heard
        time.sleep(0.2)


# Every play() of an audio element, in the page or detached (Gradio's player keeps its own).
COUNT_PLAYS = """
window.__played = [];
const play = HTMLMediaElement.prototype.play;
HTMLMediaElement.prototype.play = function () {
  window.__played.push(this.currentSrc || this.src || '(stream)');
  return play.apply(this, arguments);
};
"""


def record_answer(page: Any, push_to_talk_s: float | None = None) -> None:
    """Record from the fake microphone (it plays the answer's WAV, then its silence, in a
    loop). With `push_to_talk_s`, press Stop after that long; else leave it to the page,
    which stops after the pause that follows speech."""
    if page.locator("#audio button[aria-label='Record audio']").count():
        page.click("#audio button[aria-label='Record audio']")
    page.locator("#audio button", has_text="Record").first.click()
    stop = page.locator("#audio button", has_text="Stop").first
    stop.wait_for(state="visible", timeout=30_000)
    if push_to_talk_s is not None:
        time.sleep(push_to_talk_s)
        try:
            stop.click(timeout=2_000)
        except Exception as exc:  # in a voice interview the page may have heard the pause first
            if "Timeout" not in type(exc).__name__ or stop.count():
                raise


def plays(page: Any) -> int:
    return int(page.evaluate("window.__played.length"))


def wait_for_play(page: Any, more_than: int, timeout_s: float) -> None:
    """Wait until the page has played more than `more_than` audio elements; on a timeout, fail
    with what was played and the app's own account of its last lines (synthesis times)."""
    try:
        page.wait_for_function(f"window.__played.length > {more_than}", timeout=timeout_s * 1000)
    except Exception as exc:
        if "Timeout" not in type(exc).__name__:
            raise
        played = page.evaluate("window.__played")
        lines = APP_LOG["path"].read_text(encoding="utf-8", errors="replace").splitlines() if APP_LOG else []
        said = [line for line in lines if "spoke" in line or "voice" in line.lower()][-15:]
        pytest.fail(
            f"no new audio played within {timeout_s:.0f} s (played so far: {played}).\n"
            "The app's last voice lines:\n" + "\n".join(said) + "\nIts log's end:\n" + "\n".join(lines[-25:])
        )


SPOKEN_ANSWER = "Gradient clipping caps the gradient norm, so one bad batch cannot move the weights much."


def answer_then_quiet(folder: Path) -> Path:
    """The fake microphone's sound (it loops): a spoken answer, then 5 s of quiet."""
    wav = folder / "answer-then-quiet.wav"
    subprocess.run(["sox", str(speak(SPOKEN_ANSWER, folder)), str(wav), "pad", "0", "5"], check=True)
    return wav


def voice_browser(playwright: Any, microphone: Path | None) -> tuple[Any, Any, Any]:
    """(browser, context, page): a fresh Chromium that plays audio by itself and counts what
    it plays. With `microphone`, that WAV is the microphone, allowed; without, it is refused."""
    args = [*ARGS, "--autoplay-policy=no-user-gesture-required"]
    if microphone is None:
        args.remove("--use-fake-ui-for-media-stream")  # the permission prompt is refused
    else:
        args.append(f"--use-file-for-fake-audio-capture={microphone}")
    browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=args)
    allowed = {"permissions": ["microphone"]} if microphone else {}
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, **allowed)
    context.add_init_script(COUNT_PLAYS)
    return browser, context, context.new_page()


def start_voice_interview(page: Any, app_url: str) -> None:
    """A two-question drill in voice mode, up to the first question heard."""
    page.goto(app_url)
    page.wait_for_selector("#start")
    page.check("#voice-mode input[type=checkbox]")
    page.click("#mode label:has-text('drill')")
    page.fill("#questions input[type=number]", "2")
    page.press("#questions input[type=number]", "Enter")
    page.click("#start")
    wait_text(page, "#chat", "Question 1 of 2", timeout_s=90)
    wait_for_play(page, 0, timeout_s=60)  # question 1, heard


def test_a_voice_interview_is_spoken_and_answered_without_a_click_between_turns(
    app_url: str, playwright: Any, tmp_path: Path
) -> None:
    """Two questions answered aloud: the interviewer's lines play by themselves; the first
    answer ends when the candidate falls quiet (no click between Record and the next
    question), the second when Stop is pressed (push to talk)."""
    browser, context, page = voice_browser(playwright, answer_then_quiet(tmp_path))
    start_voice_interview(page, app_url)
    heard_first = plays(page)

    record_answer(page)  # the page hears the pause and stops: no click after Record
    wait_text(page, "#chat", "Spoken answer", timeout_s=120)
    wait_text(page, "#chat", "Question 2 of 2", timeout_s=60)
    # the next line plays by itself. Its synthesis is quick (its first part in 0.4 s in the app's
    # log of a failed run); in two of fourteen fresh-clone runs it never played and the rest of
    # the line was never asked for: the hands-free voice did not start or stopped before its
    # first part went out, not yet found (the README's test section; the app logs each step)
    wait_for_play(page, heard_first, timeout_s=120)
    shot(page, "7-voice-interview")
    # it was transcribed: the fake microphone loops its WAV, so Record may start mid-answer and
    # hear only its end ("... cannot move the weights much"); some of its words must be there
    said = page.locator('#chat [data-testid="user"]').first.inner_text().lower()
    assert any(word in said for word in ("gradient", "clipping", "bad batch", "weights")), said

    record_answer(page, push_to_talk_s=4)  # push to talk: Stop by hand
    page.wait_for_function(
        "document.querySelectorAll('#chat [data-testid=\"user\"]').length >= 2", timeout=120_000
    )
    settle(page)
    assert page.locator('#chat [data-testid="user"]', has_text="Spoken answer").count() == 2
    sources = page.evaluate("window.__played")
    assert len(set(sources)) >= 2, sources  # each line is its own audio
    page.wait_for_function(  # the last line, streamed whole, stays in the player
        "(document.querySelector('#interviewer-voice audio')?.duration || 0) > 1", timeout=30_000
    )
    played = plays(page)
    page.click("#replay-voice")  # and "Say it again" plays it from the start
    page.wait_for_function(f"window.__played.length > {played}", timeout=10_000)
    context.close()
    browser.close()


def test_a_refused_microphone_says_so_once_and_the_voice_interview_goes_on_typed(
    app_url: str, playwright: Any
) -> None:
    """The candidate refuses the microphone: a notice says how to allow it or to type, the page
    stops asking (no loop of refused requests), and a typed answer carries the interview on,
    still spoken."""
    browser, context, page = voice_browser(playwright, microphone=None)
    refused: list[str] = []
    page.on("console", lambda m: refused.append(m.text) if "NotAllowedError" in m.text else None)
    start_voice_interview(page, app_url)

    if page.locator("#audio button[aria-label='Record audio']").count():
        page.click("#audio button[aria-label='Record audio']")
    page.locator("#audio button", has_text="Record").first.click()
    wait_text(page, "#mic-notice", "microphone is blocked", timeout_s=20)
    assert "type your answer" in text(page, "#mic-notice")
    time.sleep(2)
    assert len(refused) <= 2, refused[:3]  # asked once (Gradio's recorder and the level meter)
    shot(page, "8-microphone-refused")

    heard = plays(page)
    page.fill("#msg textarea", "Clip the gradients, so one bad batch cannot move the weights much.")
    page.click("#send")
    wait_text(page, "#chat", "Question 2 of 2", timeout_s=60)
    wait_for_play(page, heard, timeout_s=60)  # still spoken
    context.close()
    browser.close()


def test_an_answer_recorded_while_the_connection_drops_is_sent_when_it_is_back(
    app_url: str, playwright: Any, tmp_path: Path
) -> None:
    """The connection drops while the candidate speaks: the page says the answer is kept,
    and once back online it uploads its own copy, which is transcribed and sent; the
    interview goes on to the next question and the recorder is back on the microphone."""
    browser, context, page = voice_browser(playwright, answer_then_quiet(tmp_path))
    start_voice_interview(page, app_url)

    record_answer(page)
    time.sleep(1.5)
    context.set_offline(True)  # mid-answer
    wait_text(page, "#mic-notice", "your answer is kept", timeout_s=10)
    stop = page.locator("#audio button", has_text="Stop").first
    stop.wait_for(state="hidden", timeout=30_000)  # the answer ends (the page stops the recorder) ...
    time.sleep(2)  # ... and its upload fails
    assert "Spoken answer" not in text(page, "#chat")
    shot(page, "9-connection-dropped")
    context.set_offline(False)

    wait_text(page, "#chat", "Spoken answer", timeout_s=120)
    wait_text(page, "#chat", "Question 2 of 2", timeout_s=60)
    answer = page.locator('#chat [data-testid="user"]').first.inner_text()
    # said before the drop (tiny.en under a full load may mishear a word: "radiant", "match")
    assert any(w in answer.lower() for w in ("batch", "gradient", "clipping", "norm")), answer
    assert text(page, "#mic-notice").strip() == ""
    page.locator("#audio button", has_text="Record").first.wait_for(state="visible", timeout=10_000)
    context.close()
    browser.close()
