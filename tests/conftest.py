"""Shared fixtures. Every test gets its own data directory; nothing touches ~/.local."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

# The data directory the setup command indexed (`interviewer index`), read before any test
# points INTERVIEWER_HOME elsewhere: the shared test index starts from a copy of it.
SETUP_HOME = Path(os.environ["INTERVIEWER_HOME"]) if os.environ.get("INTERVIEWER_HOME") else None
# ...only when it was built with the default settings the tests use (another embedding
# model would have filled it with other vectors).
SETUP_IS_DEFAULT = not any(
    k.startswith("INTERVIEWER_") and k not in ("INTERVIEWER_HOME", "INTERVIEWER_EMBEDDING_THREADS")
    for k in os.environ
)  # the thread count changes no vector (tests/test_embeddings.py)
# One torch thread per process when pytest-xdist runs several workers (and in the processes they
# start): two workers' two threads each on a 2-core machine spin against each other.
if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
    os.environ.setdefault("INTERVIEWER_EMBEDDING_THREADS", "1")


# ---------------------------------------------------------------- the fast tier

HEAVY_MARKS = ("slow", "llm", "browser", "voice")  # real weights, servers, a browser or Whisper


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--fast", action="store_true",
        help="only tests that load no model weights and start no server or browser (scripts/test.sh --fast)",
    )  # fmt: skip


# Fixtures that load real weights (the shared index, the real grader, sessions on them): a test
# that uses one is in the slow tier without being marked by hand.
MODEL_FIXTURES = {"built_index", "indexed_home", "shared_store", "services", "manager", "app_manager",
                  "interviews", "grader", "voice_manager", "llm_manager", "home", "real_services"}  # fmt: skip


# Modules whose every test loads weights, in process or in an `interviewer` subprocess, and
# single tests that do (found by running --fast: each one failed there).
HEAVY_MODULES = {"test_embeddings", "test_word_vectors", "test_llm_grader", "test_cli", "test_external_check",
                 "test_probe_check", "test_terminal", "test_wheel"}  # fmt: skip
HEAVY_TESTS = {"test_a_grades_latency_is_its_own_work_not_loading_the_models", "test_unloadable_model_is_backend_unavailable",
               "test_ingest_adds_a_user_document_and_its_questions", "test_ingest_reads_pdf_documents"}  # fmt: skip


# module -> its place in the run: the modules with the longest tests first
LONGEST_FIRST = {stem: n for n, stem in enumerate(["test_cohort", "test_bench", "test_voice", "test_llm_session",
                 "test_wheel", "test_browser", "test_terminal", "test_polarity", "test_evaluation"])}  # fmt: skip


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if (
            MODEL_FIXTURES & set(getattr(item, "fixturenames", ()))
            or item.path.stem in HEAVY_MODULES
            or getattr(item, "originalname", item.name) in HEAVY_TESTS
        ):
            item.add_marker(pytest.mark.slow)
    if not config.getoption("--fast"):
        # the modules with the longest tests first (`.ci/run` prints the slowest): the two
        # workers then end on short tests, not one of them on a minute-long one alone
        items.sort(key=lambda i: LONGEST_FIRST.get(i.path.stem, len(LONGEST_FIRST)))
        return
    heavy = [i for i in items if any(i.get_closest_marker(m) for m in HEAVY_MARKS)]
    if heavy:
        config.hook.pytest_deselected(items=heavy)
        left_out = set(heavy)
        items[:] = [i for i in items if i not in left_out]


def pytest_configure(config: pytest.Config) -> None:
    """Under --fast, loading real weights fails the test: it belongs in the slow tier (mark it)."""
    if not config.getoption("--fast"):
        return

    def refuse(*args: object, **kwargs: object) -> None:
        pytest.fail("this test loads model weights: mark it @pytest.mark.slow", pytrace=False)

    import sentence_transformers

    from interviewer.models.polarity import PolarityReader
    from interviewer.models.support import SupportReader

    sentence_transformers.SentenceTransformer.__init__ = refuse  # type: ignore[method-assign]
    PolarityReader._load = refuse  # type: ignore[method-assign]
    SupportReader.load = refuse  # type: ignore[method-assign]
    try:
        import wordllama

        wordllama.WordLlama.load = refuse  # type: ignore[method-assign]
    except ImportError:
        pass
    try:
        import faster_whisper

        faster_whisper.WhisperModel.__init__ = refuse  # type: ignore[method-assign]
    except ImportError:
        pass


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """INTERVIEWER_HOME points at a fresh folder for every test."""
    home = tmp_path / "home"
    monkeypatch.setenv("INTERVIEWER_HOME", str(home))
    for var in (
        "INTERVIEWER_CHROMA_URL",
        "INTERVIEWER_CHECKPOINT_URL",
        "INTERVIEWER_DATABASE_URL",
        "INTERVIEWER_LLM_BASE_URL",
        "OPENAI_API_KEY",
    ):
        monkeypatch.delenv(var, raising=False)
    return home


def seed_from_setup(home: Path) -> None:
    """Start `home` from a copy of the vector store and rubric vectors the setup command built
    (the test command runs it first), when there are any: building them again costs about a
    minute of both cores. The fixture then brings the copy up to date the way `interviewer
    index` does: chunks of documents this checkout lacks are dropped, missing ones embedded.
    Building from nothing is tested on its own (test_store, test_faults, the bench)."""
    from interviewer.settings import default_home

    setup_home = SETUP_HOME or default_home()
    if not SETUP_IS_DEFAULT or not (setup_home / "chroma" / "chroma.sqlite3").is_file():
        return
    shutil.copytree(setup_home / "chroma", home / "chroma")
    (home / "cache").mkdir(parents=True)
    for vectors in (setup_home / "cache").glob("rubric-vectors-*.npz"):
        shutil.copy2(vectors, home / "cache" / vectors.name)


@pytest.fixture(scope="session")
def built_index(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """A data directory whose vector index and rubric vectors are built once for the whole run
    (as `interviewer index` does), shared by the xdist workers."""
    import shutil

    from filelock import FileLock

    from interviewer.corpus.bank import load_bank
    from interviewer.corpus.store import Store
    from interviewer.grading.rubric import RubricGrader
    from interviewer.settings import load_settings

    # Built once for all xdist workers (their base temp directories share a parent that is
    # this run's own), under a lock; each worker then works on its own copy.
    base = tmp_path_factory.getbasetemp()
    shared = (base.parent if worker_id != "master" else base) / "indexed-home-shared"
    with FileLock(str(shared) + ".lock"):
        if not (shared / ".built").exists():
            shutil.rmtree(shared, ignore_errors=True)
            seed_from_setup(shared)
            settings = load_settings(home=shared)
            Store(settings).ensure_index(load_bank(settings))
            RubricGrader(settings).prime_bank()
            (shared / ".built").touch()
    home = tmp_path_factory.mktemp("indexed-home")
    shutil.copytree(shared, home, dirs_exist_ok=True)
    return home


@pytest.fixture
def indexed_home(built_index: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point INTERVIEWER_HOME at the shared, already-built index."""
    monkeypatch.setenv("INTERVIEWER_HOME", str(built_index))
    return built_index


