"""``python -m verityrag.serve`` (``make run``): the REST API and the Streamlit app on one index.

Starts ``uvicorn verityrag.api:app`` (with ``VERITYRAG_LOAD_BUNDLED=1``: the bundled
corpus as the ``demo`` collection on the index's first start, the reranker trained and the
gate calibrated on it) and ``streamlit run app.py -- --api-url URL`` with the API's address,
so the app asks and adds documents through the API: one index behind both
(docs/decisions/0054-one-index.md). The index is kept in ``var/`` (``--data-dir``,
``VERITYRAG_DATA_DIR``; ``--in-memory`` keeps nothing), so a restart brings back every
document added. It
prints each one's URL as soon as it answers its health check, and runs until Ctrl-C or
until either stops (then it stops the other and exits non-zero).
``--check`` asks the API one question, then shuts both down: a smoke test of the run
command.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import errno
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import httpx

from verityrag.checks.registry import requested_checks
from verityrag.config import Settings
from verityrag.errors import VerityRAGError
from verityrag.ingest.writer import data_dir_from_env

ROOT = Path(__file__).resolve().parents[2]
APP_FILE = ROOT / "app.py"
#: Where ``make run`` keeps its index unless told otherwise (git-ignored).
DEFAULT_DATA_DIR = ROOT / "var"
CHECK_QUESTION = "Who did Tesla work for in New York in 1884?"


@dataclass
class Service:
    name: str
    url: str
    health_path: str
    process: subprocess.Popen[bytes]


def _end_with_parent(parent: int) -> Callable[[], None] | None:
    """A ``preexec_fn`` that has the kernel send the child SIGTERM when its parent dies (Linux's
    ``PR_SET_PDEATHSIG``): a ``kill -9`` of the launcher left the API and the app running, holding
    their ports, so the next ``make run`` could not start. SIGTERM stops them as Ctrl-C does (the
    API writes its index image). None elsewhere. The C function is found here, in the parent:
    between fork and exec the child only calls it."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None

    def arrange() -> None:
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the request was in place
            os.kill(os.getpid(), signal.SIGTERM)

    return arrange


_PR_SET_PDEATHSIG = 1


def start_child(command: Sequence[str], **options: Any) -> subprocess.Popen[bytes]:
    """``subprocess.Popen(command, **options)`` for a part the launcher runs: it ends when the
    launcher does, however the launcher ends."""
    return subprocess.Popen(list(command), preexec_fn=_end_with_parent(os.getpid()), **options)


def free_port(host: str) -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
        return port


# How long the API keeps an idle keep-alive connection open. uvicorn's default (5 s) equals the
# idle expiry of common client pools (httpx's is 5 s), so a client reusing a connection at ~5 s
# can send its request just as the server closes it, and gets a transport error for a request
# the server never saw. Longer than the clients' expiry, the client always closes first, which
# is race-free. 75 s is also above the idle timeouts of common load balancers (60 s), which must
# be the ones to close. scripts/keepalive_race_check.py measures both settings (session 12:
# about 1 reuse in 80 after ~5 s idle failed at uvicorn's default, none at 75 s).
API_KEEP_ALIVE_S = 75


def api_command(host: str, port: int, keep_alive_s: int = API_KEEP_ALIVE_S) -> list[str]:
    return [
        sys.executable,
        "-m",
        "uvicorn",
        "verityrag.api:app",
        "--host",
        host,
        "--port",
        str(port),
        "--timeout-keep-alive",
        str(keep_alive_s),
    ]


def ui_command(host: str, port: int, api_url: str | None = None) -> list[str]:
    """``streamlit run app.py``; with ``api_url``, the app asks that API (one index) instead of
    building a pipeline of its own (:mod:`verityrag.ui.answer_source`)."""
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(APP_FILE),
        "--server.headless=true",
        f"--server.address={host}",
        f"--server.port={port}",
        "--browser.gatherUsageStats=false",
        "--logger.level=warning",  # not its info line "Uvicorn server started on ...:8501" among our URLs
        *(["--", "--api-url", api_url] if api_url else []),  # the script's own arguments
    ]


