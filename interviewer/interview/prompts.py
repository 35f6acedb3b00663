"""What the interviewer says: templates and LLM prompts, as string constants.

The `rubric` backend (no LLM) speaks only through the templates here; an LLM
backend rephrases questions and follow-ups with the prompts here, and the
templates are its fallback. Placeholders are `{named}`; `phrasing.py` fills them.
"""

from __future__ import annotations

# ---------------------------------------------------------------- templates

QUESTION = "{question}"

# `{stem}` is the start of the missed key point, cut before its substance.
FOLLOW_UP = (
    "Follow-up: your answer did not get to one core point. It starts “{stem} …” — "
    "how does it go on, and why does it matter here?"
)
FOLLOW_UP_NEXT = "One more: another core point starts “{stem} …” — can you complete it, and say why it holds?"
FOLLOW_UP_NO_STEM = "Follow-up: one core point is missing from your answer. What else would you add, and why?"

HINT_FIRST = "Hint: a complete answer covers {n_core} core points. One of them starts “{stem} …”."
HINT_COUNT = "Hint: a complete answer covers {n_core} core points; name each one explicitly."
HINT_NEXT = "Hint: another point starts “{stem} …”."
HINT_FOLLOW_UP = "Hint: the point reads “{stem} …”."
HINT_NONE = "No more hints for this one. Answer what you can, or type /answer to see the model answer."

SKIPPED = "Skipped. It will come back in a later session."
SKIPPED_FOLLOW_UP = "Follow-up skipped; moving on."
ENDED = "Session ended early."

NOTICE_FEWER = "Only {found} questions match your options (with one per concept); asking {found}."
NOTICE_LLM_FALLBACK = "The {backend} phrasing was unusable ({reason}); asking the template version instead."
NOTICE_GRADER_FALLBACK = "The LLM grader failed ({reason}); the embedded grader graded this answer."
NOTICE_BAD_AUDIO = "{reason} You can also type the answer."

# ---------------------------------------------------------------- summary

SUMMARY_HEAD = "Session summary — {answered} of {planned} questions answered."
SUMMARY_SCORE = "Score {score:g}/{max_score:g} with follow-ups; {cold:g}/{max_score:g} cold."
SUMMARY_DRILL = "Drill score {cold:g}/{max_score:g} cold (aim for {target:g}+)."
SUMMARY_QUESTION = "  {question_id} ({topic}): {score} — {outcome}"
SUMMARY_MISSED_HEAD = "To review (missed core points):"
SUMMARY_MISSED = "  - {point} [{question_id}]"
SUMMARY_WEAK_TOPICS = "Weakest topics: {topics}."
SUMMARY_ALL_COVERED = "No core point left uncovered. Try --difficulty hard next."
DRILL_TARGET = 28 / 45  # "aim for 28+/45 cold" in the grill: 62% of the maximum

# ---------------------------------------------------------------- LLM prompts

INTERVIEWER_SYSTEM = (
    "You are a senior machine-learning engineer running a friendly, rigorous mock interview "
    "on training large models. You speak briefly and naturally. You never reveal or hint at "
    "the answer. Reply with the interviewer's words only: no preamble, no quotes, no markdown."
)

PHRASE_QUESTION = (
    "Ask the candidate this interview question ({number} of {total}, topic: {topic}). Keep its "
    "meaning and every number in it exactly; you may add a short natural lead-in. One or two "
    "sentences, ending with a question mark.\n\nQuestion: {question}"
)

PHRASE_FOLLOW_UP = (
    "The candidate answered this interview question but missed one point. Ask one short follow-up "
    "question that leads them toward the missed point without stating it. End with a question "
    "mark.\n\nQuestion: {question}\n\nCandidate's answer: {answer}\n\nMissed point (do not state "
    "it): {point}\n\nSource passages the point comes from:\n{passages}"
)
