"""Prometheus text exposition (format 0.0.4), hand-written: request counts, query latency, abstentions."""

from __future__ import annotations

import bisect
import threading
from collections import Counter

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# Seconds. Queries run in a few ms in-process; the tail buckets catch a loaded server.
LATENCY_BUCKETS: tuple[float, ...] = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(**labels: str) -> str:
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items()) + "}"


class ApiMetrics:
    """Counters and one histogram, safe to update from the event loop and worker threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: Counter[tuple[str, str, str]] = Counter()
        self._queries: Counter[str] = Counter()
        self._abstentions: Counter[str] = Counter()
        self._latency_buckets = [0] * len(LATENCY_BUCKETS)
        self._latency_sum = 0.0
        self._latency_count = 0

    def record_request(self, method: str, endpoint: str, status: int) -> None:
        with self._lock:
            self._requests[(method, endpoint, str(status))] += 1

    def record_query(self, seconds: float, abstain_reason: str | None) -> None:
        with self._lock:
            self._queries["abstained" if abstain_reason else "answered"] += 1
            if abstain_reason:
                self._abstentions[abstain_reason] += 1
            first = bisect.bisect_left(LATENCY_BUCKETS, seconds)
            for i in range(first, len(LATENCY_BUCKETS)):
                self._latency_buckets[i] += 1
            self._latency_sum += seconds
            self._latency_count += 1

    def render(self, documents: int | None, chunks: int | None) -> str:
        with self._lock:
            lines = [
                "# HELP verityrag_http_requests_total HTTP requests by method, route template and status.",
                "# TYPE verityrag_http_requests_total counter",
            ]
            for (method, endpoint, status), n in sorted(self._requests.items()):
                lines.append(
                    f"verityrag_http_requests_total{_labels(method=method, endpoint=endpoint, status=status)} {n}"
                )
            lines += [
                "# HELP verityrag_queries_total Queries answered or abstained.",
                "# TYPE verityrag_queries_total counter",
            ]
            for outcome in ("answered", "abstained"):
                lines.append(f"verityrag_queries_total{_labels(outcome=outcome)} {self._queries[outcome]}")
            lines += [
                "# HELP verityrag_abstentions_total Abstentions by recorded reason.",
                "# TYPE verityrag_abstentions_total counter",
            ]
            for reason, n in sorted(self._abstentions.items()):
                lines.append(f"verityrag_abstentions_total{_labels(reason=reason)} {n}")
            lines += [
                "# HELP verityrag_query_latency_seconds Time to answer or abstain, pipeline call only.",
                "# TYPE verityrag_query_latency_seconds histogram",
            ]
            for bound, n in zip(LATENCY_BUCKETS, self._latency_buckets, strict=True):
                lines.append(f"verityrag_query_latency_seconds_bucket{_labels(le=repr(bound))} {n}")
            lines.append(f'verityrag_query_latency_seconds_bucket{{le="+Inf"}} {self._latency_count}')
            lines.append(f"verityrag_query_latency_seconds_sum {self._latency_sum!r}")
            lines.append(f"verityrag_query_latency_seconds_count {self._latency_count}")
        for name, value, help_text in (
            ("verityrag_documents", documents, "Documents in the live index."),
            ("verityrag_chunks", chunks, "Chunks in the live index."),
        ):
            if value is not None:
                lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge", f"{name} {value}"]
        return "\n".join(lines) + "\n"
