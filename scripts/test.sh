#!/usr/bin/env bash
# One command: set up the same way (plus test tools), then lint, type-check and
# run the whole test suite, the slow real-model tests included.
#   scripts/test.sh                 # everything
#   scripts/test.sh -m "not slow"   # extra arguments go to pytest
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --dev
.venv/bin/ruff check interviewer tests evals
.venv/bin/ruff format --check interviewer tests evals
.venv/bin/mypy interviewer
exec .venv/bin/python -m pytest "$@"
