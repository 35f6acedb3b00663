"""The weakness report as Markdown and as one self-contained HTML file.

    to_markdown(report)            # text tables and bars; what `interviewer report` prints
    to_html(report, settings)      # the same sections, charts inline as base64 PNG

Everything written passes through `redact`, so no key or password the
settings know can reach a report. This module only renders: report.py gathers,
report_charts.py draws.
"""

from __future__ import annotations

import re
from itertools import groupby
from pathlib import Path
from typing import TYPE_CHECKING

from interviewer.report.build import COLD_SCORE, GRILL_BANDS, GRILL_ITEMS, GRILL_SOURCE, GRILL_TARGET, Report
from interviewer.report.charts import draw_charts, png_base64
from interviewer.settings import Settings

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def redact(text: str, settings: Settings) -> str:
    """`text` with every secret the settings know replaced (defence in depth: none should be there)."""
    secrets = [s.get_secret_value() for s in (settings.openai_api_key, settings.auth) if s is not None]
    if settings.auth is not None:
        secrets.append(settings.auth.get_secret_value().partition(":")[2])
    for secret in sorted((s for s in secrets if len(s) >= 4), key=len, reverse=True):
        text = text.replace(secret, "[redacted]")
    return text


def _score(value: float | None) -> str:
    return "—" if value is None else f"{value:g}/5"


def _bar(share: float, width: int = 10) -> str:
    full = round(share * width)
    return "█" * full + "░" * (width - full)


def _cell(text: str) -> str:
    """One line of text that stays text in a table cell or a quote ("- x" is not a list)."""
    flat = " ".join(text.split()).replace("|", "\\|")
    return re.sub(r"^([-*+>#]|\d+[.)])(\s)", r"\\\1\2", flat)


def to_markdown(report: Report, charts: dict[str, str] | None = None) -> str:
    """The report as Markdown; `charts` (name -> image Markdown) go under their sections."""
    charts = charts or {}
    out = [f"# {report.title}", "", f"*Generated {report.generated_at}.*", ""]
    if not report.rows:
        out += ["No graded question yet: answer a question, then come back.", ""]
    out += [
        "## Mastery by topic",
        "",
        charts.get("mastery", ""),
        "",
        "| Topic | Mastery | Questions |",
        "|---|---|---|",
    ]
    out += [f"| {t} | `{_bar(m)}` {m:.0%} | {n} |" for t, (m, n) in report.mastery.items()]
    out += [
        "",
        "## Score per question",
        "",
        charts.get("scores", ""),
        "",
        "| Question | Topic | Cold | With follow-ups | Outcome | Hints |",
        "|---|---|---|---|---|---|",
    ]
    out += [
        f"| {r.question_id} — {_cell(r.question)[:90]} | {r.topic} | {_score(r.cold)} | {_score(r.score)} | "
        f"{r.outcome} | {r.hints} |"
        for r in report.rows
    ]
    out += ["", "## Missed key points", ""]
    if not report.missed:
        out.append("None: every core point was covered." if report.rows else "None yet.")
    for topic, points in report.missed.items():
        out += [f"### {topic}", ""]
        for _qid, grouped in groupby(points, key=lambda p: p.question_id):
            first, *_ = group = list(grouped)
            out += [f"**{first.question_id}** — {_cell(first.question)}", ""]
            out += [f"- {p.point}" for p in group]
            excerpts = [_cell(e) for e in dict.fromkeys(p.excerpt for p in group) if e]
            if excerpts:
                out += ["", *(f"> {e}  " for e in excerpts), f"> — model answer, *{first.source}*"]
            out.append("")
    out += ["", "## Misconceptions stated", ""]
    out += [
        f"- **{m.question_id}**: {m.text}" + (f" — you said: “{_cell(m.evidence)}”" if m.evidence else "")
        for m in report.misconceptions
    ] or ["None stated."]
    out += ["", "## Speech", "", *_speech_lines(report, charts)]
    out += [
        "",
        "## The grill (document 002), answered cold",
        "",
        charts.get("grill", ""),
        *_grill_lines(report),
    ]
    out += ["", "## Recommended next drill", "", "The scheduler's most urgent questions:", ""]
    out += [
        f"1. **{p.question_id}** ({p.topic}; {p.reason}) — {_cell(p.question)}" for p in report.next_drill
    ]
    out += ["", f"Run it: `{report.drill_command}`", ""]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out))


