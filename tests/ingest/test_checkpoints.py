"""Checkpoints while running (verityrag.ingest.checkpoints): the index image written in the
background by a rule of writes and seconds, so a start after a crash replays a bounded tail."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from verityrag import Settings, VerityRAGPipeline
from verityrag.index.image import image_generation
from verityrag.ingest.checkpoints import PeriodicCheckpoints
from verityrag.ingest.writer import IMAGE_DIR


class _Store:
    def __init__(self) -> None:
        self.generation = 0
        self.now = 0.0
        self.images: list[int] = []

    def checkpoint(self) -> bool:
        self.images.append(self.generation)
        return True


def _rule(store: _Store, every_writes: int, every_seconds: float) -> PeriodicCheckpoints:
    return PeriodicCheckpoints(
        store.checkpoint, lambda: store.generation, every_writes, every_seconds, clock=lambda: store.now
    )


@pytest.mark.unit
def test_an_image_is_written_every_so_many_writes() -> None:
    store = _Store()
    rule = _rule(store, every_writes=3, every_seconds=0)
    for _ in range(7):
        store.generation += 1
        rule.tick()
    assert store.images == [3, 6]
    assert not rule.tick()  # one write behind: not yet


@pytest.mark.unit
def test_an_image_is_written_so_many_seconds_after_the_first_write_since_the_last() -> None:
    store = _Store()
    rule = _rule(store, every_writes=0, every_seconds=60)
    store.now = 1000.0
    assert not rule.tick()  # nothing written: nothing to do, however long since
    store.generation, store.now = 1, 1010.0
    assert not rule.tick()
    store.generation, store.now = 2, 1069.0
    assert not rule.tick()  # 59 s after the first write
    store.now = 1070.0
    assert rule.tick()
    assert store.images == [2]


@pytest.mark.unit
def test_writes_a_checkpoint_could_not_write_are_not_asked_about_again_until_more_come() -> None:
    store = _Store()
    refused: list[int] = []
    rule = PeriodicCheckpoints(lambda: bool(refused.append(store.generation)), lambda: store.generation, 1, 0)
    store.generation = 1
    assert rule.tick()
    assert not rule.tick()
    store.generation = 2
    assert rule.tick()
    assert refused == [1, 2]


CHILD = textwrap.dedent(
    """
    import os, signal, sys, time
    from pathlib import Path
    from verityrag import Settings, VerityRAGPipeline
    from verityrag.index.image import image_generation
    from verityrag.ingest.writer import IMAGE_DIR

    data_dir = sys.argv[1]
    settings = Settings(reader=False, checkpoint_writes=5, checkpoint_seconds=0)
    pipeline = VerityRAGPipeline(data_dir=data_dir, settings=settings)
    for i in range(12):
        pipeline.ingest_document(f"doc-{i}", "Crash test", f"Document {i} is about tide mill {i}.")
        if i == 9:  # ten writes: two background images, the second of the store as it is now
            now = pipeline.store.generation()
            print(now, flush=True)
            deadline = time.monotonic() + 60
            while (image_generation(Path(data_dir) / IMAGE_DIR) or 0) < now:
                if time.monotonic() > deadline:
                    sys.exit("no background image in 60 s")
                time.sleep(0.05)
    os.kill(os.getpid(), signal.SIGKILL)  # two writes after the last image, and no clean stop
    """
)


@pytest.mark.integration
@pytest.mark.timeout(180)
def test_a_start_after_a_crash_replays_only_the_writes_since_the_last_background_image(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    script = tmp_path / "child.py"
    script.write_text(CHILD, encoding="utf-8")
    data_dir = tmp_path / "data"
    env = {k: v for k, v in os.environ.items() if not k.startswith("VERITYRAG_")}
    repo = Path(__file__).resolve().parents[2]
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(repo), env.get("PYTHONPATH")) if p)
    done = subprocess.run(
        [sys.executable, str(script), str(data_dir)], capture_output=True, text=True, env=env, timeout=150
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert image_generation(data_dir / IMAGE_DIR) == int(done.stdout.split()[0])
    with caplog.at_level(logging.INFO, logger="verityrag.ingest.writer"):
        pipeline = VerityRAGPipeline(data_dir=data_dir, settings=Settings(reader=False, checkpoint_writes=0))
    try:
        assert "replayed 0 deletions and 2 documents written since the index image" in caplog.text
        assert pipeline.index.n_documents == 12
    finally:
        pipeline.close()
