"""`make data` fetches missing datasets from their sources, checksums checked, against a local server.

No test touches the network: a real HTTP server on localhost serves small made-up files.
"""

from __future__ import annotations

import gzip
import hashlib
import http.server
import threading
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import pytest

from verityrag import datasets
from verityrag.datasets import fetch
from verityrag.datasets.__main__ import main as datasets_main
from verityrag.errors import DatasetMissingError, InvalidInputError

pytestmark = pytest.mark.integration

PLAIN = b'{"version": "1.1", "data": [{"title": "Made_up", "paragraphs": []}]}\n'
LINES = b'{"knowledge": "k", "question": "q", "right_answer": "a", "hallucinated_answer": "b"}\n'


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    """An HTTP server on localhost serving a folder of fixture files; yields its base URL."""
    served = tmp_path / "served"
    served.mkdir()
    (served / "plain.json").write_bytes(PLAIN)
    (served / "lines.json").write_bytes(LINES)
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_fetch_downloads_missing_files_checks_them_and_gzips_where_the_name_says(
    server: str, tmp_path: Path
) -> None:
    root = tmp_path / "root"
    sources = {
        "squad/dev.json": fetch.Source(f"{server}/plain.json", _sha(PLAIN), "test"),
        "halu/qa.json.gz": fetch.Source(f"{server}/lines.json", _sha(LINES), "test"),
    }
    said: list[str] = []
    got = fetch.fetch(list(sources), root, sources, say=said.append)
    assert got == list(sources)
    assert (root / "squad/dev.json").read_bytes() == PLAIN
    assert gzip.decompress((root / "halu/qa.json.gz").read_bytes()) == LINES
    assert len(said) == 2
    # A second run finds them present and fetches nothing.
    assert fetch.fetch(list(sources), root, sources) == []


def test_a_checksum_mismatch_leaves_nothing_behind(server: str, tmp_path: Path) -> None:
    root = tmp_path / "root"
    sources = {"squad/dev.json": fetch.Source(f"{server}/plain.json", "0" * 64, "test")}
    with pytest.raises(InvalidInputError, match="sha256"):
        fetch.fetch(list(sources), root, sources)
    assert list((root / "squad").iterdir()) == []


def test_a_failed_download_leaves_nothing_behind(server: str, tmp_path: Path) -> None:
    root = tmp_path / "root"
    sources = {"squad/dev.json": fetch.Source(f"{server}/absent.json", _sha(PLAIN), "test")}
    with pytest.raises(OSError, match="404"):
        fetch.fetch(list(sources), root, sources)
    assert list((root / "squad").iterdir()) == []


def test_a_file_without_a_download_is_an_error_naming_it_and_the_variable(tmp_path: Path) -> None:
    with pytest.raises(DatasetMissingError, match=datasets.ENV_VAR) as caught:
        fetch.fetch([datasets.SQUAD_V1_TRAIN], tmp_path)
    assert datasets.SQUAD_V1_TRAIN in str(caught.value)


def test_the_split_file_is_written_from_its_titles(tmp_path: Path) -> None:
    assert fetch.fetch([datasets.SQUAD_V2_SPLIT], tmp_path) == [datasets.SQUAD_V2_SPLIT]
    split = datasets.load_json(datasets.SQUAD_V2_SPLIT, tmp_path)
    assert len(split["split_a_titles"]) == 16
    assert len(split["split_b_titles"]) == 19
    assert not set(split["split_a_titles"]) & set(split["split_b_titles"])


def test_every_file_the_project_reads_has_a_source_entry() -> None:
    names = {v for k, v in vars(datasets).items() if k.isupper() and isinstance(v, str) and "/" in v}
    assert names == set(fetch.SOURCES)


def test_the_split_titles_match_the_shared_split_file(require_dataset: Callable[[str], Path]) -> None:
    path = require_dataset(datasets.SQUAD_V2_SPLIT)
    split = datasets.load_json(datasets.SQUAD_V2_SPLIT, path.parents[1])
    assert tuple(split["split_a_titles"]) == fetch.SPLIT_A_TITLES
    assert tuple(split["split_b_titles"]) == fetch.SPLIT_B_TITLES


def test_the_root_is_the_variable_else_shared_else_local(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(datasets.ENV_VAR, str(tmp_path))
    assert datasets.datasets_root() == tmp_path
    monkeypatch.delenv(datasets.ENV_VAR)
    monkeypatch.setattr(datasets, "SHARED_ROOT", tmp_path / "nowhere")
    assert datasets.datasets_root() == datasets.LOCAL_ROOT


def test_the_command_line_reports_nothing_to_fetch_when_all_is_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in fetch.CORPUS_FILES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"{}")
    monkeypatch.setenv(datasets.ENV_VAR, str(tmp_path))
    assert datasets_main(["fetch"]) == 0
    assert "nothing to fetch" in capsys.readouterr().out