def _speech_lines(report: Report, charts: dict[str, str]) -> list[str]:
    samples = report.speech
    if not samples:
        return ["No spoken answers yet: record one in the app (`interviewer ui`)."]
    lines = [
        charts.get("speech", ""),
        "",
        "| Answer | Duration | Words/min | Fillers/min | Long pauses |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {s.question_id} | {s.duration_s:.1f} s | {s.words_per_minute:.0f} | {s.fillers_per_minute:.1f} | "
        f"{s.long_pauses} |"
        for s in samples
    ]
    if len(samples) >= 2:
        first, last = samples[0], samples[-1]
        lines += [
            "",
            f"Trend, first to latest spoken answer: pace {first.words_per_minute:.0f} → "
            f"{last.words_per_minute:.0f} words/min; fillers {first.fillers_per_minute:.1f} → "
            f"{last.fillers_per_minute:.1f} per minute; long pauses {first.long_pauses} → "
            f"{last.long_pauses}.",
        ]
    return lines


def _grill_lines(report: Report) -> list[str]:
    g = report.grill
    left = max(0, GRILL_TARGET - len(g.answered))
    verdict = "target reached." if not left else f"{left} to go."
    lines = [
        "",
        f"**{len(g.answered)}/{GRILL_ITEMS}** answered cold across all sessions — aim for "
        f"{GRILL_TARGET}+/{GRILL_ITEMS} cold: {verdict}",
        "",
        "| Items | Answered cold | The document says |",
        "|---|---|---|",
    ]
    for lo, hi, says in GRILL_BANDS:
        lines.append(f"| {lo}–{hi} | {g.in_band(lo, hi)}/{hi - lo + 1} | {says} |")
    lines += [
        "",
        f"An item counts once a drill-mode first answer, with no hint, scored {COLD_SCORE:g}+/5. "
        f"Drill the grill with `interviewer practice --source {GRILL_SOURCE} --mode drill`.",
    ]
    return lines


HTML_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem;
       color: #1f2328; line-height: 1.5; }}
table {{ border-collapse: collapse; margin: 0.5rem 0; }}
th, td {{ border: 1px solid #d0d7de; padding: 0.3rem 0.6rem; text-align: left; vertical-align: top; }}
th {{ background: #f6f8fa; }}
blockquote {{ margin: 0.3rem 0 0.6rem; padding-left: 0.8rem; border-left: 3px solid #d0d7de;
             color: #57606a; }}
img {{ max-width: 100%; }}
code {{ background: #f6f8fa; padding: 0 0.2rem; }}
</style></head><body>
{body}
</body></html>
"""


def to_html(report: Report, settings: Settings, figures: dict[str, Figure] | None = None) -> str:
    """One self-contained HTML file: no external script, style, font or image.

    `figures` are the report's charts when the caller drew them already (the app does).
    """
    from html import escape

    from markdown_it import MarkdownIt

    figures = draw_charts(report) if figures is None else figures
    charts = {
        name: f"![{name} chart](data:image/png;base64,{png_base64(fig)})" for name, fig in figures.items()
    }
    body = MarkdownIt("commonmark", {"html": False}).enable("table").render(to_markdown(report, charts))
    return redact(HTML_PAGE.format(title=escape(report.title), body=body), settings)


def report_files(
    report: Report, settings: Settings, folder: Path, stem: str, figures: dict[str, Figure] | None = None
) -> tuple[Path, Path]:
    """Write the Markdown and HTML exports into `folder`; (md path, html path)."""
    folder.mkdir(parents=True, exist_ok=True)
    md, html = folder / f"{stem}.md", folder / f"{stem}.html"
    md.write_text(redact(to_markdown(report), settings), encoding="utf-8")
    html.write_text(to_html(report, settings, figures), encoding="utf-8")
    return md, html
