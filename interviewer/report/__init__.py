"""The report wing: the post-session weakness report (`interviewer report`).

`build` (the report's data from progress and sessions), `render` (Markdown and
HTML), `charts` (matplotlib figures), `commands` (the CLI entry).
"""
