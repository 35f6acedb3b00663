"""A voice interview's turn in the real app, timed in the browser.

    python evals/speech/voice_turn_browser.py [--turns 8] [--voice piper]

Starts `interviewer ui` (a fresh data directory), opens it in Debian's Chromium with a fake
microphone that plays a 5 s espeak-ng answer, ticks Voice interview and answers `--turns`
questions by push to talk. For each turn it reports, from the moment Stop is pressed (the
end of the answer): the answer shown in the chat (upload, transcription, grade) and the
interviewer's next line starting to play (its synthesis, the WAV's fetch). `interviewer
bench` times the same turn in process; this adds the browser, the upload and Gradio's
events. Writes evals/speech/voice-turn-browser.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHROMIUM = next((p for p in ("/usr/lib/chromium/chromium", "/usr/bin/chromium") if Path(p).exists()), None)
ANSWER = "Gradient clipping caps the gradient norm, so one bad batch cannot move the weights much."
TIMES = """window.__played = [];
const play = HTMLMediaElement.prototype.play;
HTMLMediaElement.prototype.play = function () {
  window.__played.push(performance.now());
  return play.apply(this, arguments);
};"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def p95(xs: list[float]) -> float:
    return statistics.quantiles(xs, n=20)[18] if len(xs) >= 2 else xs[0]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=8)
    ap.add_argument("--voice", default="auto")
    ap.add_argument("--out", type=Path, default=HERE)
    ap.add_argument("--log", type=Path, help="keep the app's debug log here (where each turn's time goes)")
    args = ap.parse_args(argv)
    if CHROMIUM is None or not shutil.which("espeak-ng") or not shutil.which("sox"):
        print(
            "Needs chromium, espeak-ng and sox (apt-get install -y chromium espeak-ng sox)", file=sys.stderr
        )
        return 2
    from playwright.sync_api import sync_playwright

    tmp = Path(tempfile.mkdtemp(prefix="voice-turn-"))
    said, wav = tmp / "said.wav", tmp / "answer.wav"
    subprocess.run(["espeak-ng", "-v", "en-us", "-w", str(said), ANSWER], check=True)
    subprocess.run(["sox", str(said), "-r", "16000", str(wav), "pad", "0", "5"], check=True)
    port = free_port()
    env = {**os.environ, "INTERVIEWER_HOME": str(tmp / "home"), "INTERVIEWER_VOICE": args.voice}
    log = open(args.log, "w") if args.log else subprocess.DEVNULL  # noqa: SIM115 (closed below)
    if args.log:
        env["INTERVIEWER_LOG_LEVEL"] = "debug"
    app = subprocess.Popen([sys.executable, "-m", "interviewer.cli", "ui", "--port", str(port)], env=env,
                           stdout=subprocess.DEVNULL, stderr=log)  # fmt: skip
    shown, heard = [], []
    try:
        browser_args = ["--no-sandbox", "--disable-gpu", "--use-fake-device-for-media-stream",
                        "--use-fake-ui-for-media-stream", f"--use-file-for-fake-audio-capture={wav}",
                        "--autoplay-policy=no-user-gesture-required"]  # fmt: skip
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=browser_args)
            context = browser.new_context(
                viewport={"width": 1400, "height": 1000}, permissions=["microphone"]
            )
            context.add_init_script(TIMES)
            page = context.new_page()
            for _ in range(180):  # the first start builds the index
                try:
                    page.goto(f"http://127.0.0.1:{port}/")
                    break
                except Exception:
                    time.sleep(1)
            page.wait_for_selector("#start", timeout=120_000)
            page.check("#voice-mode input[type=checkbox]")
            page.click("#mode label:has-text('drill')")
            page.fill("#questions input[type=number]", str(args.turns + 1))
            page.press("#questions input[type=number]", "Enter")
            page.click("#start")
            page.wait_for_selector("text=Question 1 of", timeout=120_000)
            page.wait_for_function("window.__played.length >= 1", timeout=60_000)
            users = '#chat [data-testid="user"]'
            for n in range(args.turns):
                time.sleep(1.0)
                if page.locator("#audio button[aria-label='Record audio']").count():
                    page.click("#audio button[aria-label='Record audio']")
                page.locator("#audio button", has_text="Record").first.click()
                stop = page.locator("#audio button", has_text="Stop").first
                stop.wait_for(state="visible", timeout=30_000)
                time.sleep(5.5)  # the answer: about 5 s of speech
                plays, answers = page.evaluate("window.__played.length"), page.locator(users).count()
                t0 = page.evaluate("performance.now()")
                stop.click()
                page.wait_for_function(
                    f"document.querySelectorAll('{users}').length > {answers}", timeout=60_000, polling=20
                )
                t1 = page.evaluate("performance.now()")
                page.wait_for_function(f"window.__played.length > {plays}", timeout=60_000)
                t2 = page.evaluate(f"window.__played[{plays}]")
                shown.append((t1 - t0) / 1000)
                heard.append((t2 - t0) / 1000)
                print(
                    f"turn {n + 1}: answer shown {shown[-1]:.2f} s, voice starts {heard[-1]:.2f} s",
                    flush=True,
                )
            browser.close()
    finally:
        app.terminate()
        app.wait(timeout=30)
        if args.log:
            log.close()
        shutil.rmtree(tmp, ignore_errors=True)
    later = heard[1:] or heard  # the first turn also loads Whisper
    result = {
        "turns": len(heard), "voice": args.voice, "answer_shown_s": shown, "voice_starts_s": heard,
        "voice_starts_p50_s": round(statistics.median(later), 3), "voice_starts_p95_s": round(p95(later), 3),
        "first_turn_s": round(heard[0], 3),
    }  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "voice-turn-browser.json").write_text(json.dumps(result, indent=1) + "\n")
    print(f"end of answer -> voice starts (after the first turn): p50 {result['voice_starts_p50_s']:.2f} s, "
          f"p95 {result['voice_starts_p95_s']:.2f} s; first turn {result['first_turn_s']:.2f} s")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
