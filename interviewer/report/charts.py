"""The weakness report's charts, drawn with matplotlib's Agg backend (no display, no pyplot state).

`draw_charts(report)` returns {"mastery", "scores", "grill", "speech"} -> Figure, leaving
out charts with nothing to show; `png_base64(fig)` gives the PNG the HTML export
inlines. Figures are plain `Figure` objects (never registered with pyplot), so
they are freed with the last reference and threads can draw at once.

This module only draws; report.py gathers the numbers.
"""

from __future__ import annotations

import base64
import io
from typing import TYPE_CHECKING

from interviewer.report.build import GRILL_ITEMS, GRILL_TARGET, Report

if TYPE_CHECKING:
    from matplotlib.figure import Figure

WEAK, FAIR, STRONG = "#d1495b", "#edae49", "#00798c"
MUTED = "#c9d1d9"
MAX_BARS = 30  # questions shown in the score chart (the latest ones)


def _colour(share: float) -> str:
    return WEAK if share < 0.4 else FAIR if share < 0.7 else STRONG


def _figure(width: float, height: float) -> Figure:
    # matplotlib takes about a second to import: only when a chart is drawn
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def mastery_chart(report: Report) -> Figure:
    topics = list(report.mastery)[::-1]  # weakest at the top
    shares = [report.mastery[t][0] for t in topics]
    fig = _figure(7, 0.45 * len(topics) + 1.2)
    ax = fig.add_subplot()
    ax.barh(topics, [100 * s for s in shares], color=[_colour(s) for s in shares])
    ax.set_xlim(0, 100)
    ax.set_xlabel("mastery (%): mean latest score per question")
    ax.set_title("Mastery by topic")
    for y, s in enumerate(shares):
        ax.text(min(100 * s + 1, 92), y, f"{s:.0%}", va="center", fontsize=9)
    return fig


def scores_chart(report: Report) -> Figure:
    rows = report.rows[-MAX_BARS:]
    fig = _figure(max(5.0, 0.42 * len(rows) + 2), 3.2)
    ax = fig.add_subplot()
    xs = range(len(rows))
    ax.bar([x - 0.2 for x in xs], [r.cold or 0 for r in rows], 0.4, label="cold", color=FAIR)
    ax.bar([x + 0.2 for x in xs], [r.score or 0 for r in rows], 0.4, label="with follow-ups", color=STRONG)
    ax.set_xticks(list(xs), [r.question_id for r in rows], rotation=60, fontsize=8)
    ax.set_ylim(0, 5)
    ax.set_ylabel("score / 5")
    ax.set_title("Score per question")
    ax.legend(loc="upper right", fontsize=8)
    return fig


def grill_chart(report: Report) -> Figure:
    answered = set(report.grill.answered)
    fig = _figure(7, 1.9)
    ax = fig.add_subplot()
    for n in range(1, GRILL_ITEMS + 1):
        row, col = divmod(n - 1, 15)
        ax.add_patch(_cell(col, 2 - row, STRONG if n in answered else MUTED))
        ax.text(
            col + 0.5,
            2 - row + 0.5,
            str(n),
            ha="center",
            va="center",
            fontsize=8,
            color="white" if n in answered else "#57606a",
        )
    ax.set_xlim(0, 15)
    ax.set_ylim(0, 3)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"The grill: {len(answered)}/{GRILL_ITEMS} answered cold (aim for {GRILL_TARGET}+)")
    return fig


def _cell(x: float, y: float, colour: str):  # type: ignore[no-untyped-def]
    from matplotlib.patches import Rectangle

    return Rectangle((x + 0.05, y + 0.05), 0.9, 0.9, color=colour)


def speech_chart(report: Report) -> Figure:
    samples = report.speech
    fig = _figure(7, 3)
    pace, fillers = fig.subplots(1, 2)
    xs = list(range(1, len(samples) + 1))
    pace.plot(xs, [s.words_per_minute for s in samples], marker="o", color=STRONG)
    pace.axhspan(120, 160, color=MUTED, alpha=0.4, label="a clear pace")
    pace.set_title("Words per minute")
    pace.legend(fontsize=8)
    fillers.plot(xs, [s.fillers_per_minute for s in samples], marker="o", color=WEAK)
    fillers.set_title("Fillers per minute")
    fillers.set_ylim(bottom=0)
    for ax in (pace, fillers):
        ax.set_xlabel("spoken answer")
        ax.set_xticks(xs)
    return fig


def draw_charts(report: Report) -> dict[str, Figure]:
    charts: dict[str, Figure] = {}
    if report.mastery:
        charts["mastery"] = mastery_chart(report)
    if report.rows:
        charts["scores"] = scores_chart(report)
    charts["grill"] = grill_chart(report)
    if report.speech:
        charts["speech"] = speech_chart(report)
    return charts


def png_base64(fig: Figure) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return base64.b64encode(buffer.getvalue()).decode("ascii")
