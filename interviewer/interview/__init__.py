"""The interview wing: the LangGraph conversation, its state, policy and persistence.

`state` (typed graph state and events), `graph` (nodes and builder), `context`
(run-time services), `session` (the session API the app and terminal use),
`phrasing` and `prompts` (what the interviewer says), `policy` (which question
next), `progress` (attempts and schedule), `checkpoint` (LangGraph savers),
`terminal` (`interviewer practice`).
"""
