"""`referee serve --metrics-listen` during real matches: its gRPC calls by method and code, and
its games and moves, equal what it answered and recorded; `--health-listen` answers health
checks in plaintext beside a TLS port (for Kubernetes' gRPC probes, docs/deploy.md)."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
from collections import Counter
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from casino.v1 import referee_pb2_grpc
from referee.service.client import ClientTls, referee_channel
from tests.conftest import assert_no_bot_processes, builtin_bot_command
from tests.metrics_support import by_label, metrics_url, scrape, total
from tests.referee.test_service_security import UNAUTHENTICATED, refused, run_match_request
from tests.service_support import TOKEN, make_pki
from tests.support import assert_usage_error, run_referee, start_referee

SERVICE = "casino.v1.RefereeService"


def test_serve_counts_its_calls_games_and_moves_and_answers_health_in_plaintext(tmp_path: Path) -> None:
    pki = make_pki(tmp_path / "pki")
    (tmp_path / "token").write_text(TOKEN + "\n")
    records = tmp_path / "records"
    server = start_referee(
        "serve", "--listen", "127.0.0.1:0", "--records", str(records), "--token-file", str(tmp_path / "token"),
        "--tls-cert", str(pki.server_cert), "--tls-key", str(pki.server_key),
        "--health-listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
        "--bot", f"random1={builtin_bot_command(1)}", "--bot", f"random2={builtin_bot_command(2)}",
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert server.stdout is not None and server.stderr is not None
        url = metrics_url(server.stderr.readline, lambda: server.poll() is None)  # printed before it serves
        listening = re.search(r"\(port (\d+);", server.stdout.readline())
        health_line = re.search(r"health checks \(plaintext\) on 127\.0\.0\.1:0 \(port (\d+)\)", server.stdout.readline())
        assert listening and health_line, server.poll()
        address, health_address = f"127.0.0.1:{listening.group(1)}", f"127.0.0.1:{health_line.group(1)}"

        async def client() -> tuple[list, int, grpc.StatusCode]:
            tls = ClientTls.from_files(ca=str(pki.ca))
            async with referee_channel(address, token_file=str(tmp_path / "token"), tls=tls) as channel, \
                    referee_channel(address, tls=tls) as no_token, grpc.aio.insecure_channel(health_address) as plain:
                async with asyncio.timeout(90):
                    stub = referee_pb2_grpc.RefereeServiceStub(channel)
                    events = [e async for e in stub.RunMatch(run_match_request(["random1", "random2"], games=2))]
                    refusal = await refused(referee_pb2_grpc.RefereeServiceStub(no_token).RunMatch(
                        run_match_request(["random1", "random2"])))
                    healthy = await health_pb2_grpc.HealthStub(plain).Check(health_pb2.HealthCheckRequest())
                    return events, healthy.status, refusal.code()

        events, status, refused_code = asyncio.run(client())
        got = scrape(url)
    finally:
        server.send_signal(signal.SIGTERM)
        code = server.wait(timeout=30)
    assert code == 0
    assert status == health_pb2.HealthCheckResponse.SERVING and refused_code == UNAUTHENTICATED
    assert len(events[-1].match_result.game_ids) == 2
    # the calls, by method and code (the refused one too: the metrics' interceptor sits outermost)
    assert by_label(got, "grpc_server_handled_total", "grpc_service", "grpc_method", "grpc_code") == {
        (SERVICE, "RunMatch", "OK"): 1, (SERVICE, "RunMatch", "UNAUTHENTICATED"): 1,
        ("grpc.health.v1.Health", "Check", "OK"): 1}
    assert total(got, "grpc_server_handling_seconds_count", grpc_method="RunMatch") == 2
    # the games and moves, as recorded
    played = [json.loads(p.read_text()) for p in records.glob("*.json")]
    assert len(played) == 2
    assert total(got, "referee_games_started_total") == 2
    assert total(got, "referee_games_finished_total") == 2
    plays = Counter(r["seats"][seat]["name"] for r in played
                    for i, (seat, _us) in enumerate(r["timings_us"]) if i not in r.get("forced", ()))
    assert total(got, "referee_forced_plays_total") == sum(len(r.get("forced", ())) for r in played) > 0
    assert by_label(got, "referee_moves_judged_total", "bot") == {(name,): n for name, n in plays.items()}
    assert total(got, "referee_move_cpu_seconds_count") == sum(plays.values()), "the sandbox measured every asked move"
    assert_no_bot_processes()


def test_a_bad_metrics_or_health_address_is_one_line_and_exit_2() -> None:
    for flag, value in (("--metrics-listen", "nowhere"), ("--metrics-listen", "127.0.0.1:70000"),
                        ("--health-listen", "256.1.1.1:1")):
        line = assert_usage_error(run_referee("serve", "--listen", "127.0.0.1:0", flag, value), "referee")
        assert value in line, line
