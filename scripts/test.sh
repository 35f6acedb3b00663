#!/usr/bin/env bash
# One command: set up the same way (plus test tools), then lint, type-check and
# run the whole test suite, the slow real-model tests included.
#   scripts/test.sh                 # everything
#   scripts/test.sh --fast          # only what needs no model weights, servers or browser (< 2 min)
#   scripts/test.sh -k grader       # extra arguments go to pytest
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --dev
.venv/bin/ruff check interviewer tests evals
.venv/bin/ruff format --check interviewer tests evals
.venv/bin/mypy interviewer
.venv/bin/lint-imports
if [[ "${1:-}" == "--fast" ]]; then
  exec .venv/bin/python -m pytest -n 2 "$@"  # two workers: these tests are CPU-light
fi
exec .venv/bin/python -m pytest "$@"
