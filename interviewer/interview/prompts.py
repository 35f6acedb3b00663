"""What the interviewer says: templates and LLM prompts, as string constants.

The `rubric` backend (no LLM) speaks only through the templates here; an LLM
backend rephrases questions and follow-ups with the prompts here, and the
templates are its fallback. Placeholders are `{named}`; `phrasing.py` fills them.
"""

from __future__ import annotations

# ---------------------------------------------------------------- templates

QUESTION = "{question}"

# Bank questions carry an interview script (corpus/script): `ask`, a probe per key point,
# a challenge per misconception and a ladder of hints. The lines here react to an answer
# and stand in where a user's own question has no script; none of them quotes a key point.

# the one-sentence reaction before a follow-up; `{point}` is a key point the answer covered
REACT_COVERED = "You're right about one thing: {point}."
REACT_WRONG = "Hold on a second."
REACT_NOTHING = "Okay, let's dig into that a little."
# a stated wrong claim that has no scripted challenge; `{quote}` is the candidate's own sentence
CHALLENGE = "You said “{quote}”. Are you sure? Walk me through why that would hold."
# follow-ups for questions without a script (never the point's words)
FOLLOW_UP_OPEN = "What else would you consider here, and why does it matter?"
FOLLOW_UP_OPEN_NEXT = "Anything else? What would a complete answer still need?"

HINT_COUNT = "A complete answer covers {n_core} core points; which of them have you not said yet?"
HINT_OPEN = "Think about what could go wrong, what you would measure, and what you would change."
HINT_NONE = "No more hints for this one. Answer what you can, or type /answer to see the model answer."

SKIPPED = "Skipped. It will come back in a later session."
# A grade shown while a follow-up is still to come: what was missed waits for the debrief.
GRADE_HELD = "Noted. What you missed comes in the debrief, once we're done with this question."
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
    "The candidate answered this interview question but missed one point. Say the interviewer's "
    "next line: the line below, reworded if needed to fit what the candidate said. It leads them "
    "toward the missed point without stating it, in one or two short sentences ending with a "
    "question mark.\n\nQuestion: {question}\n\nCandidate's answer: {answer}\n\nInterviewer's "
    "line: {line}\n\nMissed point (never state it or its words): {point}\n\nSource passages the "
    "point comes from:\n{passages}"
)