@pytest.fixture
def settings(isolated_home: Path):  # type: ignore[no-untyped-def]
    from interviewer.settings import load_settings

    return load_settings()


# ---------------------------------------------------------------- interview sessions


class FakeSpeech:
    """The speech seam without Whisper: each audio path maps to a transcript, or to an error."""

    def __init__(self) -> None:
        self.transcripts: dict[str, object] = {}  # path -> text, or an exception to raise
        self.calls: list[tuple[str, list[str]]] = []

    def transcribe(self, path: str, prompt_terms: list[str]):  # type: ignore[no-untyped-def]
        from interviewer.speech.base import Transcription

        self.calls.append((path, prompt_terms))
        result = self.transcripts[path]
        if isinstance(result, Exception):
            raise result
        return Transcription(str(result), {"words_per_minute": 150.0, "fillers_per_minute": 2.0})


class EchoGrader:
    """A stand-in grader for tests of the conversation, not of grading: instant, no model.

    A key point is covered when the answer says its text or one of its alternatives, or is
    the question's reference answer; a misconception is stated when the answer says its
    text. The cheap gates (empty, "I don't know", an instruction to the grader) are the real
    ones, and so are the aggregator and the feedback, so grades read like real ones.
    """

    name = "rubric"

    def __init__(self) -> None:
        from interviewer.grading.calibration import load_calibration

        self.calibration = load_calibration()  # its aggregator, as the real grader's

    def grade(self, question, answer):  # type: ignore[no-untyped-def]
        import time

        from interviewer.grading.feedback import build_grade
        from interviewer.grading.grade import KeyPointResult, MisconceptionResult, Provenance, aggregate
        from interviewer.grading.rubric import screen_answer
        from interviewer.grading.text import clean

        t0 = time.perf_counter()
        screened = screen_answer(question, answer)
        said = " ".join(screened.cleaned.lower().split())
        whole = answer.strip() == question.reference.strip()

        def says(*texts: str) -> str:  # compared as the grader reads them (fillers out, numbers as digits)
            return next((t for t in texts if t and " ".join(clean(t).lower().split()) in said), "")

        results = []
        for kp in question.key_points:
            evidence = (
                "" if screened.nothing_to_grade else (kp.text if whole else says(kp.text, *kp.alternatives))
            )
            results.append(KeyPointResult(text=kp.text, core=kp.core, status="covered" if evidence else "missed",
                                          evidence=evidence, confidence=1.0 if evidence else 0.0))  # fmt: skip
        stated = [
            MisconceptionResult(text=m.text, evidence=m.text, correction=m.twin)
            for m in question.rubric.misconceptions
            if not whole and not screened.nothing_to_grade and says(m.text)
        ]
        params = self.calibration.for_question(question)[0]
        score = (
            0.0
            if screened.nothing_to_grade
            else aggregate(results, stated, screened.numeric, params, flags=screened.flags)
        )
        provenance = Provenance(grader="rubric", version="echo")
        return build_grade(score, results, stated, screened.numeric, screened.flags, provenance, t0,
                           injection_cap=params.injection_cap, reference=question.reference)  # fmt: skip


