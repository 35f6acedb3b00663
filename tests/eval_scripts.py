"""The evaluation scripts under `evals/`, run the way a user runs them but in this process.

A script in its own process loads the grading models again (6-10 s of a core each time);
here they load once per test worker. What the tests read is the same: the exit code and what
reaches stdout and stderr. An argument error exits through argparse as on the command line.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import subprocess
import sys
from pathlib import Path
from types import ModuleType

EVALS = Path(__file__).resolve().parents[1] / "evals"


def load(script: Path) -> ModuleType:
    """The script as a module (its `if __name__ == "__main__"` block is not run)."""
    name = f"evals_{script.stem}"
    spec = importlib.util.spec_from_file_location(name, script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def run_script(script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`python SCRIPT ARGS...` through the script's `main()`: its exit code, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    argv, path = sys.argv, list(sys.path)
    sys.argv = [str(script), *args]
    sys.path.insert(0, str(script.parent))  # as `python SCRIPT` does: it imports its neighbours
    try:
        main = load(script).main
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main()
            except SystemExit as stop:  # argparse's usage errors, as a shell sees them
                code = stop.code if isinstance(stop.code, int) else 1
    finally:
        sys.argv, sys.path[:] = argv, path
    return subprocess.CompletedProcess([str(script), *args], code or 0, out.getvalue(), err.getvalue())
