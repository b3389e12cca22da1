"""Concurrent load check: a real API server on loopback, mixed ingest + query traffic, no lost writes.

Starts ``uvicorn verityrag.api:app`` in a child process on a free 127.0.0.1 port (its own
temporary data dir and API key), loads the bundled corpus through ``POST /documents``,
then runs ``--clients`` concurrent clients until ``--calls`` calls are made or
``--seconds`` pass. Each call is an ingest of a new, uniquely named document (share
``--ingest-share``) or a question from the bundled test set. Afterwards every document
whose ingest was acknowledged must be readable (``GET /documents/{id}`` -> 200).

Prints calls, errors by status, lost documents, p50/p95/p99 latency per endpoint and
calls/s; exits 1 on any error or lost document. Traffic never leaves the loopback.

    python scripts/concurrent_load_check.py --clients 32 --calls 10000
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import random
import secrets
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import numpy as np

from verityrag.serve import running_api_server

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "data" / "built" / "corpus.jsonl"
QUESTIONS = ROOT / "data" / "built" / "questions" / "test.jsonl"
HOST = "127.0.0.1"
WORDS = "amber basalt cobalt dune ember fjord garnet heron indigo jasper kestrel lichen marble nickel".split()


@dataclass
class Tally:
    """What the clients saw. Only touched from the event loop, so no lock is needed."""

    issued: int = 0
    latencies: dict[str, list[float]] = field(default_factory=lambda: collections.defaultdict(list))
    errors: collections.Counter[str] = field(default_factory=collections.Counter)
    acknowledged: list[str] = field(default_factory=list)
    # When (seconds into the run) and with what message each transport error happened,
    # to tell a start-up race from a keep-alive race from a mid-run failure.
    transport_errors: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)


def _new_document(rng: random.Random, run: str, i: int) -> dict[str, object]:
    words = " ".join(rng.choice(WORDS) for _ in range(12))
    return {
        "doc_id": f"load-{run}-{i}",
        "title": f"Load document {i}",
        "text": f"Load check document {i} of run {run}. It mentions {words}.",
        "metadata": {"source": "concurrent_load_check"},
    }


async def _client(
    client: httpx.AsyncClient,
    tally: Tally,
    args: argparse.Namespace,
    questions: list[str],
    run: str,
    seed: int,
    deadline: float,
) -> None:
    rng = random.Random(seed)
    while tally.issued < args.calls and time.monotonic() < deadline:
        i = tally.issued
        tally.issued += 1
        if rng.random() < args.ingest_share:
            endpoint, doc = "POST /documents", _new_document(rng, run, i)
            request = client.post("/documents", json=doc)
        else:
            endpoint, doc = "POST /query", None
            request = client.post("/query", json={"question": rng.choice(questions)})
        started = time.perf_counter()
        try:
            response = await request
        except httpx.HTTPError as exc:
            tally.errors[f"{endpoint} {type(exc).__name__}"] += 1
            at = time.monotonic() - tally.started
            tally.transport_errors.append(f"{at:.1f}s {endpoint} {type(exc).__name__}: {exc!r}")
            continue
        tally.latencies[endpoint].append(time.perf_counter() - started)
        if response.status_code != 200:
            tally.errors[f"{endpoint} {response.status_code}"] += 1
        elif doc is not None:
            tally.acknowledged.append(str(doc["doc_id"]))


async def _lost(client: httpx.AsyncClient, doc_ids: list[str], concurrency: int) -> list[str]:
    limit = asyncio.Semaphore(concurrency)

    async def missing(doc_id: str) -> bool:
        async with limit:
            try:
                return (await client.get(f"/documents/{doc_id}")).status_code != 200
            except httpx.HTTPError:
                return True

    flags = await asyncio.gather(*(missing(d) for d in doc_ids))
    return [d for d, gone in zip(doc_ids, flags, strict=True) if gone]


async def _run(url: str, api_key: str, args: argparse.Namespace) -> int:
    with QUESTIONS.open(encoding="utf-8") as fh:
        questions = [json.loads(line)["question"] for line in fh]
    with CORPUS.open(encoding="utf-8") as fh:
        corpus = [json.loads(line) for line in fh]
    limits = httpx.Limits(max_connections=args.clients, max_keepalive_connections=args.clients)
    async with httpx.AsyncClient(
        base_url=url, headers={"X-API-Key": api_key}, timeout=60, limits=limits, trust_env=False
    ) as client:
        loaded = await client.post("/documents", json={"documents": corpus})
        loaded.raise_for_status()
        warm = await client.post("/query", json={"question": questions[0]})  # loads the models; untimed
        warm.raise_for_status()
        checks = (await client.get("/stats")).json()["learned_checks"]
        active = ", ".join(f"{stage} at {info['threshold']:.3g}" for stage, info in checks.items()) or "none"
        print(f"server {url}: loaded {len(corpus)} corpus documents; learned checks: {active}", flush=True)

        tally = Tally()
        run = secrets.token_hex(4)
        started = time.perf_counter()
        deadline = time.monotonic() + args.seconds
        await asyncio.gather(
            *(_client(client, tally, args, questions, run, seed, deadline) for seed in range(args.clients))
        )
        elapsed = time.perf_counter() - started
        lost = await _lost(client, tally.acknowledged, args.clients)

    calls = tally.issued
    for line in tally.transport_errors:
        print(f"transport error at {line}")
    print(f"calls: {calls} in {elapsed:.1f} s ({calls / elapsed:.1f} calls/s), {args.clients} clients")
    print(f"errors: {sum(tally.errors.values())} {dict(tally.errors) or ''}".rstrip())
    print(f"documents acknowledged: {len(tally.acknowledged)}, lost: {len(lost)} {lost[:10] or ''}".rstrip())
    for endpoint, values in sorted(tally.latencies.items()):
        p50, p95, p99 = np.percentile(np.array(values) * 1000, [50, 95, 99])
        print(f"{endpoint:16s} n={len(values):6d}  p50 {p50:7.1f} ms  p95 {p95:7.1f} ms  p99 {p99:7.1f} ms")
    return 1 if tally.errors or lost else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--clients", type=int, default=32, help="concurrent clients (default 32)")
    parser.add_argument("--calls", type=int, default=10_000, help="total calls (default 10000)")
    parser.add_argument("--seconds", type=float, default=300, help="time bound in seconds (default 300)")
    parser.add_argument(
        "--ingest-share", type=float, default=0.2, help="share of calls that ingest (default 0.2)"
    )
    args = parser.parse_args(argv)
    if args.clients < 1 or args.calls < 1 or args.seconds <= 0 or not 0 <= args.ingest_share <= 1:
        parser.error("--clients and --calls must be >= 1, --seconds > 0, --ingest-share in [0, 1]")
    api_key = secrets.token_urlsafe(16)
    with (
        tempfile.TemporaryDirectory(prefix="verityrag-load-") as data_dir,
        running_api_server(Path(data_dir), api_key) as url,
    ):
        return asyncio.run(_run(url, api_key, args))


if __name__ == "__main__":
    sys.exit(main())
