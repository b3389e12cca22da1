"""Start the noida-db emulator of the Elasticsearch 8 REST API on loopback.

**An emulator, not Elasticsearch.** noida-db (``pip install noida-db``, MIT) is one
native binary that speaks the Elasticsearch 8.15 REST API (BM25, ``dense_vector``,
kNN, RRF). The contract tests, ``scripts/bench_elasticsearch.py`` and
``python -m verityrag.eval --backend elasticsearch`` (without ``ELASTICSEARCH_URL``)
use it where no real cluster can run. Its latencies say nothing about a real
cluster's, and it is single-node.

    with ElasticsearchEmulator() as emulator:
        index = ElasticsearchIndex(dim, ElasticsearchConfig(url=emulator.url))
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType

from verityrag.errors import BackendUnavailableError

logger = logging.getLogger(__name__)

EMULATOR_NAME = "noida-db (Elasticsearch 8 REST API emulator)"
_INSTALL_HINT = "the Elasticsearch emulator needs noida-db: pip install noida-db==0.2.3"


def emulator_binary() -> Path:
    """Path of the noida-db binary inside its Python package."""
    try:
        import noida_db  # type: ignore[import-untyped]
    except ImportError as exc:
        raise ImportError(_INSTALL_HINT) from exc
    path = Path(noida_db.__file__).parent / ("noida-db.exe" if os.name == "nt" else "noida-db")
    if not path.is_file():
        raise ImportError(
            f"noida-db's binary is missing at {path}; reinstall: pip install --force-reinstall noida-db"
        )
    if not os.access(path, os.X_OK):
        path.chmod(
            0o755
        )  # wheels do not always keep the executable bit (the package's own CLI does this too)
    return path


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ElasticsearchEmulator:
    """A noida-db process serving only Elasticsearch on 127.0.0.1, with its data in a temporary folder."""

    def __init__(self, port: int | None = None, data_dir: str | os.PathLike[str] | None = None) -> None:
        self.port = port
        self.data_dir = Path(data_dir) if data_dir is not None else None
        self._owned_dir: str | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._log: Path | None = None

    @property
    def url(self) -> str:
        if self.port is None:
            raise RuntimeError("the emulator is not started")
        return f"http://127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self, timeout: float = 30.0) -> ElasticsearchEmulator:
        """Start the process and wait until it answers ``GET /``. Idempotent."""
        if self.running:
            return self
        binary = emulator_binary()
        if self.data_dir is None:
            self._owned_dir = tempfile.mkdtemp(prefix="verityrag-es-emulator-")
            self.data_dir = Path(self._owned_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.port = self.port or free_port()
        self._log = self.data_dir / "emulator.log"
        cmd = [
            str(binary),
            "start",
            "--data-dir",
            str(self.data_dir),
            "--host",
            "127.0.0.1",
            "--only",
            "elasticsearch",
            "--elasticsearch-port",
            str(self.port),
        ]
        with self._log.open("ab") as log:
            self._process = subprocess.Popen(
                cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise BackendUnavailableError(
                    f"{EMULATOR_NAME} exited with code {self._process.returncode}: {self._tail_log()}"
                )
            if self._answers():
                logger.info("%s listening on %s", EMULATOR_NAME, self.url)
                return self
            time.sleep(0.1)
        self.stop()
        raise BackendUnavailableError(
            f"{EMULATOR_NAME} did not answer within {timeout:g} s: {self._tail_log()}"
        )

    def _answers(self) -> bool:
        try:
            with urllib.request.urlopen(self.url, timeout=1) as resp:
                return bool(resp.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def _tail_log(self) -> str:
        if self._log is None or not self._log.exists():
            return "(no log)"
        return self._log.read_text(errors="replace")[-600:].strip()

    def kill(self) -> None:
        """SIGKILL the process (a crash, for tests); the data folder stays."""
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait(timeout=10)

    def stop(self, remove_data: bool = True) -> None:
        """Stop the process (SIGTERM, then SIGKILL after 5 s) and remove a temporary data folder."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)
        if remove_data and self._owned_dir is not None:
            shutil.rmtree(self._owned_dir, ignore_errors=True)
            self._owned_dir = None
            self.data_dir = None

    def __enter__(self) -> ElasticsearchEmulator:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def __del__(self) -> None:  # a forgotten emulator must not outlive its owner
        with contextlib.suppress(Exception):
            self.stop()
