"""The run command's launcher starts the API and the Streamlit app on the bundled corpus, prints their URLs."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from verityrag.serve import main, ui_command
from verityrag.ui.answer_source import api_url_from_args


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_serve_check_starts_both_and_answers() -> None:
    cmd = [
        sys.executable,
        "-m",
        "verityrag.serve",
        "--check",
        "--in-memory",
        "--api-port",
        "0",
        "--ui-port",
        "0",
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "API:           http://127.0.0.1:" in done.stdout
    assert "Streamlit app: http://127.0.0.1:" in done.stdout
    # Each part says when it is ready (and the bundled corpus too, when its cache was cold).
    assert re.search(r"^API: .*ready in \d", done.stdout, re.M)
    assert re.search(r"^Streamlit app: .*ready in \d", done.stdout, re.M)
    assert "Both ready" in done.stdout
    assert "-> answered:" in done.stdout
    assert "Edison" in done.stdout
    # The MCP server on the API's index, started as a client starts it: ready and answering.
    # The MCP command as printed, with this interpreter: it runs without the virtualenv activated.
    mcp_line = f"{sys.executable} -m verityrag.mcp_server --api-url http://127.0.0.1:"
    assert mcp_line in done.stdout
    assert "Index: in memory only (--in-memory)" in done.stdout
    assert "make ask API_URL=http://127.0.0.1:" in done.stdout
    assert re.search(
        r"^check: MCP server \(--api-url\) ready in \d+\.\d s, first query answered: .*Edison",
        done.stdout,
        re.M,
    )
    assert "Uvicorn server started" not in done.stderr  # Streamlit's info line, the app's port as "Uvicorn"


@pytest.mark.integration  # python -m verityrag.serve, in a child process
def test_serve_rejects_bad_port() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "verityrag.serve", "--api-port", "x"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "argument --api-port: x is not a port" in done.stderr


@pytest.mark.unit
@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--api-port", "70000"], "70000 is not a port"),
        (["--ui-port", "-1"], "-1 is not a port"),
        (["--host", "no-such-host.invalid"], "does not resolve"),
        (["--startup-timeout", "0"], "--startup-timeout must be > 0"),
        (["--in-memory", "--data-dir", "x"], "--in-memory and --data-dir: give one of them"),
    ],
)
def test_serve_refuses_bad_options_before_starting_anything(
    argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    assert expected in capsys.readouterr().err


@pytest.mark.integration  # binds a real loopback port to hold it taken
@pytest.mark.parametrize("flag", ["--api-port", "--ui-port"])
def test_serve_port_in_use_is_refused_before_starting_anything(
    flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        other = "--ui-port" if flag == "--api-port" else "--api-port"
        with pytest.raises(SystemExit) as stopped:  # not ~15 s later, as uvicorn's bind error
            main([flag, str(port), other, "0"])
    assert stopped.value.code == 2
    assert f"{flag} {port}: 127.0.0.1:{port} is already in use" in capsys.readouterr().err


@pytest.mark.unit
def test_serve_same_port_for_both_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["--api-port", "8123", "--ui-port", "8123"])
    assert stopped.value.code == 2
    assert "--api-port and --ui-port are both 8123" in capsys.readouterr().err


@pytest.mark.unit
def test_serve_names_a_bad_setting(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("VERITYRAG_TOP_K", "many")
    with pytest.raises(SystemExit) as stopped:
        main([])
    assert stopped.value.code == 2
    assert "VERITYRAG_TOP_K" in capsys.readouterr().err


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_a_data_folder_that_is_a_file_is_refused_at_once(tmp_path: Path) -> None:
    a_file = tmp_path / "not_a_folder"
    a_file.write_text("")
    cmd = [
        sys.executable,
        "-m",
        "verityrag.serve",
        "--api-port",
        "0",
        "--ui-port",
        "0",
        "--data-dir",
        str(a_file),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=110)
    assert done.returncode == 2  # refused before anything starts
    assert f"--data-dir {a_file}: is a file, not a folder" in done.stderr


@pytest.mark.unit
def test_the_app_is_given_the_apis_address_as_its_own_argument() -> None:
    cmd = ui_command("127.0.0.1", 8501, "http://127.0.0.1:8000")
    script_args = cmd[cmd.index("--") + 1 :]  # what Streamlit passes to app.py
    assert api_url_from_args(script_args) == "http://127.0.0.1:8000"
    assert "--" not in ui_command("127.0.0.1", 8501)  # alone: the app builds its own pipeline
