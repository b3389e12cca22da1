"""Durability: a document acknowledged by ingest_document survives SIGKILL; restore does not re-embed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from verityrag import Settings, VerityRAGPipeline
from verityrag.embed.hashing import HashingEmbedder

# The store, the index and retrieval are what these tests check: the selector's sentence answers
# (the reader, which may cite another chunk of the top ones, has its own tests).
SETTINGS = Settings(reader=False)


CHILD = textwrap.dedent(
    """
    import sys
    from verityrag import Settings, VerityRAGPipeline

    pipeline = VerityRAGPipeline(data_dir=sys.argv[1], settings=Settings(reader=False))
    i = 0
    while True:  # ingest until killed
        doc_id = f"doc-{i:05d}"
        pipeline.ingest_document(
            doc_id,
            "Crash test",
            f"Document {i} carries the marker mark{i:05d}z for lookup. "
            f"It also has a second sentence about durable storage and number {i}.",
        )
        print(doc_id, flush=True)  # acknowledged: ingest_document has returned
        i += 1
    """
)
ACKS_BEFORE_KILL = 25


def _marker(doc_id: str) -> str:
    return f"mark{doc_id.split('-')[1]}z"


@pytest.fixture(scope="module")
def crashed_data_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A data dir written by a child process SIGKILLed mid-ingest, and the doc ids it acknowledged."""
    tmp = tmp_path_factory.mktemp("crash")
    script = tmp / "child.py"
    script.write_text(CHILD, encoding="utf-8")
    data_dir = tmp / "data"
    env = {k: v for k, v in os.environ.items() if not k.startswith("VERITYRAG_")}
    repo = Path(__file__).resolve().parent.parent
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(repo), env.get("PYTHONPATH")) if p)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(data_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    watchdog = threading.Timer(60, proc.kill)  # never hang the suite on a stuck child
    watchdog.start()
    try:
        acked: list[str] = []
        assert proc.stdout is not None
        while len(acked) < ACKS_BEFORE_KILL:
            line = proc.stdout.readline()
            if not line:
                pytest.fail(f"child ended before acknowledging {ACKS_BEFORE_KILL} docs: {proc.stderr.read()}")  # type: ignore[union-attr]
            acked.append(line.strip())
        os.kill(proc.pid, signal.SIGKILL)  # mid-ingest: it never stops on its own
        proc.wait(timeout=30)
        acked += [line.strip() for line in proc.stdout.read().splitlines() if line.strip()]
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    return data_dir, acked


@pytest.mark.integration
def test_restart_after_sigkill_every_acknowledged_doc_is_present_and_searchable(
    crashed_data_dir: tuple[Path, list[str]],
) -> None:
    data_dir, acked = crashed_data_dir
    assert len(acked) >= ACKS_BEFORE_KILL
    pipeline = VerityRAGPipeline(data_dir=data_dir, settings=SETTINGS)
    # At most one more doc may have committed between its ingest and its print.
    assert len(acked) <= pipeline.index.n_documents <= len(acked) + 1
    assert pipeline.store is not None
    assert pipeline.store.count() == pipeline.index.n_documents
    for doc_id in acked:
        assert pipeline.store.get(doc_id) is not None, doc_id
        (hit,) = pipeline.index.search_lexical(_marker(doc_id), 1)
        assert hit.chunk.doc_id == doc_id
        # The restored vector is the stored one: the chunk's own text finds it at cosine 1.
        (dense,) = pipeline.index.search_dense(pipeline.embedder.encode([hit.chunk.text])[0], 1)
        assert dense.chunk.chunk_id == hit.chunk.chunk_id
        assert dense.score == pytest.approx(1.0, abs=1e-5)
    last = acked[-1]
    result = pipeline.query(f"Which document carries the marker {_marker(last)}?")
    assert not result.abstained
    assert result.citations[0].doc_id == last


@pytest.mark.integration
def test_restore_same_embedder_does_not_reembed(
    crashed_data_dir: tuple[Path, list[str]], counting_embedder: type
) -> None:
    data_dir, acked = crashed_data_dir
    embedder = counting_embedder(HashingEmbedder())
    pipeline = VerityRAGPipeline(embedder=embedder, data_dir=data_dir, settings=SETTINGS)
    assert pipeline.index.n_documents >= len(acked)
    assert embedder.calls == 0
    assert not pipeline.query(f"Which document carries the marker {_marker(acked[0])}?").abstained


@pytest.mark.integration
def test_restore_changed_embedder_reembeds_once_and_still_answers(
    crashed_data_dir: tuple[Path, list[str]], counting_embedder: type, tmp_path: Path
) -> None:
    source, acked = crashed_data_dir
    data_dir = tmp_path / "copy"  # leave the shared crashed store as the child left it
    data_dir.mkdir()
    for f in source.iterdir():
        (data_dir / f.name).write_bytes(f.read_bytes())
    changed = counting_embedder(HashingEmbedder(dim=128))
    pipeline = VerityRAGPipeline(embedder=changed, data_dir=data_dir, settings=SETTINGS)
    n_chunks = len(pipeline.index)
    assert changed.texts == n_chunks > 0
    assert pipeline.index.dim == 128
    doc_id = acked[len(acked) // 2]
    result = pipeline.query(f"Which document carries the marker {_marker(doc_id)}?")
    assert not result.abstained
    assert result.citations[0].doc_id == doc_id
    for chunk in pipeline.index.live_chunks()[::7]:
        (dense,) = pipeline.index.search_dense(changed.inner.encode([chunk.text])[0], 1)
        assert dense.chunk.chunk_id == chunk.chunk_id
        assert dense.score == pytest.approx(1.0, abs=1e-5)
    pipeline.store.close()  # type: ignore[union-attr]
    # The new vectors were stored: a second start with the same embedder re-embeds nothing.
    again = counting_embedder(HashingEmbedder(dim=128))
    reopened = VerityRAGPipeline(embedder=again, data_dir=data_dir, settings=SETTINGS)
    assert again.calls == 0
    assert len(reopened.index) == n_chunks


@pytest.mark.unit
def test_restore_with_a_changed_analyzer_stores_its_counts_for_the_next_restart(tmp_path: Path) -> None:
    # The first restart re-analyzed in memory but kept the old analyzer's stored counts under the
    # new fingerprint: from the second restart on, "running" (now a term of its own) matched nothing.
    from verityrag.text.analyzer import Analyzer

    first = VerityRAGPipeline(data_dir=tmp_path, settings=SETTINGS)
    first.ingest_document("r", "Running", "The athletes were running along the river at dawn.")
    first.store.close()  # type: ignore[union-attr]
    unstemmed = Analyzer(stem=False)
    for _ in range(2):
        reopened = VerityRAGPipeline(
            embedder=HashingEmbedder(analyzer=unstemmed),
            data_dir=tmp_path,
            analyzer=unstemmed,
            settings=SETTINGS,
        )
        assert reopened.index.document_frequency("running") == 1
        assert reopened.index.document_frequency("run") == 0
        reopened.store.close()  # type: ignore[union-attr]
