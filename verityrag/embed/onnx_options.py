"""onnxruntime session options shared by every ONNX model the pipeline serves (embedder, cross-encoders)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import onnxruntime


def cpu_session_options(threads: int, *, spin: bool) -> onnxruntime.SessionOptions:
    """``threads`` intra-op threads, no inter-op pool; ``spin``: idle threads spin for work between calls.

    Spinning (onnxruntime's default) saves the wake-up between operators and calls, but a
    session's spinning threads hold the cores after it returns. The learned checks run up to
    three sessions one after another per query, each taking the cores the next one needs:
    with all three on, query p50 80 ms spinning and 35 ms not (each check's stage 25-30 ms
    -> 10-11 ms; one check alone is the same within noise). The embedder runs alone, once per
    query: spinning saves 1-2 ms of its ~6.5 ms query p50, and with the checks on it made no
    measurable difference. So the cross-encoders do not spin and the embedder does
    (scripts/bench_learned_checks.py and /tmp timings on the test questions, 2 cores; the former diary, git show 147e66a:ROADMAP.md).
    """
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
    return options