@pytest.fixture(scope="session")
def shared_store(built_index: Path):  # type: ignore[no-untyped-def]
    """The vector store built once; sessions read it, never write it."""
    from interviewer.corpus.store import Store
    from interviewer.settings import load_settings

    return Store(load_settings(home=built_index))


@pytest.fixture
def fake_speech() -> FakeSpeech:
    return FakeSpeech()


@pytest.fixture
def services(settings, shared_store, fake_speech):  # type: ignore[no-untyped-def]
    """Shared services on the test's own data directory, with the shared index, fake speech and
    the stand-in grader (`EchoGrader`): the conversation is the subject, not the grade."""
    from interviewer.interview.context import Services

    svc = Services(settings, store=shared_store, speech=fake_speech, graders={"rubric": EchoGrader()})  # type: ignore[dict-item]
    yield svc
    svc.close()


@pytest.fixture
def real_services(settings, shared_store, fake_speech):  # type: ignore[no-untyped-def]
    """As `services`, with the real embedded grader: for tests whose subject is a real grade."""
    from interviewer.interview.context import Services

    svc = Services(settings, store=shared_store, speech=fake_speech)
    yield svc
    svc.close()


@pytest.fixture
def manager(settings, services):  # type: ignore[no-untyped-def]
    """A session manager whose graph is compiled with an in-memory checkpointer."""
    from langgraph.checkpoint.memory import InMemorySaver

    from interviewer.interview.session import SessionManager

    return SessionManager(settings, services=services, checkpointer=InMemorySaver())


# ---------------------------------------------------------------- Postgres


def _initdb() -> str | None:
    found = shutil.which("initdb") or next(iter(sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))), None)
    return found


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A private Postgres cluster on a free local port, torn down after the test."""
    pytest.importorskip("langgraph.checkpoint.postgres")
    initdb = _initdb()
    if initdb is None:
        pytest.skip("postgres is not installed (apt-get install postgresql)")
    bindir = Path(initdb).parent
    root = Path(tempfile.mkdtemp(prefix="interviewer-pg-"))
    data, sockets = root / "data", root / "sock"
    sockets.mkdir()
    as_user: list[str] = []
    if os.geteuid() == 0:  # initdb refuses root: run the cluster as the postgres user
        shutil.chown(root, "postgres")
        shutil.chown(sockets, "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    run = lambda *cmd: subprocess.run([*as_user, *cmd], check=True, capture_output=True)  # noqa: E731
    run(str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust")
    options = f"-c listen_addresses=127.0.0.1 -p {port} -k {sockets}"
    run(str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(root / "log"), "-w", "start")
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        run(str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop")
        shutil.rmtree(root, ignore_errors=True)
