"""Connecting to Elasticsearch: settings from the environment, the client, and clear errors.

Environment (read by :meth:`ElasticsearchConfig.from_env`)::

    ELASTICSEARCH_URL          http(s)://host:9200 (required)
    ELASTICSEARCH_API_KEY      an API key (base64 "id:key" as Kibana shows it), or
    ELASTICSEARCH_USERNAME / ELASTICSEARCH_PASSWORD   basic auth
    ELASTICSEARCH_CA_CERT      path to the cluster's CA certificate (https with a private CA)
    ELASTICSEARCH_INDEX        index name (default "verityrag-chunks")
    ELASTICSEARCH_TIMEOUT      seconds per request (default 10)
    ELASTICSEARCH_MAX_RETRIES  retries on connection errors, timeouts, 429/502/503/504 (default 3)
    ELASTICSEARCH_SHARDS / ELASTICSEARCH_REPLICAS   for a new index (default 1 / 1)
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from verityrag.errors import BackendUnavailableError, InvalidInputError, StorageError, VerityRAGError

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

DEFAULT_INDEX_NAME = "verityrag-chunks"
ENV_URL = "ELASTICSEARCH_URL"
_INSTALL_HINT = "the Elasticsearch backend needs the official client: pip install elasticsearch (8.x: 'elasticsearch>=8.13,<9')"


@dataclass(frozen=True)
class ElasticsearchConfig:
    """Where the cluster is and how to talk to it. Validated on construction."""

    url: str
    index_name: str = DEFAULT_INDEX_NAME
    api_key: str | None = None
    username: str | None = None
    password: str | None = None
    ca_cert: str | None = None
    request_timeout: float = 10.0
    max_retries: int = 3
    shards: int = 1
    replicas: int = 1

    def __post_init__(self) -> None:
        if not self.url.startswith(("http://", "https://")):
            raise InvalidInputError(ENV_URL, f"{self.url!r} must start with http:// or https://")
        name = self.index_name
        if (
            not name
            or name != name.lower()
            or name.startswith(("-", "_", "+"))
            or any(c in name for c in ' "*\\<|,>/?#:')
        ):
            raise InvalidInputError(
                "ELASTICSEARCH_INDEX",
                f'{name!r} is not a valid index name (lowercase, no spaces or \\/*?"<>|,#:)',
            )
        if (self.username is None) != (self.password is None):
            raise InvalidInputError(
                "ELASTICSEARCH_USERNAME",
                "basic auth needs both ELASTICSEARCH_USERNAME and ELASTICSEARCH_PASSWORD",
            )
        if self.api_key and self.username:
            raise InvalidInputError(
                "ELASTICSEARCH_API_KEY", "set an API key or a username/password, not both"
            )
        if self.ca_cert is not None and not Path(self.ca_cert).is_file():
            raise InvalidInputError("ELASTICSEARCH_CA_CERT", f"{self.ca_cert} is not a file")
        if self.request_timeout <= 0:
            raise InvalidInputError("ELASTICSEARCH_TIMEOUT", "must be > 0 seconds")
        if self.max_retries < 0:
            raise InvalidInputError("ELASTICSEARCH_MAX_RETRIES", "must be >= 0")
        if self.shards < 1 or self.replicas < 0:
            raise InvalidInputError("ELASTICSEARCH_SHARDS", "shards must be >= 1 and replicas >= 0")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> ElasticsearchConfig:
        """Read ``ELASTICSEARCH_*`` variables; keyword arguments override them."""
        env = os.environ if environ is None else environ
        url = overrides.pop("url", None) or env.get(ENV_URL)
        if not url:
            raise InvalidInputError(
                ENV_URL, "is not set: point it at your cluster, e.g. ELASTICSEARCH_URL=https://localhost:9200"
            )
        values: dict[str, Any] = {
            "index_name": env.get("ELASTICSEARCH_INDEX", DEFAULT_INDEX_NAME),
            "api_key": env.get("ELASTICSEARCH_API_KEY") or None,
            "username": env.get("ELASTICSEARCH_USERNAME") or None,
            "password": env.get("ELASTICSEARCH_PASSWORD") or None,
            "ca_cert": env.get("ELASTICSEARCH_CA_CERT") or None,
        }
        for name, var, kind in (
            ("request_timeout", "ELASTICSEARCH_TIMEOUT", float),
            ("max_retries", "ELASTICSEARCH_MAX_RETRIES", int),
            ("shards", "ELASTICSEARCH_SHARDS", int),
            ("replicas", "ELASTICSEARCH_REPLICAS", int),
        ):
            raw = env.get(var)
            if raw:
                try:
                    values[name] = kind(raw)
                except ValueError as exc:
                    raise InvalidInputError(var, f"cannot parse {raw!r}") from exc
        values.update(overrides)
        return cls(url=url.rstrip("/"), **values)

    def client(self) -> Elasticsearch:
        """A client with this config's timeouts and retries (idempotent requests only are retried)."""
        try:
            from elasticsearch import Elasticsearch
        except ImportError as exc:
            raise ImportError(_INSTALL_HINT) from exc
        kwargs: dict[str, Any] = {
            "request_timeout": self.request_timeout,
            "max_retries": self.max_retries,
            "retry_on_timeout": True,
        }
        if self.api_key:
            kwargs["api_key"] = self.api_key
        if self.username is not None and self.password is not None:
            kwargs["basic_auth"] = (self.username, self.password)
        if self.ca_cert:
            kwargs["ca_certs"] = self.ca_cert
        return Elasticsearch(self.url, **kwargs)

    def describe(self) -> str:
        return f"Elasticsearch at {self.url} (index {self.index_name!r})"


