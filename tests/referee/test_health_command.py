"""`referee health ADDR`: one grpc.health.v1 check, as a container's health check runs it
(deploy/compose.yaml). Exit 0 and the status on stdout when SERVING; exit 1 and one line on
stderr for another answer or none; exit 2 and one line for bad usage."""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from grpc_health.v1 import health_pb2

from tests.fake_bot import ScriptedBot, ScriptedBotServer
from tests.service_support import TOKEN, make_pki
from tests.support import ROOT, assert_usage_error, run_referee, start_referee


def one_line(text: str) -> str:
    assert text.count("\n") == 1, text
    return text.strip()


def test_a_referee_service_answers_serving_on_its_tls_port_and_its_plaintext_health_port(tmp_path: Path) -> None:
    pki = make_pki(tmp_path / "pki")
    (tmp_path / "token").write_text(TOKEN + "\n")
    server = start_referee(
        "serve", "--listen", "127.0.0.1:0", "--records", str(tmp_path / "records"),
        "--token-file", str(tmp_path / "token"), "--tls-cert", str(pki.server_cert), "--tls-key", str(pki.server_key),
        "--health-listen", "127.0.0.1:0", stdout=subprocess.PIPE)
    try:
        assert server.stdout is not None
        listening = re.search(r"\(port (\d+);", server.stdout.readline())
        health_line = re.search(r"\(port (\d+)\)", server.stdout.readline())
        assert listening and health_line, server.poll()
        main, plain = f"127.0.0.1:{listening.group(1)}", f"127.0.0.1:{health_line.group(1)}"
        over_tls = run_referee("health", main, "--tls-ca", str(pki.ca), timeout=60)
        plaintext = run_referee("health", plain, timeout=60)
        tls_port_in_plaintext = run_referee("health", main, "--timeout", "3", timeout=60)
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=30) == 0
    # its health needs no token, on either port
    assert (over_tls.returncode, one_line(over_tls.stdout), over_tls.stderr) == (0, f"{main}: SERVING", "")
    assert (plaintext.returncode, one_line(plaintext.stdout), plaintext.stderr) == (0, f"{plain}: SERVING", "")
    assert tls_port_in_plaintext.returncode == 1 and tls_port_in_plaintext.stdout == ""
    assert one_line(tls_port_in_plaintext.stderr).startswith(f"{main}: no answer: "), tls_port_in_plaintext.stderr


@pytest.mark.parametrize("status, name", [
    (health_pb2.HealthCheckResponse.SERVING, "SERVING"),
    (health_pb2.HealthCheckResponse.NOT_SERVING, "NOT_SERVING"),
], ids=["serving", "not-serving"])
def test_a_bots_answer_is_the_exit_status(status: int, name: str) -> None:
    async def check() -> tuple[str, int, str, str]:
        async with ScriptedBotServer(ScriptedBot(), health_status=status) as server:
            process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "referee.cli", "health", server.address, cwd=ROOT,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
            out, err = await asyncio.wait_for(process.communicate(), 60)
            assert process.returncode is not None
            return server.address, process.returncode, out.decode(), err.decode()

    address, code, out, err = asyncio.run(check())
    if name == "SERVING":
        assert (code, one_line(out), err) == (0, f"{address}: SERVING", "")
    else:
        assert (code, out, one_line(err)) == (1, "", f"{address}: {name}")


def test_nothing_listening_is_exit_1_in_one_line(tmp_path: Path) -> None:
    done = run_referee("health", f"unix:{tmp_path / 'nobody.sock'}", "--timeout", "2", timeout=60)
    assert done.returncode == 1 and done.stdout == ""
    assert one_line(done.stderr).startswith(f"unix:{tmp_path / 'nobody.sock'}: no answer: UNAVAILABLE"), done.stderr


@pytest.mark.parametrize("args, message", [
    (["localhost"], "bad address 'localhost': give host:port or unix:/path"),
    (["unix:"], "bad address 'unix:': give host:port or unix:/path"),
    (["unix:/" + "x" * 120], "a unix socket's path has at most 107 bytes"),
    (["localhost:1", "--timeout", "0"], "--timeout must be more than 0 and at most 300 seconds"),
    (["localhost:1", "--timeout", "nan"], "--timeout must be more than 0 and at most 300 seconds"),
    (["localhost:1", "--tls-ca", "/nonexistent/ca.pem"], "/nonexistent/ca.pem"),
], ids=["no-port", "empty-unix", "long-unix", "zero-timeout", "nan-timeout", "missing-ca"])
def test_bad_usage_is_exit_2_in_one_line(args: list[str], message: str) -> None:
    line = assert_usage_error(run_referee("health", *args, timeout=60))
    assert message in line, line
