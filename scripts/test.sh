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
# The type check and the import contracts read only the source, on one core: they run beside
# the tests (whose servers, browsers and subprocesses leave a core idle at times) instead of
# before them, and the command fails if they do. Their output follows the tests'.
checks_log="$(mktemp)"
(.venv/bin/mypy interviewer && .venv/bin/lint-imports) >"$checks_log" 2>&1 &
checks=$!
# Two workers (pytest-xdist), for the fast tier and the whole suite alike: the slow tests
# mostly wait on a process, a server or a browser. Work stealing: a worker left idle at the
# end takes queued tests from the other instead of waiting behind its slow ones.
status=0
.venv/bin/python -m pytest -n 2 --dist worksteal "$@" || status=$?
checked=0
wait "$checks" || checked=$?
cat "$checks_log"
rm -f "$checks_log"
if ((checked != 0)); then
  echo "test.sh: the type check or the import contracts failed (above)" >&2
  exit "$checked"
fi
exit "$status"
