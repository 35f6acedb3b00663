"""The speech wing: everything about spoken answers.

`base` (the `Speech` protocol, `Transcription`, the Whisper-backed speech),
`transcription` (audio decoding, Whisper, delivery figures, `interviewer
transcribe`), `review` (a transcript the candidate checks before it is graded).
"""