def wait_healthy(service: Service, timeout_s: float) -> None:
    """Return once ``service`` answers its health check; SystemExit if it dies or times out."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            reply = httpx.get(service.url + service.health_path, timeout=2, trust_env=False)
            if reply.status_code == 200:
                return
            if reply.status_code == 503:  # up, but it could not build its pipeline: say why, now
                reason = (
                    reply.json().get("reason") if "json" in reply.headers.get("content-type", "") else None
                )
                if reason:
                    raise SystemExit(f"{service.name} is unavailable: {reason}")
        except httpx.TransportError:
            pass
        if service.process.poll() is not None:
            raise SystemExit(f"{service.name} exited with code {service.process.returncode} during start-up")
        if time.monotonic() > deadline:
            raise SystemExit(
                f"{service.name} did not become healthy within {timeout_s:.0f} s ({service.url})"
            )
        time.sleep(0.25)


#: How long a service may take to stop: the API writes the index image at its clean stop (about
#: 25 s at a million chunks); killed sooner, the next start rebuilds the index from the store.
STOP_WAIT_S = 120.0


def _stop(services: list[Service]) -> None:
    for service in services:
        if service.process.poll() is None:
            service.process.terminate()
    for service in services:
        try:
            service.process.wait(STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            service.process.kill()


@contextlib.contextmanager
def running_services(
    host: str,
    api_port: int,
    ui_port: int,
    data_dir: Path | None,
    startup_s: float,
    on_ready: Callable[[Service, float], None] | None = None,
    since: float | None = None,
) -> Iterator[list[Service]]:
    """Start the API and the app together, yield them once both are healthy, always stop both.

    The app gets the API's address (``--api-url``): it serves the API's index, never
    one of its own. ``on_ready(service, seconds)`` is called as each one answers its health check,
    with the seconds since ``since`` (a ``time.monotonic()``; default: this call).
    """
    started = time.monotonic() if since is None else since
    env = {**os.environ, "VERITYRAG_LOAD_BUNDLED": "1"}
    env.pop("VERITYRAG_DATA_DIR", None)  # None: memory only, whatever the environment says
    if data_dir is not None:
        env["VERITYRAG_DATA_DIR"] = str(data_dir)
    api_port = api_port or free_port(host)
    ui_port = ui_port or free_port(host)
    api_url = f"http://{host}:{api_port}"
    # The app builds no pipeline of its own: it neither loads the corpus nor persists anything.
    ui_env = {k: v for k, v in env.items() if k not in ("VERITYRAG_LOAD_BUNDLED", "VERITYRAG_DATA_DIR")}
    services: list[Service] = []
    try:
        api = start_child([*api_command(host, api_port), "--log-level", "warning"], env=env, cwd=ROOT)
        services.append(Service("API", api_url, "/health", api))
        ui = start_child(ui_command(host, ui_port, api_url), env=ui_env, cwd=ROOT, stdout=subprocess.DEVNULL)
        services.append(Service("Streamlit app", f"http://{host}:{ui_port}", "/_stcore/health", ui))
        for service in services:
            wait_healthy(service, startup_s)
            if on_ready is not None:
                on_ready(service, time.monotonic() - started)
        yield services
    finally:
        _stop(services)


def announce(service: Service, seconds: float) -> None:
    """Print a part's URL the moment it is ready, with how long it took."""
    if service.name == "API":
        print(f"API:           {service.url}  (OpenAPI docs: {service.url}/docs; ready in {seconds:.1f} s)")
    else:
        print(f"Streamlit app: {service.url}  (ready in {seconds:.1f} s; it asks the API above)")
    sys.stdout.flush()


def _sigterm_as_ctrl_c(signum: int, frame: FrameType | None) -> None:
    """SIGTERM does what Ctrl-C does: asyncio.run's SIGINT handler cancels its task, else KeyboardInterrupt."""
    handler = signal.getsignal(signal.SIGINT)
    if not callable(handler):
        raise KeyboardInterrupt
    handler(signal.SIGINT, frame)


