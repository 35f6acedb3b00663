"""The package's plan: wings import downward only, and no internal import hides in a function.

`lint-imports` (import-linter, run by scripts/test.sh) checks the layer contracts in
pyproject.toml; these tests check what it cannot see: an import placed inside a
function to dodge a circle, and that the wings the README names exist.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "interviewer"
# The backend registries build each backend in its factory, so that importing the
# registry does not import every backend (style rule 5). Nothing else may.
REGISTRIES = {"interviewer/grading/__init__.py", "interviewer/llm/__init__.py"}


def _imports_inside_functions(path: Path) -> list[str]:
    found = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inside = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if (
                in_function
                and isinstance(child, ast.ImportFrom)
                and (child.module or "").startswith("interviewer")
            ):
                found.append(f"{path.name}:{child.lineno} from {child.module}")
            if in_function and isinstance(child, ast.Import):
                found.extend(
                    f"{path.name}:{child.lineno} import {a.name}"
                    for a in child.names
                    if a.name.startswith("interviewer")
                )
            visit(child, inside)

    visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return found


def test_no_internal_import_is_placed_inside_a_function():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if str(path.relative_to(PACKAGE.parent)) not in REGISTRIES:
            offenders += _imports_inside_functions(path)
    assert offenders == [], (
        "import these at the top of the module (a circle means a wing is in the wrong place)"
    )


def test_the_layer_contract_names_every_wing_of_the_package():
    contracts = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["tool"]["importlinter"][
        "contracts"
    ]
    layers = next(c for c in contracts if c["type"] == "layers")["layers"]
    named = {m.strip().removeprefix("interviewer.") for line in layers for m in line.split("|")}
    wings = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    modules = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    assert wings | modules == named
    assert {"corpus", "models", "grading", "interview", "app", "report", "evaluation", "speech"} <= wings


@pytest.mark.skipif(
    not (Path(sys.executable).parent / "lint-imports").exists(), reason="import-linter not installed"
)
def test_import_linter_keeps_the_contracts():
    done = subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports"), "--no-cache"],
        cwd=PACKAGE.parent, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
