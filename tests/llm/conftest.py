"""Fixtures of the LLM provider tests."""

from llm_http_server import server

__all__ = ["server"]
