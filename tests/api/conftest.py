"""Shared by the API tests: a real uvicorn server on a free loopback port, and the documents it serves."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from fastapi import FastAPI

CORPUS = Path(__file__).resolve().parents[2] / "data" / "built" / "corpus.jsonl"

Serve = Callable[[FastAPI], AbstractContextManager[str]]


@contextmanager
def _serve(app: FastAPI) -> Iterator[str]:
    """Run ``app`` on a real uvicorn server in a thread, on a free loopback port; yield its URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 15
    while not server.started:  # set once the lifespan has run and the socket listens
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the API server did not come up")
        time.sleep(0.02)
    try:
        yield url
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@pytest.fixture(scope="session")
def serve() -> Serve:
    """``with serve(app) as url:`` runs ``app`` on a real uvicorn server for the block."""
    return _serve


@pytest.fixture(scope="session")
def squad_docs() -> list[dict[str, Any]]:
    """The first 60 documents of the bundled SQuAD corpus (Super Bowl 50 and Nikola Tesla)."""
    with CORPUS.open(encoding="utf-8") as fh:
        rows = [json.loads(line) for _, line in zip(range(60), fh, strict=False)]
    # Each declares its article as its source, as the bundled corpus is loaded (load_corpus).
    return [{**row, "metadata": {"source": row["title"]}} for row in rows]
