"""The page of the web app: components, their elem_ids, and which handler each event calls.

Two tabs. *Interview*: session setup, the chat, the answer box and the command
buttons, the grade panel, and voice (record or upload -> editable transcript ->
send). *Report*: the weakness report with its charts and downloads.
Browser tests select by these ids: #msg #send #chat #audio #transcript #grade
#hint #reveal #skip #end #report #start #voice-mode #review #interviewer-voice
(and #status #send-voice #sid #mic-notice #replay-voice).

The handlers live in handlers.py (`Interviews`); this module only lays out and wires.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import gradio as gr

from interviewer.corpus.schema import TOPICS
from interviewer.grading import GRADERS

if TYPE_CHECKING:
    from interviewer.app.handlers import Interviews

SESSION_KEY = "interviewer-session-id"
# The tab's own storage: it survives a reload, and another tab has its own.
READ_SESSION_JS = f"(stored) => [sessionStorage.getItem('{SESSION_KEY}') || '']"
SAVE_SESSION_JS = f"(sid) => {{ sessionStorage.setItem('{SESSION_KEY}', sid || ''); return []; }}"
# In a voice interview the page ends an answer by itself: while the recorder runs, it
# listens to the microphone's level and presses Stop once speech has been followed by
# `silence_s` of quiet (a thinking pause is shorter). Stop by hand always works.
END_OF_ANSWER_JS = """
<script>
(() => {
  const SILENCE_S = %(silence_s)s, LEVEL = 0.015;
  const BLOCKED = 'The microphone is blocked for this page: allow it in the browser (the icon '
    + 'by the address bar), then press Record again. Or type your answer: the interview goes on.';
  const MISSING = 'No microphone found: connect one and press Record again, or type your answer.';
  let watching = false, blocked = false;
  const notice = (text) => {
    const box = document.querySelector('#mic-notice');
    if (box) { box.innerText = text; box.style.display = text ? '' : 'none'; }
  };
  // A dropped connection as an answer ends loses the upload, and Gradio's recorder does not
  // send it again: the page keeps its own copy of each voice-mode answer until the answer
  // gets through, and once back online uploads that copy (which sends it, as any recording).
  const KEPT = 'The connection dropped: your answer is kept and is sent when the connection '
    + 'is back. Or type your answer.';
  const OFFLINE = 'The connection dropped: the interview goes on when it is back; nothing is lost.';
  const sleep = (ms) => new Promise(r => setTimeout(r, ms));
  const answers = () => document.querySelectorAll('#chat [data-testid="user"]').length;
  let kept = null, keptAt = 0, pending = false, lost = false;
  const through = () => answers() > keptAt
    || (document.querySelector('#transcript textarea')?.value || '').trim() !== '';
  setInterval(() => { if (pending && !lost && through()) { pending = false; kept = null; } }, 300);
  async function resend(blob) {
    const click = (label) => document.querySelector(`#audio button[aria-label="${label}"]`)?.click();
    click('Clear');
    await sleep(300);
    click('Upload file');
    let input = null;
    for (let i = 0; i < 30 && !(input = document.querySelector('#audio input[type=file]')); i++) await sleep(100);
    if (!input) { notice('Your answer could not be sent again: press Record and say it once more.'); return; }
    const file = new File([blob], 'answer.webm', {type: blob.type || 'audio/webm'});
    const files = new DataTransfer();
    files.items.add(file);
    input.files = files.files;
    const before = answers();
    input.dispatchEvent(new Event('change', {bubbles: true}));
    for (let i = 0; i < 600 && answers() <= before; i++) await sleep(100);
    click('Record audio');  // back to the microphone for the next answer
  }
  window.addEventListener('offline', () => { lost = watching || pending; notice(lost ? KEPT : OFFLINE); });
  window.addEventListener('online', async () => {
    if ([KEPT, OFFLINE].includes(document.querySelector('#mic-notice')?.innerText)) notice('');
    while (lost && watching) await sleep(200);  // the answer is still being recorded
    if (lost && kept) { lost = pending = false; const blob = kept; kept = null; await resend(blob); }
  });
  navigator.permissions?.query({name: 'microphone'}).then(p => {
    if (p.state === 'denied') { blocked = true; notice(BLOCKED); }
    p.onchange = () => {
      blocked = p.state === 'denied';
      notice(blocked ? BLOCKED : '');
    };
  }).catch(() => {});
  const stopButton = () => [...document.querySelectorAll('#audio button')].find(b => /Stop/.test(b.innerText));
  const voiceMode = () => document.querySelector('#voice-mode input[type=checkbox]')?.checked;
  async function watch() {
    watching = true;
    let stream, ctx;
    try {
      stream = await navigator.mediaDevices.getUserMedia({audio: true});
      ctx = new AudioContext();
      const meter = ctx.createAnalyser();
      meter.fftSize = 2048;
      ctx.createMediaStreamSource(stream).connect(meter);
      const copy = new MediaRecorder(stream), parts = [];
      copy.ondataavailable = (e) => parts.push(e.data);
      const copied = new Promise(r => { copy.onstop = r; });
      copy.start();
      keptAt = answers();
      const samples = new Float32Array(meter.fftSize);
      let spoke = false, quietSince = null;
      while (stopButton()) {
        await sleep(100);
        meter.getFloatTimeDomainData(samples);
        const level = Math.sqrt(samples.reduce((s, x) => s + x * x, 0) / samples.length);
        const now = performance.now();
        if (level > LEVEL) { spoke = true; quietSince = null; }
        else if (spoke) {
          quietSince = quietSince ?? now;
          if (now - quietSince > SILENCE_S * 1000) { stopButton()?.click(); break; }
        }
      }
      copy.stop();
      await copied;
      kept = new Blob(parts, {type: copy.mimeType});
      pending = true;  // until its transcript or the answer shows up
    } catch (err) {
      // refused or absent: say so once and stop asking (until the permission changes)
      if (['NotAllowedError', 'SecurityError', 'NotFoundError'].includes(err?.name)) {
        blocked = true;
        notice(err.name === 'NotFoundError' ? MISSING : BLOCKED);
      }
      console.warn('end-of-answer detection is off; press Stop when done', err);
    } finally {
      stream?.getTracks().forEach(t => t.stop());
      ctx?.close();
      watching = false;
    }
  }
  new MutationObserver(() => {
    if (!watching && !blocked && voiceMode() && stopButton()) watch();
  }).observe(document.documentElement, {childList: true, subtree: true});
})();
</script>
"""
REPLAY_JS = """() => {
  const line = document.querySelector('#interviewer-voice audio');
  if (line) { line.currentTime = 0; line.play(); }
}"""
PRIVATE = "private"  # UI events stay out of the API: programs use start, answer, transcribe
REPORT_SCOPES = ["This session", "All sessions"]
CSS = """
#grade { max-height: 560px; overflow-y: auto; }
#status { color: var(--body-text-color-subdued); }
#commands button { min-width: 0; }
"""


def _choices(interviews: Interviews) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(topic choices with their question counts, document choices) from the bank."""
    bank = interviews.manager.services.bank
    counts = {t: sum(q.topic == t for q in bank) for t in TOPICS}
    topics = [(f"{t} ({n})", t) for t, n in counts.items() if n]
    sources = sorted({q.source for q in bank})
    names = {"002": "002 — the grill (45 items)"}
    return topics, [("any document", ""), *((names.get(s, s), s) for s in sources)]