@contextlib.contextmanager
def running_api_server(
    data_dir: Path,
    api_key: str,
    startup_s: float = 60.0,
    keep_alive_s: int = API_KEEP_ALIVE_S,
    host: str = "127.0.0.1",
) -> Iterator[str]:
    """The real API server (``uvicorn verityrag.api:app``) for a benchmark or a check: yields its base
    URL; it persists in ``data_dir``, guards writes with ``api_key``, and is stopped on leaving.

    It binds with ``--host/--port``, not ``--fd``: with ``--fd`` uvicorn treats the socket as
    non-TCP, TCP_NODELAY is never set, and every response waits ~40 ms (Nagle with delayed ACK;
    measured: /health 44 ms vs 0.8 ms).
    """
    port = free_port(host)
    url = f"http://{host}:{port}"
    env = {**os.environ, "VERITYRAG_DATA_DIR": str(data_dir), "VERITYRAG_API_KEY": api_key}
    # A plain ``kill`` (SIGTERM) of the script ended it at once, skipping the finally below: the
    # server kept running, and the caller's temporary data dir stayed. Taken as Ctrl-C, both go.
    on_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _sigterm_as_ctrl_c) if on_main_thread else None
    proc = start_child([*api_command(host, port, keep_alive_s), "--log-level", "warning"], env=env)
    service = Service("the API server", url, "/health", proc)
    try:
        wait_healthy(service, startup_s)
        yield url
    finally:
        _stop([service])
        if on_main_thread:
            signal.signal(signal.SIGTERM, previous)


def check_query(api_url: str) -> int:
    """Ask the API one question and print the verdict: 0 when it answers, 1 when it abstains."""
    reply = httpx.post(f"{api_url}/query", json={"question": CHECK_QUESTION}, timeout=30, trust_env=False)
    reply.raise_for_status()
    body = reply.json()
    verdict = f"abstained ({body['abstain_reason']})" if body["abstained"] else f"answered: {body['answer']}"
    print(f"check: POST /query {CHECK_QUESTION!r} -> {verdict}", flush=True)
    return 0 if not body["abstained"] else 1


def check_mcp(api_url: str) -> int:
    """Start the MCP server on the API's index as an MCP client would (stdio), ask it the check's
    question, and print how long it took to be ready and to answer: 0 when it answers."""
    import anyio

    return anyio.run(_check_mcp, api_url)


async def _check_mcp(api_url: str) -> int:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "verityrag.mcp_server", "--api-url", api_url],
        env=dict(os.environ),
        cwd=ROOT,
    )
    started = time.perf_counter()
    with open(os.devnull, "w") as quiet:
        async with stdio_client(params, errlog=quiet) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            ready_s = time.perf_counter() - started
            result = await session.call_tool("query", {"question": CHECK_QUESTION})
            answered_s = time.perf_counter() - started
    body = result.structured_content or {}
    verdict = "abstained" if result.is_error or body.get("abstained", True) else f"answered: {body['answer']}"
    print(
        f"check: MCP server (--api-url) ready in {ready_s:.1f} s, first query {verdict} "
        f"({answered_s:.1f} s after start)",
        flush=True,
    )
    return 0 if verdict.startswith("answered") else 1


