"""BM25 top-10 against bm25s, passes interleaved: the ratio that noise on a shared machine cannot
tilt.

``make bench-scale`` times VerityRAG and each peer in processes run one after the other; on this
machine the same pass over the 550 test questions varied by up to 40% from one minute to the next,
which moved the ratio to bm25s from 0.9 to 1.6 between two runs of the same code. Here both indexes
are built and kept (bm25s in its own process and virtualenv, `bench_peers.py --serve`), then
``--rounds`` passes of each are timed alternately, ours first in odd rounds and bm25s first in
even ones; the figure is each engine's median over the rounds of its pass's p50 (and p95), and the
ratio of those medians. Writes scripts/results/bench_bm25s.json (README's line is generated from
it) and prints the table.

    python scripts/bench_bm25s_interleaved.py                      # 100k and 1M chunks, 7 rounds
    python scripts/bench_bm25s_interleaved.py --scales 20000 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from verityrag import Settings, VerityRAGPipeline
from verityrag.eval.benchmarks import (
    SyntheticDocs,
    bm25s_table,
    grow_to,
    percentiles,
    run_conditions,
    write_results,
)
from verityrag.pipeline import IN_MEMORY
from verityrag.serve import bundled_corpus

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "data" / "built" / "corpus.jsonl"
QUESTIONS = ROOT / "data" / "built" / "questions" / "test.jsonl"
PEERS_PYTHON = ROOT / "guard_work" / "bench_peers_venv" / "bin" / "python"  # make's PEERS_VENV
OUT = ROOT / "scripts" / "results" / "bench_bm25s.json"


def one_scale(scale: int, rounds: int, peers_python: Path, folder: Path) -> dict[str, Any]:
    qs = [q.question for q in bundled_corpus.load_questions(QUESTIONS)]
    pipeline = VerityRAGPipeline(settings=Settings(reader=False), data_dir=IN_MEMORY)
    grow_to(pipeline, SyntheticDocs(bundled_corpus.load_corpus(CORPUS), seed=7), scale)
    index = pipeline.index
    chunks, qfile = folder / f"chunks_{scale}.jsonl", folder / "questions.jsonl"
    with chunks.open("w", encoding="utf-8") as fh:  # the chunks as VerityRAG indexes them
        for chunk in index.live_chunks():
            fh.write(json.dumps({"id": chunk.chunk_id, "text": f"{chunk.title}\n{chunk.text}"}) + "\n")
    qfile.write_text("".join(json.dumps(q) + "\n" for q in qs), encoding="utf-8")
    cmd = [str(peers_python), str(ROOT / "scripts" / "bench_peers.py"), "--engine", "bm25s"]
    cmd += ["--chunks", str(chunks), "--questions", str(qfile), "--serve"]
    peer = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert peer.stdin is not None
    assert peer.stdout is not None
    try:
        hello = json.loads(peer.stdout.readline() or "{}")
        if not hello.get("ready"):
            return {"chunks": len(index), "error": f"bm25s did not start (exit {peer.wait()})"}
        for q in qs[:10]:  # warm caches
            index.search_lexical(q, 10)

        def ours() -> dict[str, float]:
            times = []
            for q in qs:
                t0 = time.perf_counter()
                index.search_lexical(q, 10)
                times.append((time.perf_counter() - t0) * 1000)
            return percentiles(times)

        def theirs() -> dict[str, float]:
            peer.stdin.write("pass\n")  # type: ignore[union-attr]
            peer.stdin.flush()  # type: ignore[union-attr]
            result: dict[str, float] = json.loads(peer.stdout.readline())  # type: ignore[union-attr]
            return result

        passes: dict[str, list[dict[str, float]]] = {"verityrag": [], "bm25s": []}
        for r in range(rounds):
            order = [("verityrag", ours), ("bm25s", theirs)]
            for name, run in order if r % 2 == 0 else order[::-1]:
                passes[name].append(run())
            print(
                f"  {scale:,} round {r + 1}: ours {passes['verityrag'][-1]['p50_ms']:.3f} ms, "
                f"bm25s {passes['bm25s'][-1]['p50_ms']:.3f} ms",
                flush=True,
            )
    finally:
        if peer.poll() is None:
            peer.stdin.write("quit\n")
            peer.stdin.close()
            peer.wait(timeout=60)
    out: dict[str, Any] = {
        "chunks": len(index),
        "rounds": rounds,
        "questions": len(qs),
        "bm25s": hello["config"],
    }
    for name, runs in passes.items():
        out[name] = {
            "p50_ms": statistics.median(p["p50_ms"] for p in runs),
            "p95_ms": statistics.median(p["p95_ms"] for p in runs),
            "p50_per_round": [p["p50_ms"] for p in runs],
        }
    out["ratio_p50"] = out["verityrag"]["p50_ms"] / out["bm25s"]["p50_ms"]
    out["rounds_ours_faster"] = sum(
        a["p50_ms"] <= b["p50_ms"] for a, b in zip(passes["verityrag"], passes["bm25s"], strict=True)
    )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scales", default="100000,1000000", help="chunk counts, comma-separated")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument(
        "--peers-python", type=Path, default=PEERS_PYTHON, help="the peers' virtualenv Python"
    )
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    if not args.peers_python.exists():
        parser.error(f"no {args.peers_python}: `make bench-bm25s` installs bm25s there")
    results: dict[str, Any] = {**run_conditions(), "scales": {}}
    with tempfile.TemporaryDirectory(prefix="bench_bm25s_") as tmp:
        for scale in (int(s) for s in args.scales.split(",")):
            print(f"{scale:,} chunks", flush=True)
            results["scales"][str(scale)] = one_scale(scale, args.rounds, args.peers_python, Path(tmp))
    write_results(results, args.out)
    print(bm25s_table(results))
    print(f"\nwritten: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
