"""Ships the top-level `corpus/` (sources and rubrics) inside the package as `interviewer/_corpus`.

Everything else is in pyproject.toml. In a checkout (and an editable install)
the code reads `corpus/` directly; an installed wheel reads its packaged copy
(`interviewer.settings.packaged_corpus`).
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

CORPUS = Path(__file__).resolve().parent / "corpus"


class BuildWithCorpus(build_py):
    def run(self) -> None:
        super().run()
        if not self.editable_mode:
            target = Path(self.build_lib) / "interviewer" / "_corpus"
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(CORPUS, target, ignore=shutil.ignore_patterns("README.md"))


setup(cmdclass={"build_py": BuildWithCorpus})
