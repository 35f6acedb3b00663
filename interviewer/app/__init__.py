"""The app wing: the Gradio mock-interview app (`interviewer ui`).

`server` (building and launching the app, its handlers), `layout` (the Blocks
layout), `views` (turning session state into what the page shows).
"""
