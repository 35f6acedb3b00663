"""The corpus wing: documents -> questions, rubrics and the vector store.

`schema` (the question types), `parsers` (the four source formats), `bank` (the
question bank, read from the packaged corpus and the user's documents),
`store` (chromadb chunks and search), `commands` (`index`, `questions`,
`search`, `ingest`). Imports only `models` and the base modules below it.
"""
