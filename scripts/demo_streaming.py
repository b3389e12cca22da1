"""A narrated real-time + abstention demo in the terminal (in-process, no network).

The story: a pipeline over the bundled corpus *without* the Nikola Tesla documents
refuses a Tesla question (reason and confidence printed); the held-back documents
then stream in through ``LiveDocumentStream``, each searchable on arrival; the same
question is now answered with a citation; an out-of-domain question is still refused.

Exits 0 when the story holds, 1 when any step breaks it.

    python scripts/demo_streaming.py [--delay 0.02]
"""

from __future__ import annotations

import argparse
import sys

from verityrag.types import QueryResult
from verityrag.ui.streaming_story import StoryEvent, StoryOutcome, run_streaming_story


def _say(text: str = "") -> None:
    print(text, flush=True)


def _show(result: QueryResult) -> None:
    if result.abstained:
        reason = result.abstain_reason.value if result.abstain_reason is not None else "?"
        _say(f"   -> ABSTAINED  reason={reason}  confidence={result.confidence:.2f}")
        return
    _say(f"   -> ANSWERED   confidence={result.confidence:.2f}")
    _say(f"      answer: {result.answer}")
    for cit in result.citations:
        _say(f"      cited:  {cit.doc_id} ({cit.title}) chars {cit.start}-{cit.end}")


def _narrate(event: StoryEvent) -> None:
    if event.kind == "setup":
        _say("== VerityRAG real-time + abstention demo ==")
        _say(f"{event.step}. {event.text}")
    elif event.kind == "ask":
        _say(f"\n{event.step}. {event.text}")
    elif event.kind == "result":
        assert event.result is not None
        _show(event.result)
        _say(f"   {event.text}")
    elif event.kind == "ingested":
        if event.done == 1 or event.done % 10 == 0 or event.done == event.total:
            _say(f"   [{event.done:3d}/{event.total}] {event.text}")
    elif event.kind == "streamed":
        _say(f"   {event.text}")
    else:
        _say()
        _say(event.text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--delay", type=float, default=0.02, help="seconds between arriving documents")
    args = parser.parse_args(argv)
    outcome = StoryOutcome()
    for event in run_streaming_story(outcome, delay=args.delay):
        _narrate(event)
    return 0 if outcome.ok else 1


if __name__ == "__main__":
    sys.exit(main())
