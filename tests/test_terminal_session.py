"""``python -m verityrag`` (``make ask``): the bundled corpus as a question session in the terminal."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from verityrag import VerityRAGPipeline
from verityrag.__main__ import SAMPLES, main
from verityrag.types import AbstainReason, GroundingReport, QueryResult

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_piped_questions_are_answered_one_per_line_and_bad_ones_reported() -> None:
    too_long = "Why " * 1000  # over the pipeline's question limit: refused as input
    piped = f"What network broadcast Super Bowl 50 in the United States?\n\n{too_long}\nWhen did Nikola Tesla die?\n"
    done = subprocess.run(
        [sys.executable, "-m", "verityrag", "--local"],
        input=piped,
        capture_output=True,
        text=True,
        timeout=110,
        cwd=REPO_ROOT,
    )
    out = done.stdout
    assert done.returncode == 2, out + done.stderr  # one question was refused as input
    assert "Traceback" not in done.stderr
    assert "VerityRAG ready: 605 documents" in out
    assert "ANSWER: " in out
    assert "CBS" in out
    assert "error: question:" in out
    assert "Q: When did Nikola Tesla die?" in out  # the session went on after the bad one
    assert SAMPLES[1] not in out  # piped questions replace the samples


@pytest.mark.unit
def test_missing_corpus_is_an_error_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--local", "--data-dir", str(tmp_path), "a question"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: corpus: ")
    assert "does not exist" in err


@pytest.mark.unit
def test_ctrl_c_at_the_prompt_ends_the_session_without_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(prompt: str = "") -> str:
        raise KeyboardInterrupt

    # An empty pipeline instead of the bundled one: the session loop is what is tested.
    monkeypatch.setattr("verityrag.__main__.bundled_pipeline", lambda *a, **k: VerityRAGPipeline())
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("builtins.input", interrupted)
    try:
        code = main(["--local"])
    except KeyboardInterrupt:  # raised here it would stop the whole test run
        pytest.fail("Ctrl-C at the prompt escaped main() as a KeyboardInterrupt")
    assert code == 0
    out = capsys.readouterr().out
    assert "Ask a question" in out


@pytest.mark.unit
def test_help_and_commands_at_the_prompt_are_not_questions(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    asked: list[str] = []

    class Pipeline(VerityRAGPipeline):
        def query(self, question: str, *args: object, **kwargs: object) -> QueryResult:  # type: ignore[override]
            asked.append(question)
            raise AssertionError(f"{question!r} was asked as a question")

    lines = iter([":help", ":stats", ":nonsense", ":quit", "never read"])
    monkeypatch.setattr("verityrag.__main__.bundled_pipeline", lambda *a, **k: Pipeline())
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("verityrag.__main__.SAMPLES", ())
    monkeypatch.setattr("builtins.input", lambda prompt="": next(lines))
    assert main(["--local"]) == 0
    out = capsys.readouterr().out
    assert asked == []
    assert ":quit     end the session" in out  # the :help text
    assert "0 documents, 0 chunks" in out  # :stats
    assert "unknown command :nonsense" in out
    assert next(lines) == "never read"  # :quit ended the session


@pytest.mark.unit
def test_piped_commands_are_not_questions(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("verityrag.__main__.bundled_pipeline", lambda *a, **k: VerityRAGPipeline())
    monkeypatch.setattr("sys.stdin", io.StringIO(":help\n:quit\nWhen did Tesla die?\n"))
    assert main(["--local"]) == 0
    out = capsys.readouterr().out
    assert ":help     this list" in out
    assert "Q: " not in out
    monkeypatch.setattr("sys.stdin", io.StringIO("quit\nWhen did Tesla die?\n"))
    assert main(["--local"]) == 0
    assert "Q: " not in capsys.readouterr().out  # piped, quit ends it too


@pytest.mark.unit
@pytest.mark.parametrize("word", ["quit", "exit", "QUIT"])
def test_quit_and_exit_without_the_colon_end_the_session(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], word: str
) -> None:
    class Pipeline(VerityRAGPipeline):
        def query(self, question: str, *args: object, **kwargs: object) -> QueryResult:  # type: ignore[override]
            raise AssertionError(f"{question!r} was asked as a question")

    lines = iter([word, "never read"])
    monkeypatch.setattr("verityrag.__main__.bundled_pipeline", lambda *a, **k: Pipeline())
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("verityrag.__main__.SAMPLES", ())
    monkeypatch.setattr("builtins.input", lambda prompt="": next(lines))
    assert main(["--local"]) == 0
    assert next(lines) == "never read"
    assert "an empty line, quit or Ctrl-D stops" in capsys.readouterr().out


@pytest.mark.unit
@pytest.mark.parametrize(("collection", "samples_asked"), [("demo", True), (None, False), ("clinics", False)])
def test_the_sample_questions_are_asked_only_of_the_bundled_demo(
    monkeypatch: pytest.MonkeyPatch, collection: str | None, samples_asked: bool
) -> None:
    asked: list[str] = []

    class Pipeline(VerityRAGPipeline):
        def query(self, question: str, *args: object, **kwargs: object) -> QueryResult:  # type: ignore[override]
            asked.append(question)
            return QueryResult(question, None, True, AbstainReason.NO_EVIDENCE, GroundingReport(0.0), 0.0)

    def index() -> Pipeline:
        p = Pipeline()
        metadata = {"collection": collection} if collection else {}
        p.ingest_document("a", "Clinic hours", "The clinic opens at eight on weekdays.", metadata)
        return p

    def ended(prompt: str = "") -> str:
        raise EOFError

    monkeypatch.setattr("verityrag.__main__.bundled_pipeline", lambda *a, **k: index())
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("builtins.input", ended)
    assert main(["--local"]) == 0
    assert asked == (list(SAMPLES) if samples_asked else [])