def port_problem(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be bound (probed as uvicorn and Streamlit bind: SO_REUSEADDR), or None."""
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return "is already in use (pick another; 0 picks a free one)"
            return f"cannot be bound ({exc.strerror})"
    return None


def port_number(text: str) -> int:
    """An argparse type: a TCP port, 0 (a free one) to 65535."""
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text} is not a port (0-65535; 0 picks a free one)")
    return port


def prepare_bundled() -> None:
    """Calibrate the bundled pipeline once, here, when no calibration of it is saved, so the
    API restores it in a second (:func:`verityrag.serve.bundled.calibrate_on_bundled` saves
    it); say how long it took. With a saved one this costs a fraction of a second: the
    corpus is chunked to find the calibration's key, and no model is loaded."""
    from verityrag.pipeline import IN_MEMORY, VerityRAGPipeline
    from verityrag.serve.bundled import calibrate_on_bundled, calibration_path, load_bundled_corpus

    started = time.perf_counter()
    # The settings the API will read (it inherits this environment): the same calibration key.
    pipeline = VerityRAGPipeline(data_dir=IN_MEMORY, settings=Settings.from_env())
    if pipeline.checks() or calibration_path(pipeline).is_file():
        return  # saved (or learned checks are on: the API fits them, as it must every start)
    print(
        "Preparing the bundled corpus (calibrated once, then cached: the first time about a minute)...",
        flush=True,
    )
    load_bundled_corpus(pipeline)
    calibrate_on_bundled(pipeline)
    print(f"Bundled corpus ready in {time.perf_counter() - started:.1f} s.", flush=True)


def data_dir_to_use(given: Path | None) -> Path:
    """``--data-dir``, else ``VERITYRAG_DATA_DIR``, else ``var/`` in the checkout; absolute."""
    return (given or data_dir_from_env() or DEFAULT_DATA_DIR).expanduser().resolve()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m verityrag.serve", description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (default loopback)")
    parser.add_argument(
        "--api-port", type=port_number, default=8000, help="the API's port (default 8000; 0 picks a free one)"
    )
    parser.add_argument(
        "--ui-port", type=port_number, default=8501, help="the app's port (default 8501; 0 picks a free one)"
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help=f"keep the index here (default: $VERITYRAG_DATA_DIR, else {DEFAULT_DATA_DIR.relative_to(ROOT)}/)",
    )
    parser.add_argument(
        "--in-memory", action="store_true", help="keep nothing: the index lives in memory only"
    )
    parser.add_argument("--startup-timeout", type=float, default=180.0, metavar="S")
    parser.add_argument("--check", action="store_true", help="ask one question, then stop both")
    args = parser.parse_args(argv)
    if args.startup_timeout <= 0:
        parser.error("--startup-timeout must be > 0 seconds")
    if args.in_memory and args.data_dir is not None:
        parser.error("--in-memory and --data-dir: give one of them")
    data_dir = None if args.in_memory else data_dir_to_use(args.data_dir)
    if data_dir is not None and data_dir.exists() and not data_dir.is_dir():
        parser.error(f"--data-dir {data_dir}: is a file, not a folder")
    try:
        socket.getaddrinfo(args.host, None)
    except socket.gaierror as exc:
        parser.error(f"--host {args.host!r} does not resolve ({exc.strerror})")
    try:  # the API and the app read the same settings: a bad VERITYRAG_* value stops both here
        checks = ", ".join(requested_checks(Settings.from_env()))
    except VerityRAGError as exc:
        parser.error(str(exc))
    # A taken port showed only once the API had loaded and calibrated the corpus (~15 s), as
    # uvicorn's "address already in use" and "API exited with code 3": say so now, naming the flag.
    if args.api_port and args.api_port == args.ui_port:
        parser.error(f"--api-port and --ui-port are both {args.api_port}: give them different ports")
    for flag, port in (("--api-port", args.api_port), ("--ui-port", args.ui_port)):
        problem = port_problem(args.host, port) if port else None
        if problem:
            parser.error(f"{flag} {port}: {args.host}:{port} {problem}")

    def on_signal(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    started = time.monotonic()  # each part's "ready in" counts from here
    try:
        prepare_bundled()
    except KeyboardInterrupt:
        print("\nStopped.")
        return 0
    except VerityRAGError as exc:  # a missing model or dataset: say what to run, no traceback
        print(f"error: {exc}", file=sys.stderr)
        return 2
    wait = f"fitting the learned checks ({checks}) adds up to ~20 s" if checks else "a few seconds"
    print(f"Starting the API and the Streamlit app on one index ({wait})...", flush=True)
    if data_dir is None:
        print("Index: in memory only (--in-memory): what you add is gone when this stops.", flush=True)
    else:
        print(f"Index: kept in {data_dir} (a restart brings back what you add; --in-memory keeps nothing).")
    try:
        with running_services(
            args.host, args.api_port, args.ui_port, data_dir, args.startup_timeout, announce, started
        ) as services:
            api = services[0]
            print("Both ready: a document added in the app or through the API is answered in both.")
            print(
                "Questions ask your documents once you add some; the bundled ones are the 'demo' "
                "collection (removable in the app)."
            )
            print(
                "MCP server on this index (the command for your MCP client): "
                f"{shlex.quote(sys.executable)} -m verityrag.mcp_server --api-url {api.url}"
            )
            print(f"Questions in the terminal, on this index: make ask API_URL={api.url}")
            if args.check:
                return check_query(api.url) or check_mcp(api.url)
            print("Ctrl-C stops both.", flush=True)
            while all(s.process.poll() is None for s in services):
                time.sleep(0.5)
            stopped = next(s for s in services if s.process.poll() is not None)
            print(f"{stopped.name} stopped (code {stopped.process.returncode}); stopping the other.")
            return 1
    except KeyboardInterrupt:
        print("\nStopped.")
        return 0
