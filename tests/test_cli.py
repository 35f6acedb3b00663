"""The command line as a user runs it: one clean error line, JSON shapes, batch mode."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """The command in its own process: exit codes and what reaches the terminal, as a user sees them."""
    return subprocess.run(
        [sys.executable, "-m", "interviewer.cli", *args],
        capture_output=True,
        text=True,
        input=stdin,
        timeout=300,
    )


def run_here(capsys: pytest.CaptureFixture[str], *args: str) -> subprocess.CompletedProcess[str]:
    """The same command line through `interviewer.cli.main` in this process, so that the grading
    models load once for all the grading tests (a process each cost 35-80 s on CI)."""
    from interviewer.cli import main

    capsys.readouterr()
    code = main(list(args))
    shown = capsys.readouterr()
    return subprocess.CompletedProcess(list(args), code, shown.out, shown.err)


def test_questions_json_lists_every_question_with_its_rubric() -> None:
    out = run("questions", "--json")
    assert out.returncode == 0, out.stderr
    questions = json.loads(out.stdout)
    assert len(questions) == 132
    for q in questions:
        assert {"id", "source", "topic", "difficulty", "question", "reference", "key_points",
                "misconceptions", "numeric"} <= set(q)  # fmt: skip
        assert all({"text", "core"} <= set(kp) for kp in q["key_points"])
    numeric = [q for q in questions if q["source"] == "004" and q["numeric"]]
    assert len(numeric) >= 11 and all({"value", "unit", "tolerance"} <= set(q["numeric"]) for q in numeric)


def test_questions_filter_by_source() -> None:
    out = run("questions", "--source", "003", "--json")
    assert {q["source"] for q in json.loads(out.stdout)} == {"003"}


def test_grade_json_has_the_documented_fields(indexed_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = run_here(
        capsys, "grade", "--question-id", "002-21", "--answer", "Clip at 1.0 by global norm.", "--json"
    )
    assert out.returncode == 0, out.stderr
    grade = json.loads(out.stdout)
    assert {"score", "key_points", "misconceptions", "numeric", "feedback", "follow_up", "grader"} <= set(
        grade
    )
    assert all({"text", "status", "evidence"} <= set(kp) for kp in grade["key_points"])
    assert grade["score"] >= 3


def test_grade_by_the_exact_text_of_a_bank_question_grades_against_that_question(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = run_here(
        capsys,
        "grade",
        "--question",
        "Why warmup?",
        "--answer",
        "Adam's moments are unreliable at first.",
        "--json",
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["question_id"] == "002-07"


def test_grade_against_a_free_reference(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_here(capsys,
        "grade", "--question", "Why use a validation set?",
        "--reference", "To estimate generalisation on data not used for training, and to pick hyperparameters.",
        "--answer", "It tells you how well the model generalises to unseen data.", "--json",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["score"] > 0


def test_batch_grading_reports_bad_lines_and_grades_the_rest(
    indexed_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text(
        "\n".join(
            [
                json.dumps({"question_id": "002-21", "answer": "1.0, global norm"}),
                "{not json",
                json.dumps(
                    {"question": "how big should the warmup be for an LLM", "answer": "2 to 8 thousand steps"}
                ),
                json.dumps({"answer": "orphan"}),
                json.dumps({"question_id": "999-99", "answer": "x"}),
            ]
        )
    )
    out_path = tmp_path / "out.jsonl"
    out = run_here(capsys, "grade", "--batch", str(src), "--out", str(out_path))
    assert out.returncode == 0
    assert "in.jsonl:2" in out.stderr and "in.jsonl:4" in out.stderr and "in.jsonl:5" in out.stderr
    lines = [json.loads(line) for line in out_path.read_text().splitlines()]
    assert len(lines) == 5
    assert lines[0]["score"] >= 3 and "grade" in lines[0] and lines[0]["answer"] == "1.0, global norm"
    assert lines[2]["matched_question_id"] in {"002-08", "002-36"}
    assert "error" in lines[1] and "error" in lines[3] and "error" in lines[4]


def test_batch_free_references_of_one_character_grade_and_bad_ones_are_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Outside short-answer data has references like "4"; a number where text belongs is a
    bad line, reported by number, and neither stops the rest nor prints progress bars."""
    src = tmp_path / "in.jsonl"
    records = [
        {"question": "What is 2 + 2?", "reference": "4", "answer": "four"},
        {"question": "What is 2 + 2?", "reference": 4, "answer": "four"},
        {"question": "What is 2 + 2?", "reference": "4", "answer": "five"},
    ]
    src.write_text("\n".join(json.dumps(r) for r in records))
    out_path = tmp_path / "out.jsonl"
    out = run_here(capsys, "grade", "--batch", str(src), "--out", str(out_path))
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out_path.read_text().splitlines()]
    assert [line.get("score") for line in lines] == [5.0, None, 0.0]
    assert "in.jsonl:2" in out.stderr and '"reference" must be a string' in out.stderr
    assert "Traceback" not in out.stderr and "Batches" not in out.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("grade", "--question-id", "nope", "--answer", "x"), "No question with id"),
        (("grade", "--question-id", "002-01"), "--answer"),
        (("grade", "--question-id", "002-01", "--answer-file", "/no/such/file"), "no such file"),
        (("search", "  "), "Empty search"),
        (("ingest", "/no/such/doc.md"), "no such file"),
        (
            ("questions", "--topic", "warmup"),
            "Unknown topic 'warmup'; use one of: loss-curves, learning-rate",
        ),
        (("questions", "--source", "999"), "Unknown source '999'; use one of: 000, 002, 003, 004"),
    ],
)
def test_errors_are_one_clean_line_and_a_nonzero_exit(args: tuple[str, ...], message: str) -> None:
    out = run(*args)
    assert out.returncode == 2
    assert message in out.stderr
    assert "Traceback" not in out.stderr
    assert out.stderr.strip().count("\n") == 0