def layout(interviews: Interviews, max_concurrent: int) -> gr.Blocks:

    topics, sources = _choices(interviews)
    with gr.Blocks(title="Interviewer — ML training mock interviews") as app:
        session = gr.State("")  # this tab's session id (server side)
        stored = gr.Textbox(visible="hidden", elem_id="sid")  # mirrored into sessionStorage
        draft = gr.State("")  # id of the transcript under review
        gr.Markdown("## Interviewer · mock interviews on training ML models")
        with gr.Tabs(elem_id="tabs") as tabs:
            with gr.Tab("Interview", id="interview", elem_id="interview-tab"):
                with gr.Accordion("New session", open=True, elem_id="setup") as setup:
                    with gr.Row():
                        topic = gr.Dropdown(
                            topics, multiselect=True, label="Topics (none: all)", scale=3, elem_id="topics"
                        )
                        source = gr.Dropdown(sources, value="", label="Document", elem_id="source")
                        difficulty = gr.Dropdown(
                            [("any", ""), "easy", "medium", "hard"],
                            value="",
                            label="Difficulty",
                            elem_id="difficulty",
                        )
                    with gr.Row():
                        questions = gr.Slider(1, 20, value=3, step=1, label="Questions", elem_id="questions")
                        mode = gr.Radio(
                            [
                                ("interview (follow-ups)", "interview"),
                                ("drill (cold, no follow-ups)", "drill"),
                            ],
                            value="interview",
                            label="Mode",
                            elem_id="mode",
                        )
                        backend = gr.Dropdown(
                            list(GRADERS),
                            value=interviews.settings.backend,
                            label="Backend",
                            elem_id="backend",
                        )
                        start = gr.Button("Start", variant="primary", elem_id="start")
                    with gr.Row():
                        voice_mode = gr.Checkbox(
                            False,
                            label="Voice interview: the interviewer speaks; record your answer and "
                            "it is sent after a pause (or when you press Stop)",
                            elem_id="voice-mode",
                        )
                        review = gr.Checkbox(
                            False, label="Review each transcript before sending", elem_id="review"
                        )
                status = gr.Markdown(elem_id="status")
                with gr.Row(equal_height=False):
                    with gr.Column(scale=3):
                        chat = gr.Chatbot(
                            label="Interview",
                            height=480,
                            elem_id="chat",
                            buttons=["copy"],
                            group_consecutive_messages=False,
                        )
                        voiced = gr.Audio(
                            label="Interviewer (voice interview)",
                            type="filepath",
                            autoplay=True,
                            streaming=True,  # the first sentence plays while the rest is made
                            interactive=False,
                            elem_id="interviewer-voice",
                        )
                        # a streamed player has no play button of its own
                        gr.Button("Say it again", size="sm", elem_id="replay-voice").click(
                            None, None, None, js=REPLAY_JS, api_visibility=PRIVATE
                        )
                        msg = gr.Textbox(
                            label="Your answer",
                            lines=3,
                            elem_id="msg",
                            submit_btn=False,
                            placeholder="Type your answer (Enter: new line; Shift+Enter or Send: send it). "
                            "Commands: /hint /answer /skip /repeat /end",
                        )
                        with gr.Row(elem_id="commands"):
                            send = gr.Button("Send", variant="primary", elem_id="send")
                            hint = gr.Button("Hint", elem_id="hint")
                            reveal = gr.Button("Model answer", elem_id="reveal")
                            skip = gr.Button("Skip", elem_id="skip")
                            end = gr.Button("End session", variant="stop", elem_id="end")
                    with gr.Column(scale=2):
                        grade = gr.Markdown(label="Grade", elem_id="grade", container=True)
                        with gr.Accordion("Answer by voice", open=True, elem_id="voice"):
                            audio = gr.Audio(
                                sources=["upload", "microphone"],
                                type="filepath",
                                label="Record or upload your answer",
                                elem_id="audio",
                            )
                            # filled by the page when the microphone is refused or missing, or the connection drops
                            gr.HTML("", elem_id="mic-notice")
                            transcript = gr.Textbox(
                                label="Transcript (edit it, then send)",
                                lines=4,
                                interactive=True,
                                elem_id="transcript",
                            )
                            figures = gr.Markdown(elem_id="speech")
                            send_voice = gr.Button("Send spoken answer", elem_id="send-voice")
            with gr.Tab("Report", id="report-tab", elem_id="report-tab"):
                with gr.Row():
                    scope = gr.Radio(
                        REPORT_SCOPES, value=REPORT_SCOPES[0], label="Report on", elem_id="report-scope"
                    )
                    refresh = gr.Button("Refresh report", elem_id="report-refresh")
                    md_file = gr.DownloadButton("Download Markdown", elem_id="download-md")
                    html_file = gr.DownloadButton("Download HTML", elem_id="download-html")
                with gr.Row():
                    mastery = gr.Plot(label="Mastery by topic", show_label=False, elem_id="mastery")
                    scores = gr.Plot(label="Score per question", show_label=False, elem_id="scores")
                with gr.Row():
                    grill = gr.Plot(label="The grill, answered cold", show_label=False, elem_id="grill")
                    speech = gr.Plot(label="Speech", show_label=False, elem_id="speech-trend")
                report = gr.Markdown("*Press Refresh, or end a session.*", elem_id="report")

        panels = [chat, grade, status]
        spoken_outputs = [*panels, transcript, figures, draft, audio]  # a spoken answer sent
        report_outputs = [report, mastery, scores, grill, speech, md_file, html_file]

        app.load(
            interviews.on_load,
            [stored],
            [session, *panels, setup],
            js=READ_SESSION_JS,
            api_visibility=PRIVATE,
        )
        started = start.click(
            interviews.on_start,
            [topic, difficulty, source, questions, mode, backend],
            [session, stored, *panels, setup, msg, transcript, figures],
            api_visibility=PRIVATE,
        )
        started.then(None, [stored], None, js=SAVE_SESSION_JS, api_visibility=PRIVATE)

        # Every line is said, even one that comes while the last is still being synthesized
        # (a quick "/skip" or a short answer): Gradio's default trigger mode, "once", would drop
        # the voice of a turn whose previous voice event is still running.
        def speak_after(event: gr.events.Dependency) -> None:
            event.then(
                interviews.on_voice,
                [session, voice_mode],
                [voiced],
                trigger_mode="multiple",
                api_visibility=PRIVATE,
            )

        def after_turn(event: gr.events.Dependency) -> None:
            """A turn is over: refresh the report if the session ended, and say the next line."""
            event.then(interviews.on_finished, [session, scope], report_outputs, api_visibility=PRIVATE)
            speak_after(event)

        speak_after(started)
        for trigger in (send.click, msg.submit):
            after_turn(
                trigger(
                    interviews.on_send, [session, msg, voice_mode], [*panels, msg], api_visibility=PRIVATE
                )
            )
        for button, command in ((hint, "/hint"), (reveal, "/answer"), (skip, "/skip")):
            after_turn(
                button.click(
                    interviews.on_command, [session, gr.State(command)], panels, api_visibility=PRIVATE
                )
            )
        ended = end.click(interviews.on_command, [session, gr.State("/end")], panels, api_visibility=PRIVATE)
        ended.then(lambda: gr.Tabs(selected="report-tab"), None, tabs, api_visibility=PRIVATE).then(
            interviews.on_report, [session, scope], report_outputs, api_visibility=PRIVATE
        )
        for trigger in (audio.upload, audio.stop_recording):
            heard = trigger(
                interviews.on_audio,
                [session, audio],
                [transcript, figures, draft],
                concurrency_limit=2,
                concurrency_id="transcribe",
                api_visibility=PRIVATE,
            )
            sent = heard.then(
                interviews.on_hands_free,
                [session, transcript, draft, voice_mode, review],
                spoken_outputs,
                api_visibility=PRIVATE,
            )
            sent.then(interviews.on_finished, [session, scope], report_outputs, api_visibility=PRIVATE)
            # said alongside the sending, not after it: it waits for the grade on the server
            heard.then(
                interviews.on_voice_heard,
                [session, voice_mode, review, draft, transcript],
                [voiced],
                concurrency_limit=None,  # it mostly waits; speaking goes through the one voice worker
                trigger_mode="multiple",
                api_visibility=PRIVATE,
            )
        after_turn(
            send_voice.click(
                interviews.on_send_spoken,
                [session, transcript, draft, audio],
                spoken_outputs,
                api_visibility=PRIVATE,
            )
        )
        refresh.click(interviews.on_report, [session, scope], report_outputs, api_visibility=PRIVATE)
        scope.change(interviews.on_report, [session, scope], report_outputs, api_visibility=PRIVATE)

        gr.api(interviews.api_start, api_name="start")
        gr.api(interviews.api_answer, api_name="answer")
        gr.api(
            interviews.api_transcribe, api_name="transcribe", concurrency_limit=2, concurrency_id="transcribe"
        )
    app.queue(default_concurrency_limit=max_concurrent)
    return app
