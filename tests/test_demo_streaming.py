"""The terminal streaming demo tells its whole story: refused, streamed, answered with a citation, OOD refused."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import pytest


@pytest.mark.integration
@pytest.mark.timeout(60)
def test_demo_streaming_tells_the_story(
    capsys: pytest.CaptureFixture[str], load_script: Callable[[str], ModuleType]
) -> None:
    demo = load_script("demo_streaming")
    assert demo.main(["--delay", "0"]) == 0
    out = capsys.readouterr().out
    before, _, rest = out.partition("3. Streaming")
    assert "ABSTAINED  reason=" in before
    assert "[ 92/92] ingested squad-nikola-tesla-" in rest
    answered, _, ood = rest.partition("5. Asking an out-of-domain question")
    assert "ANSWERED" in answered
    assert "Edison" in answered
    assert "cited:  squad-nikola-tesla-" in answered
    assert "ABSTAINED  reason=" in ood
    assert "STORY OK" in out
    assert "STORY BROKEN" not in out
