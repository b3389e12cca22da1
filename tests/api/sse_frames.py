"""Server-sent events parsed as a client would: ``(event, data)`` pairs as each frame ends.

A helper module with a unique name (not conftest.py: tests/conftest.py owns that module name);
the API tests import it as ``from sse_frames import sse_events``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any


def sse_events(lines: Iterable[str]) -> Iterator[tuple[str, Any]]:
    """Each frame's event name (default ``message``) and its JSON data, yielded at the blank line
    that ends the frame; comment lines (``: keep-alive``) and frames without data are skipped."""
    event, data = "message", list[str]()
    for line in lines:
        if not line:  # a blank line ends a frame
            if data:
                yield event, json.loads("\n".join(data))
            event, data = "message", []
        elif line.startswith("event:"):
            event = line.removeprefix("event:").strip()
        elif line.startswith("data:"):
            data.append(line.removeprefix("data:").strip())
    assert not data, "the stream ended inside a frame"
