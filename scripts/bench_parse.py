"""Parse + ingest time per MB for each file format, and for a 20-page PDF (target: <= 2 s).

Files are made here (``verityrag.ingest.sample_files``: a PDF written by hand, a DOCX by
python-docx; HTML, Markdown and text as strings) from English prose: the bundled corpus's
texts when ``data/built/corpus.jsonl`` exists (``make data``), else generated sentences.
Each file is parsed (``parse_file``, best of ``--repeats``) and ingested into one in-memory
pipeline with the hashing embedder (the default), timed apart. Prints a table; ``--out``
writes it as JSON too.

    python scripts/bench_parse.py [--mb 1] [--repeats 3] [--out scripts/results/bench_parse.json] [--check]

Hostile files (a PDF whose forms draw forms, a DOCX that inflates past its limit, HTML whose
tags never close, a million-character CSV) are each parsed in a process of their own: the
seconds until parsed or refused and the memory it took (target: <= 2 s, <= +200 MB).

``--check`` exits 1 when the 20-page PDF's parse + ingest exceeds 2 s, or a hostile file
exceeds its targets, or a question over the CSV takes over 200 ms at p95.
"""

from __future__ import annotations

import argparse
import html
import io
import json
import random
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from verityrag import Settings, VerityRAGPipeline
from verityrag.ingest.parsers import parse_file
from verityrag.ingest.sample_files import make_docx, make_nested_forms_pdf, make_pdf
from verityrag.pipeline import IN_MEMORY

CORPUS = Path(__file__).resolve().parent.parent / "data" / "built" / "corpus.jsonl"
PDF_TARGET_S = 2.0
CHARS_PER_PAGE = 2_400  # ~48 lines of 50-90 characters: a dense page of prose


def paragraphs(n_chars: int, seed: int = 0) -> list[str]:
    """English paragraphs adding up to about ``n_chars`` characters."""
    source: list[str] = []
    if CORPUS.exists():
        with CORPUS.open(encoding="utf-8") as fh:
            source = [json.loads(line)["text"] for line in fh]
    if not source:
        rng = random.Random(seed)
        words = (
            "the engine steam water pressure Watt Boulton mill mine pump cylinder condenser piston "
            "valve coal iron railway Britain century patent improved built design power efficiency"
        ).split()
        source = [
            " ".join(
                " ".join(rng.choice(words) for _ in range(rng.randint(8, 20))).capitalize() + "."
                for _ in range(6)
            )
            for _ in range(200)
        ]
    out: list[str] = []
    total = 0
    i = 0
    while total < n_chars:
        text = source[i % len(source)]
        out.append(text)
        total += len(text) + 2
        i += 1
    return out


def pdf_pages(paras: list[str]) -> list[str]:
    pages: list[str] = []
    page = ""
    for p in paras:
        if len(page) + len(p) > CHARS_PER_PAGE and page:
            pages.append(page)
            page = ""
        page += p[:CHARS_PER_PAGE] + "\n\n"
    if page:
        pages.append(page)
    return pages


def make_files(n_chars: int) -> dict[str, tuple[str, bytes]]:
    paras = paragraphs(n_chars)
    body = "".join(f"<h2>Section {i}</h2>\n<p>{html.escape(p)}</p>\n" for i, p in enumerate(paras))
    return {
        "pdf": ("bench.pdf", make_pdf(pdf_pages(paras), title="Benchmark")),
        "docx": ("bench.docx", make_docx(paras, heading="Benchmark")),
        "html": (
            "bench.html",
            f"<!doctype html><html><head><title>Benchmark</title><style>p{{margin:0}}</style></head>"
            f"<body><h1>Benchmark</h1>{body}</body></html>".encode(),
        ),
        "markdown": (
            "bench.md",
            ("# Benchmark\n\n" + "".join(f"## Section {i}\n\n{p}\n\n" for i, p in enumerate(paras))).encode(),
        ),
        "text": ("bench.txt", "\n\n".join(paras).encode()),
    }


