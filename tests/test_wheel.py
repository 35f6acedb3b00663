"""The package installs anywhere: a wheel built from the checkout, in a fresh venv outside it, works.

The wheel must carry the corpus (sources and rubrics) and the calibration; the
new venv sees the project's installed dependencies (a path entry to their
site-packages) but not the checkout or its editable install.
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """bin/ of a fresh venv with the wheel installed."""
    root = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(REPO), "--no-deps", "--no-build-isolation", "-q", "-w", str(root)],
        check=True, timeout=300, cwd=root,
    )  # fmt: skip
    wheel = next(root.glob("interviewer-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "interviewer/_corpus/rubrics/002.yaml" in names
    assert any(n.startswith("interviewer/_corpus/sources/002_") for n in names)
    assert "interviewer/grading/calibration.json" in names
    env_dir = root / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    py = env_dir / "bin" / "python"
    purelib = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    # the project's dependencies, without processing their .pth files (so no editable checkout)
    (Path(purelib) / "deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "-q", str(wheel)],
        check=True, timeout=300,
    )  # fmt: skip
    return env_dir / "bin"


def _run(bin_dir: Path, home: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "INTERVIEWER_HOME": str(home), "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    env.pop("PYTHONPATH", None)
    return subprocess.run(
        [str(bin_dir / "interviewer"), *args], input=stdin, capture_output=True, text=True,
        cwd=home.parent, env=env, timeout=600,
    )  # fmt: skip


def test_the_installed_wheel_reads_its_own_corpus_outside_the_checkout(
    installed: Path, tmp_path: Path
) -> None:
    where = subprocess.run(
        [str(installed / "python"), "-c", "import interviewer; print(interviewer.__file__)"],
        capture_output=True, text=True, cwd=tmp_path,
    ).stdout  # fmt: skip
    assert str(REPO) not in where
    done = _run(installed, tmp_path / "home", "questions", "--json")
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)) == 132


def test_the_installed_wheel_grades_and_practises(installed: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    graded = _run(
        installed, home, "grade", "--question-id", "002-03", "--answer", "Use a learning-rate warmup."
    )
    assert graded.returncode == 0, graded.stderr
    assert "/5" in graded.stdout or "score" in graded.stdout.lower()
    practice = _run(
        installed, home, "practice", "--questions", "1", stdin="I would lower the learning rate.\n\n"
    )
    assert practice.returncode == 0, practice.stderr
    assert "summary" in practice.stdout.lower() or "score" in practice.stdout.lower(), practice.stdout
    evaluated = _run(installed, home, "eval")
    assert evaluated.returncode == 2 and "source checkout" in evaluated.stderr
