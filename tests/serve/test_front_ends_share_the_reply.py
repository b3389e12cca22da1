"""Every front end gives the one reply (``serve.query_reply``): the API's bytes as they were before
it was shared, the stream's report, the MCP tool's fields over a pipeline and over the API, and
the app's result over the API."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from made_up_results import ANSWER, REFUSAL

from verityrag.api import create_app
from verityrag.mcp_server import ApiTools, PipelineTools, query_tool_reply
from verityrag.pipeline import VerityRAGPipeline
from verityrag.serve.query_reply import query_reply
from verityrag.types import QueryResult
from verityrag.ui.answer_source import ApiBackend

pytestmark = pytest.mark.unit

# POST /query's body for ANSWER and REFUSAL, byte for byte, as the API wrote them before the
# front ends shared one serialiser, with the reply's case (case, headline, candidate) added since.
ANSWER_BYTES = (
    '{"question":"Who designed the Kellmark lighthouse — and when?","answer":"It was designed'
    ' by Ilse Varga in 1911.","short_answer":{"text":"Ilse Varga","chunk_id":"notes/kellmark#'
    '0","start":63,"end":73,"probability":0.96},"abstained":false,"abstain_reason":null,'
    '"case":"answered","headline":"Answered, sure (confidence 0.93)","explanation":null,'
    '"candidate":null,"confidence":0.93,"grounding":{"overall_score":0.91,"claims":[{"claim":"It'
    ' was designed by Ilse Varga in 1911.","support":0.91}]},"unsupported_claims":["A claim n'
    'o passage supports."],"citations":[{"chunk_id":"notes/kellmark#0","doc_id":"notes/kellma'
    'rk","title":"Kellmark lighthouse","start":44,"end":82,"source":"notes.txt","ingested_at"'
    ':"2025-12-02T07:14:00.123Z"}],"trace":[{"stage":"attempt_0","duration_ms":0.8125,"detail'
    's":{"strategy":"original","probability":0.75,"top_chunks":["notes/kellmark#0"]}},{"stage'
    '":"grounding","duration_ms":0.125,"details":{"score":0.91,"threshold":0.5,"margin":null,'
    '"n":2}},{"stage":"answer","duration_ms":0.0625,"details":{"probability":0.93,"reason":"r'
    'eader","pair":[1,null]}}],"latency_ms":1.0}'
).encode()
REFUSAL_BYTES = (
    b'{"question":"What colour is the Kellmark lighthouse?","answer":null,"short_answer":null,'
    b'"abstained":true,"abstain_reason":"sufficiency","case":"not_found","headline":"Not found in'
    b' the documents","explanation":"the documents found do no'
    b't cover the question well enough to answer it","candidate":null,"confidence":0.25,"grounding":{"overall_s'
    b'core":0.0,"claims":[]},"unsupported_claims":[],"citations":[],"trace":[{"stage":"abstain'
    b'","duration_ms":0.5,"details":{"reason":"sufficiency","probability":0.01}}],"latency_ms"'
    b":0.5}"
)


def answering(result: QueryResult) -> VerityRAGPipeline:
    """A pipeline whose every question gets ``result``."""
    pipeline = VerityRAGPipeline()
    pipeline.query = lambda *args, **kwargs: result  # type: ignore[method-assign]
    return pipeline


def client_of(pipeline: VerityRAGPipeline) -> TestClient:
    return TestClient(create_app(pipeline, api_key=""), base_url="http://api.test")


@pytest.mark.parametrize(
    ("result", "body"), [(ANSWER, ANSWER_BYTES), (REFUSAL, REFUSAL_BYTES)], ids=["answer", "refusal"]
)
def test_the_apis_query_body_is_the_one_reply_byte_for_byte(result: QueryResult, body: bytes) -> None:
    reply = client_of(answering(result)).post("/query", json={"question": "q"})
    assert reply.status_code == 200
    assert reply.content == body
    assert reply.json() == query_reply(result)


def test_the_streams_report_is_the_one_reply() -> None:
    reply = client_of(answering(ANSWER)).post("/chat/stream", json={"question": "q"})
    events = [frame.split("\n", 1) for frame in reply.text.strip().split("\n\n")]
    assert [name for name, _ in events] == ["event: sentence", "event: report"]
    report, sentence = (json.loads(data.removeprefix("data: ")) for _, data in (events[1], events[0]))
    assert report == query_reply(ANSWER)
    assert sentence["citations"] == query_reply(ANSWER)["citations"]


@pytest.mark.parametrize("result", [ANSWER, REFUSAL], ids=["answer", "refusal"])
def test_the_mcp_tool_selects_from_the_one_reply_over_a_pipeline_and_over_the_api(
    result: QueryResult,
) -> None:
    pipeline = answering(result)
    over_api = ApiTools("http://api.test", client=client_of(pipeline))
    expected = query_tool_reply(query_reply(result))
    assert PipelineTools(pipeline).query("q", None, None, None) == expected
    assert over_api.query("q", None, None, None) == expected
    assert expected["grounding_score"] == result.grounding.overall_score


@pytest.mark.parametrize("result", [ANSWER, REFUSAL], ids=["answer", "refusal"])
def test_the_apps_result_over_the_api_gives_the_one_reply_back(result: QueryResult) -> None:
    over_api = ApiBackend("http://api.test", client=client_of(answering(result)))
    assert query_reply(over_api.query("q", k=3, strictness="balanced")) == query_reply(result)