def translate_error(exc: Exception, config: ElasticsearchConfig, action: str) -> VerityRAGError:
    """Turn a client exception into a VerityRAG error that says what to do."""
    import elasticsearch
    import elasticsearch.helpers

    where = config.describe()
    tries = config.max_retries + 1
    if isinstance(exc, elasticsearch.helpers.BulkIndexError):
        first = exc.errors[0] if exc.errors else {}
        return StorageError(f"{where}: {len(exc.errors)} chunk(s) failed while {action}; first: {first}")
    if isinstance(exc, elasticsearch.ApiError):
        status = exc.meta.status
        reason = _reason(exc)
        if status in (401, 403):
            return BackendUnavailableError(
                f"{where} refused {action} (HTTP {status}: {reason}). Check ELASTICSEARCH_API_KEY or "
                "ELASTICSEARCH_USERNAME/ELASTICSEARCH_PASSWORD and the user's index privileges."
            )
        if status == 429 or status >= 500:
            return BackendUnavailableError(
                f"{where} could not serve {action} (HTTP {status}: {reason}) after {tries} tries; "
                "the cluster is overloaded or unhealthy: check GET _cluster/health."
            )
        return StorageError(f"{where} rejected {action} (HTTP {status}: {reason})")
    if isinstance(exc, elasticsearch.TransportError):
        kind = "timed out" if isinstance(exc, elasticsearch.ConnectionTimeout) else "is unreachable"
        return BackendUnavailableError(
            f"{where} {kind} while {action} ({type(exc).__name__}: {exc}); tried {tries} times with a "
            f"{config.request_timeout:g} s timeout. Is the cluster running? Check ELASTICSEARCH_URL "
            "(and ELASTICSEARCH_CA_CERT for https)."
        )
    return StorageError(f"{where}: {action} failed ({type(exc).__name__}: {exc})")


def _reason(exc: Any) -> str:
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error")
    if isinstance(error, dict):
        root = (error.get("root_cause") or [error])[0]
        return f"{root.get('type', '?')}: {root.get('reason', '')}"
    return str(exc.message)


@contextlib.contextmanager
def translated(config: ElasticsearchConfig, action: str) -> Iterator[None]:
    """Run client calls, raising VerityRAG errors (BackendUnavailableError when the cluster is down)."""
    import elasticsearch
    import elasticsearch.helpers

    try:
        yield
    except (
        elasticsearch.ApiError,
        elasticsearch.TransportError,
        elasticsearch.helpers.BulkIndexError,
    ) as exc:
        raise translate_error(exc, config, action) from exc