def test_search_json_returns_ranked_hits(indexed_home: Path) -> None:
    out = run("search", "BF16 versus FP16 for training", "--k", "3", "--json")
    hits = json.loads(out.stdout)
    assert len(hits) == 3 and {"question_id", "source", "text", "score"} <= set(hits[0])
    assert hits[0]["score"] >= hits[-1]["score"]


def test_every_option_of_every_command_says_what_it_does() -> None:
    from interviewer.cli import build_parser

    subcommands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    silent = [
        f"{name} {action.dest}"
        for name, parser in subcommands.choices.items()
        for action in parser._actions
        if not isinstance(action, argparse._HelpAction) and not (action.help or "").strip()
    ]
    assert silent == []


def test_questions_filter_by_difficulty() -> None:
    out = run("questions", "--difficulty", "hard", "--json")
    assert out.returncode == 0, out.stderr
    assert {q["difficulty"] for q in json.loads(out.stdout)} == {"hard"}


def test_a_practice_with_a_wrong_topic_fails_before_building_the_first_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INTERVIEWER_HOME", str(tmp_path / "fresh"))
    out = run("practice", "--topic", "lr", stdin="")
    assert out.returncode == 2
    assert "Unknown topic 'lr'" in out.stderr and "Traceback" not in out.stderr
    assert "building the vector index" not in out.stderr
    assert not (tmp_path / "fresh" / "chroma").exists()


@pytest.mark.parametrize(
    ("environment", "message"),
    [
        ({"INTERVIEWER_BACKEND": "llama-cpp"}, "No model file for the llama-cpp backend"),
        ({"INTERVIEWER_BACKEND": "openai", "OPENAI_API_KEY": ""}, "No OpenAI key found"),
    ],
)
def test_grade_uses_the_backend_the_environment_names(
    environment: dict[str, str], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The LLM backend set for practice grades `interviewer grade` too (its missing
    model or key is the proof that it was asked for)."""
    monkeypatch.delenv("INTERVIEWER_LLM_GGUF", raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    out = run("grade", "--question-id", "002-07", "--answer", "Adam's second moment is noisy early on.")
    assert out.returncode == 2 and message in out.stderr


def test_an_llm_backend_that_only_words_the_questions_leaves_grading_to_the_embedded_grader() -> None:
    from interviewer.settings import Settings

    assert Settings(backend="llama-cpp").grading_backend() == "llama-cpp"
    assert Settings(backend="llama-cpp", llm_grades=False).grading_backend() == "rubric"
    assert Settings(backend="rubric").grading_backend("openai") == "openai"
    assert Settings(grader="openai").grading_backend() == "openai"
