"""What the demos show: result views and the real-time streaming story, free of any UI toolkit."""

from __future__ import annotations

from typing import TYPE_CHECKING

from verityrag._lazy import lazy_exports

if TYPE_CHECKING:
    from verityrag.ui.streaming_story import StoryEvent as StoryEvent
    from verityrag.ui.streaming_story import StoryOutcome as StoryOutcome
    from verityrag.ui.streaming_story import run_streaming_story as run_streaming_story
    from verityrag.ui.views import ResultView as ResultView
    from verityrag.ui.views import result_view as result_view
else:
    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "verityrag.ui.streaming_story": (
                "StoryEvent",
                "StoryOutcome",
                "run_streaming_story",
            ),
            "verityrag.ui.views": (
                "ResultView",
                "result_view",
            ),
        },
    )

__all__ = ["ResultView", "StoryEvent", "StoryOutcome", "result_view", "run_streaming_story"]
