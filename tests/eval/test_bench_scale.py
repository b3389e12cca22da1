"""The scale benchmark's table and its peer runner (scripts/bench_scale.py, scripts/bench_peers.py)."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from verityrag.eval.benchmarks import bm25s_table, scale_table

pytestmark = pytest.mark.unit


def _figures(p50: float) -> dict[str, float]:
    return {"p50_ms": p50, "p95_ms": 2 * p50, "n": 550}


def _scale(chunks: int, bm25: float) -> dict[str, Any]:
    index = {
        "chunks": chunks,
        "documents": chunks // 2,
        "bulk_build_s": chunks / 10_000,
        "bm25_top10": _figures(bm25),
        "bm25_top10_exhaustive": _figures(3 * bm25),
        "bm25_identical_to_exhaustive": {"same": 550, "of": 550},
        "dense_top10": _figures(1.0),
        "dense_backend": "exact",
        "hybrid_top10": _figures(2.0),
        "query_reader_off": _figures(9.0),
        "query_default": {"skipped": "no reader"},
        "stream_ingest": _figures(0.5),
        "rss_after_build_mb": chunks / 500,
        "index_bytes_per_chunk": {"total": 2500.0},
    }
    restore = {"restore_s": 1.5, "rss_after_restore_mb": 100.0, "durable_stream_ingest": _figures(0.8)}
    return {"index": index, "restore": restore}


def test_scale_table_one_column_per_scale_and_peer_ratios() -> None:
    data = {
        "scales": {"100000": _scale(100_000, 1.0), "1000000": _scale(1_000_000, 4.0)},
        "small": {"stream_ingest": _figures(0.25)},
        "peers": {
            "100000": {"bm25s": {"bm25_top10": _figures(2.0), "add_one_chunk_ms": 5000.0}},
            "1000000": {"bm25s": {"skipped": "would need ~40 GB"}, "tantivy": {"error": "exit 1"}},
        },
    }
    table = scale_table(data)
    lines = table.splitlines()
    assert lines[0].startswith("| figure")
    assert "| 100k | 1M | target |" in lines[0]
    assert all(line.count("|") == lines[0].count("|") for line in lines)
    assert "| BM25 top-10 (search_lexical) | 1.00 / 2.00 | 4.00 / 8.00 |" in table
    assert "ours / it 0.50; add 5,000.0 ms | would need ~40 GB |" in table
    assert "| tantivy: BM25 top-10; ratio; add a chunk | n/a | failed |" in table
    assert "0.50 / 1.00 (2.00)" in table  # streaming p50 over the 1k-chunk figure


def _chunks_file(tmp_path: Path) -> Path:
    """Forty chunks as bench_peers reads them."""
    chunks = tmp_path / "chunks.jsonl"
    rows = [{"id": f"d{i}#0", "text": f"Title {i}\nrivers and engines number w{i % 7}"} for i in range(40)]
    chunks.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return chunks


def test_bench_peers_rank_bm25_builds_searches_and_adds(
    load_script: Callable[[str], ModuleType], tmp_path: Path
) -> None:
    pytest.importorskip("rank_bm25")
    pytest.importorskip("Stemmer")
    peers = load_script("bench_peers")
    chunks = _chunks_file(tmp_path)
    add = "An added chunk about rivers. Reference code zqadded0001."
    result = peers.run(peers.ENGINES["rank_bm25"](), chunks, ["Which rivers w3?", "engines"], 5.0, add)
    assert result["engine"] == "rank_bm25"
    assert result["bm25_top10"]["n"] == 2
    assert result["added_found"] is True
    assert result["build_s"] >= 0
    assert result["add_one_chunk_ms"] >= 0


def test_bench_peers_serve_times_a_pass_for_each_request_until_told_to_stop(
    load_script: Callable[[str], ModuleType],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pytest.importorskip("rank_bm25")
    pytest.importorskip("Stemmer")
    peers = load_script("bench_peers")
    chunks = _chunks_file(tmp_path)
    monkeypatch.setattr("sys.stdin", io.StringIO("pass\npass\nquit\npass\n"))
    peers.serve(peers.ENGINES["rank_bm25"](), chunks, ["Which rivers w3?", "engines", "w5"])
    replies = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert replies[0]["ready"] is True
    assert [r["n"] for r in replies[1:]] == [3, 3]  # two passes, then quit: the last pass not run


def test_bm25s_table_one_row_per_scale_with_the_ratio_and_the_rounds() -> None:
    def scale(ours: float, theirs: float, faster: int) -> dict[str, Any]:
        return {
            "verityrag": {"p50_ms": ours, "p95_ms": 2 * ours},
            "bm25s": {"p50_ms": theirs, "p95_ms": 2 * theirs},
            "ratio_p50": ours / theirs,
            "rounds_ours_faster": faster,
            "rounds": 7,
        }

    table = bm25s_table(
        {"scales": {"1000000": scale(1.5, 1.25, 1), "100000": scale(0.2, 0.25, 6), "300000": {"error": "x"}}}
    )
    lines = table.splitlines()
    assert lines[2] == "| 100k | 0.200 / 0.400 | 0.250 / 0.500 | 0.80 | 6 of 7 |"
    assert lines[3] == "| 300k | x | | | |"
    assert lines[4] == "| 1M | 1.500 / 3.000 | 1.250 / 2.500 | 1.20 | 1 of 7 |"