HOSTILE_TARGET_S = 2.0
HOSTILE_TARGET_MB = 200.0
# Parses stdin as the file named in argv[1] after the imports, and says how long it took, how
# it ended and how much the peak memory grew.
_HOSTILE_CHILD = """
import json, sys, time
from pathlib import Path
from verityrag.config import Settings
from verityrag.errors import InvalidInputError
from verityrag.ingest.parsers import parse_file
def status(key):  # kB
    line = next(l for l in Path("/proc/self/status").read_text().splitlines() if l.startswith(key))
    return int(line.split()[1])
data = sys.stdin.buffer.read()
Path("/proc/self/clear_refs").write_text("5")  # the peak (VmHWM) starts again from here
before = status("VmRSS:")
t0 = time.perf_counter()
try:
    parsed = parse_file(sys.argv[1], data, max_chars=Settings().max_document_chars)
    outcome = f"parsed ({len(parsed.text):,} chars)"
except InvalidInputError as exc:
    outcome = "refused: " + exc.problem[:80]
seconds = time.perf_counter() - t0
grown = (status("VmHWM:") - before) / 1024
print(json.dumps({"seconds": seconds, "outcome": outcome, "mb": grown}))
"""


def _inflating_docx(size: int) -> bytes:
    """A DOCX whose document part inflates to ``size`` bytes of zeros while declaring 4 KiB."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("word/document.xml", b"\0" * size)
    data = bytearray(out.getvalue())
    local, central = data.find(b"PK\x03\x04"), data.find(b"PK\x01\x02")
    data[local + 22 : local + 26] = (4096).to_bytes(4, "little")
    data[central + 24 : central + 28] = (4096).to_bytes(4, "little")
    return bytes(data)


def _million_character_csv() -> bytes:
    rows = ["order_id,customer,city,product,quantity,unit_price,status,notes"]
    while sum(len(r) + 1 for r in rows) < 990_000:
        i = len(rows)
        rows.append(
            f"{i},Customer {i},Town{i % 97},Widget {i % 13},{i % 7 + 1},{i % 50}.99,shipped,left at door {i}"
        )
    return "\n".join(rows).encode()


def hostile_files() -> dict[str, tuple[str, bytes]]:
    return {
        "PDF, forms drawing forms (8 pages)": (
            "forms.pdf",
            make_nested_forms_pdf(depth=5, fanout=10, pages=8),
        ),
        "DOCX inflating to 1 GB": ("bomb.docx", _inflating_docx(1 << 30)),
        "HTML, 20,000 tags never closed": ("open.html", b"<p>Intro</p>" + b"<a " * 20_000),
        "CSV, 1,000,000 characters": ("orders.csv", _million_character_csv()),
    }


def measure_hostile() -> list[dict[str, Any]]:
    rows = []
    for label, (name, data) in hostile_files().items():
        done = subprocess.run(
            [sys.executable, "-c", _HOSTILE_CHILD, name], input=data, capture_output=True, check=True
        )
        found = json.loads(done.stdout.decode().strip().splitlines()[-1])
        ok = found["seconds"] <= HOSTILE_TARGET_S and found["mb"] <= HOSTILE_TARGET_MB
        rows.append({"file": label, "bytes": len(data), **found, "within_targets": ok})
        print(
            f"{label:<36} {len(data) / 1000:>8.0f} KB {found['seconds']:>7.2f} s {found['mb']:>+7.0f} MB  "
            f"{found['outcome']}"
        )
    return rows


def csv_questions(n: int = 40) -> dict[str, Any]:
    """The million-character CSV in a default pipeline (the reader on): its largest chunk, and
    the latency of ``n`` questions about its rows (target: p95 <= 200 ms)."""
    settings = Settings()
    parsed = parse_file("orders.csv", _million_character_csv(), max_chars=settings.max_document_chars)
    pipeline = VerityRAGPipeline(data_dir=IN_MEMORY, settings=settings)
    pipeline.ingest_document("orders", parsed.title, parsed.text)
    largest = max(len(c.text.split()) for c in pipeline.index.chunks_of("orders"))
    pipeline.query("What is the status of order 5?")  # models loaded before the clock starts
    times = []
    for i in range(n):
        t0 = time.perf_counter()
        pipeline.query(f"Which city is customer {97 * i + 11} in?")
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    p50, p95 = times[len(times) // 2], times[min(len(times) - 1, int(len(times) * 0.95))]
    print(
        f"CSV of 1,000,000 characters in a default pipeline: largest chunk {largest} words "
        f"(limit {settings.chunk_max_words}), {n} questions p50 {p50:.0f} ms, p95 {p95:.0f} ms (target <= 200 ms)"
    )
    return {
        "largest_chunk_words": largest,
        "chunk_max_words": settings.chunk_max_words,
        "p50_ms": p50,
        "p95_ms": p95,
    }


def best_of(repeats: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    best, value = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - t0)
    return best, value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=1.0, help="text per format, in MB of characters")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)

    # Room for a multi-MB document (the default limit is lower); chunking is unchanged.
    text_limit = max(Settings().max_document_chars, int(args.mb * 2_000_000))
    pipeline = VerityRAGPipeline(
        data_dir=IN_MEMORY, settings=Settings().replace(max_document_chars=text_limit)
    )
    rows: list[dict[str, Any]] = []
    print(
        f"{'format':<9} {'file MB':>8} {'text MB':>8} {'parse s':>8} {'parse ms/MB':>12} {'ingest s':>9} {'chunks':>7}"
    )
    for fmt, (name, data) in make_files(int(args.mb * 1_000_000)).items():
        parse_s, parsed = best_of(args.repeats, lambda n=name, d=data: parse_file(n, d))
        t0 = time.perf_counter()
        result = pipeline.ingest_document(f"bench-{fmt}", parsed.title, parsed.text)
        ingest_s = time.perf_counter() - t0
        mb = len(data) / 1_000_000
        row = {
            "format": fmt,
            "file_mb": round(mb, 3),
            "text_mb": round(len(parsed.text) / 1_000_000, 3),
            "parse_s": round(parse_s, 4),
            "parse_ms_per_file_mb": round(parse_s * 1000 / mb, 1),
            "ingest_s": round(ingest_s, 4),
            "chunks": result.n_chunks,
        }
        rows.append(row)
        print(
            f"{fmt:<9} {mb:>8.2f} {row['text_mb']:>8.2f} {parse_s:>8.3f} {row['parse_ms_per_file_mb']:>12.1f} "
            f"{ingest_s:>9.3f} {result.n_chunks:>7}"
        )

    pdf = make_pdf(pdf_pages(paragraphs(20 * CHARS_PER_PAGE, seed=1))[:20], title="Twenty pages")
    runs = []
    for i in range(args.repeats):
        t0 = time.perf_counter()
        parsed = parse_file("twenty.pdf", pdf)
        t1 = time.perf_counter()
        result = pipeline.ingest_document(f"twenty-{i}", parsed.title, parsed.text)
        runs.append((t1 - t0, time.perf_counter() - t1, result.n_chunks))
    parse_s, ingest_s, chunks = min(runs, key=lambda r: r[0] + r[1])
    total = parse_s + ingest_s
    verdict = "ok" if total <= PDF_TARGET_S else "OVER"
    print(
        f"\n20-page PDF ({len(pdf) / 1000:.0f} KB, {len(parsed.text):,} chars, {chunks} chunks): parse "
        f"{parse_s * 1000:.0f} ms + ingest {ingest_s * 1000:.0f} ms = {total:.3f} s (target <= {PDF_TARGET_S} s: {verdict})"
    )
    print(f"\nhostile files (targets: <= {HOSTILE_TARGET_S} s, <= +{HOSTILE_TARGET_MB:.0f} MB each):")
    hostile = measure_hostile()
    csv = csv_questions()
    if args.out is not None:
        report = {
            "hostile": hostile,
            "csv_questions": csv,
            "formats": rows,
            "pdf_20_pages": {
                "bytes": len(pdf),
                "chars": len(parsed.text),
                "chunks": chunks,
                "parse_s": round(parse_s, 4),
                "ingest_s": round(ingest_s, 4),
                "total_s": round(total, 4),
                "target_s": PDF_TARGET_S,
            },
            "embedder": pipeline.embedder.fingerprint(),
        }
        args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    over = total > PDF_TARGET_S or not all(row["within_targets"] for row in hostile) or csv["p95_ms"] > 200
    return 1 if args.check and over else 0


if __name__ == "__main__":
    sys.exit(main())
