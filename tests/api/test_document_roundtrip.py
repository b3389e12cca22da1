"""Whatever POST /documents accepts, GET /documents/{id} returns unchanged: fuzzed with hypothesis.

An independent test found a document whose metadata nested 256 levels deep accepted (200) and
stored, and every GET of it a 500 from then on (the response serializer stops at 255 levels).
Ingest now holds metadata to limits well inside what every reader serves (32 levels, 1,000
keys, 64 KiB: ``verityrag.ingest.writer.METADATA_LIMITS``), with a 422 naming the limit, and
GET writes the document with ``json``, so one stored before the limits is still served.
docs/decisions/0038-metadata-limits-and-readable-documents.md has the figures.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

import httpx
import numpy as np
import pytest
from fastapi import FastAPI
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from verityrag import Settings, VerityRAGPipeline
from verityrag.api import create_app
from verityrag.ingest.writer import METADATA_LIMITS
from verityrag.types import Chunk, Document

pytestmark = pytest.mark.integration

Serve = Callable[[FastAPI], AbstractContextManager[str]]  # the ``serve`` fixture (conftest.py)


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory: pytest.TempPathFactory) -> VerityRAGPipeline:
    # Persisted, as a deployment is: the text comes back from the store as it was sent (in
    # memory it is rebuilt from the chunks, whitespace between sentences as single spaces).
    return VerityRAGPipeline(data_dir=tmp_path_factory.mktemp("roundtrip"), settings=Settings(reader=False))


@pytest.fixture(scope="module")
def base_url(pipeline: VerityRAGPipeline, serve: Serve) -> Iterator[str]:
    with serve(create_app(pipeline, api_key="")) as url:
        yield url


def nested(depth: int, leaf: object = 1) -> Any:
    """Metadata ``depth`` levels deep: the object itself is level 1."""
    value: Any = leaf
    for i in range(depth - 1):
        value = {"k": value} if i % 2 else [value]
    return {"k": value}


# ------------------------------------------------------------------ fuzz

_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
    | st.sampled_from([float("nan"), float("inf"), 10**400])  # refused: not JSON / not a float
)
_json = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=25,
)
_metadata = st.one_of(
    st.dictionaries(st.text(max_size=10), _json, max_size=6),
    st.integers(1, 300).map(nested),  # around every depth limit: ours (32) and pydantic's (255)
    st.integers(900, 1_100).map(lambda n: {f"k{i}": i for i in range(n)}),  # around the key limit
    st.integers(60_000, 70_000).map(lambda n: {"blob": "x" * n}),  # around the size limit
    st.just({"source": "wiki"}),
)
_text = st.one_of(
    st.text(min_size=1, max_size=200),
    st.tuples(st.text(max_size=200), st.text(max_size=200)).map(lambda t: f"{t[0]} Word9. {t[1]}"),
)
_doc_id = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._:\-]{0,20}(/[A-Za-z0-9_-]{1,8})?", fullmatch=True)
_document = st.fixed_dictionaries(
    {"doc_id": _doc_id, "text": _text}, optional={"title": st.text(max_size=50), "metadata": _metadata}
)
_body = st.one_of(_document, st.lists(_document, min_size=1, max_size=4).map(lambda d: {"documents": d}))

_unique = itertools.count()


def _roundtrip(client: httpx.Client, body: dict[str, Any], tally: dict[str, int]) -> None:
    """POST ``body``; an accepted document must read back unchanged, a refused batch leave nothing."""
    docs = body.get("documents", [body])
    for doc in docs:  # unique ids: a refused batch must leave no trace, a replaced one none to confuse
        doc["doc_id"] = f"{doc['doc_id']}-{next(_unique)}"
    sent = json.dumps(body)  # NaN and Infinity go as the tokens Python writes; the server refuses them
    reply = client.post("/documents", content=sent, headers={"content-type": "application/json"})
    assert reply.status_code in (200, 413, 422), reply.text
    parsed = json.loads(sent)  # what the server parsed
    for doc in parsed.get("documents", [parsed]):
        got = client.get(f"/documents/{doc['doc_id']}")
        if reply.status_code != 200:
            assert got.status_code == 404, got.text  # nothing of a refused request is stored
            continue
        assert got.status_code == 200, got.text[:300]
        out = got.json()
        assert (out["doc_id"], out["title"], out["text"]) == (
            doc["doc_id"],
            doc.get("title", ""),
            doc["text"],
        )
        assert out["metadata"] == doc.get("metadata", {})
        assert client.head(f"/documents/{doc['doc_id']}").status_code == 200
        tally["accepted"] += 1
    if reply.status_code != 200:
        tally["refused"] += 1
        error = reply.json()["error"]
        assert error["field"]
        assert error["message"]


def _fuzz(base_url: str, examples: int) -> dict[str, int]:
    tally = {"accepted": 0, "refused": 0}
    with httpx.Client(base_url=base_url, timeout=30, trust_env=False) as client:

        @settings(
            max_examples=examples,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )
        @given(_body)
        def check(body: dict[str, Any]) -> None:
            _roundtrip(client, body, tally)

        check()
    return tally


def test_every_accepted_document_reads_back_unchanged(base_url: str) -> None:
    tally = _fuzz(base_url, examples=60)
    assert tally["accepted"] > 0
    assert tally["refused"] > 0


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_every_accepted_document_reads_back_unchanged_over_500_documents(base_url: str) -> None:
    tally = _fuzz(base_url, examples=800)
    print(tally)  # the figure of docs/decisions/0038-metadata-limits-and-readable-documents.md
    assert tally["accepted"] >= 500


# ---------------------------------------------------------- the limits, named


@pytest.mark.parametrize(
    ("metadata", "words"),
    [
        (nested(METADATA_LIMITS.depth + 1), f"the limit is {METADATA_LIMITS.depth} levels"),
        (nested(256), f"the limit is {METADATA_LIMITS.depth} levels"),  # what was stored, then a 500
        (
            {f"k{i}": i for i in range(METADATA_LIMITS.keys + 1)},
            f"the limit is {METADATA_LIMITS.keys:,} keys",
        ),
        ({"blob": "x" * METADATA_LIMITS.bytes}, f"the limit is {METADATA_LIMITS.bytes:,} bytes"),
    ],
)
def test_metadata_over_a_limit_is_422_naming_the_limit(base_url: str, metadata: Any, words: str) -> None:
    body = json.dumps({"doc_id": "over-limit", "text": "Some text.", "metadata": metadata})
    reply = httpx.post(f"{base_url}/documents", content=body, headers={"content-type": "application/json"})
    assert reply.status_code == 422, reply.text[:300]
    assert reply.json()["error"]["field"] == "metadata"
    assert words in reply.json()["error"]["message"]
    assert httpx.get(f"{base_url}/documents/over-limit").status_code == 404


def test_metadata_too_deep_to_parse_is_422_naming_the_body(base_url: str) -> None:
    # Deeper than Python's JSON parser goes (it recursed out; FastAPI's 400 said "There was an
    # error parsing the body"): a 422 that says why.
    deep = '{"k": ' * 5_000 + "1" + "}" * 5_000
    body = '{"doc_id": "too-deep", "text": "Some text.", "metadata": ' + deep + "}"
    reply = httpx.post(f"{base_url}/documents", content=body, headers={"content-type": "application/json"})
    assert reply.status_code == 422, reply.text[:300]
    assert reply.json()["error"]["field"] == "body"
    assert "nests too deep" in reply.json()["error"]["message"]


def test_metadata_at_every_limit_is_accepted_and_reads_back(base_url: str) -> None:
    at_limits = {
        "deep": nested(METADATA_LIMITS.depth - 1),
        **{f"k{i}": i for i in range(METADATA_LIMITS.keys - 40)},
    }
    body = {"doc_id": "at-limit", "text": "Some text.", "metadata": at_limits}
    assert httpx.post(f"{base_url}/documents", json=body).status_code == 200
    assert httpx.get(f"{base_url}/documents/at-limit").json()["metadata"] == at_limits


@pytest.mark.parametrize("depth", [300, 900])
def test_document_stored_before_the_limits_is_still_served(
    base_url: str, pipeline: VerityRAGPipeline, depth: int
) -> None:
    # Written straight into the store, as an older server accepted it: GET was a 500 on every call.
    metadata = nested(depth)
    doc = Document("stored-deep", "Deep", "A document stored with deep metadata.", metadata)
    chunk = Chunk("stored-deep#0", doc.doc_id, doc.title, doc.text, 0, 0, len(doc.text))
    assert pipeline.store is not None
    pipeline.store.put_many([(doc, [chunk], np.zeros((1, pipeline.embedder.dim), np.float32))])
    reply = httpx.get(f"{base_url}/documents/stored-deep")
    assert reply.status_code == 200, reply.text[:300]
    assert json.loads(reply.content) == {
        "doc_id": "stored-deep",
        "title": "Deep",
        "text": doc.text,
        "metadata": metadata,
        "n_chunks": 0,  # in the store, not in this process's index
        "ingested_at": reply.json()["ingested_at"],
    }
    assert reply.json()["ingested_at"].endswith("Z")
    assert httpx.head(f"{base_url}/documents/stored-deep").status_code == 200
