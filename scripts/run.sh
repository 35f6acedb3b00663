#!/usr/bin/env bash
# One command: set everything up on a fresh machine, then start the app on the
# embedded default (no LLM, no key) at http://127.0.0.1:7860.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec .venv/bin/interviewer ui "$@"
