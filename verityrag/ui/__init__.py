"""What the demos show: result views and the real-time streaming story, free of any UI toolkit."""

from verityrag.ui.streaming_story import StoryEvent, StoryOutcome, run_streaming_story
from verityrag.ui.views import ResultView, result_view

__all__ = ["ResultView", "StoryEvent", "StoryOutcome", "result_view", "run_streaming_story"]
