"""The Referee service locked down (referee/service/, docs/service.md), against real servers on
real ports and unix sockets with real bot processes:

* the token: no token and a wrong one are UNAUTHENTICATED for every method but health (an
  unknown method too); reflection is off when a token is required unless asked for;
* TLS (a CA and certificates made by the test): a round trip with the token; a client that does
  not trust the server's CA, or speaks plaintext, does not get in; mutual TLS lets in only a
  client certificate of the configured CA;
* limits: concurrent RunMatch calls and games per call are refused (RESOURCE_EXHAUSTED,
  INVALID_ARGUMENT); a records folder without room stops a match before its record is written
  and refuses the next, as does a disk below the free-space floor;
* bots a client may name: the server's own by name; any address not on the allow-list is refused
  in the same words whether its port is open or closed, without a connection; an allowed address
  that fails (closed, not gRPC, not a bot) is one generic reason, in events and records, with
  the detail only in the server's log;
* ``referee serve``: a public address without authentication, ``--allow-commands`` without it
  and unusable TLS or token files exit 2 with one line; a real server with a token and TLS plays
  a match of its own bots.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import select
import signal
import socket
import subprocess
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from casino.v1 import game_pb2, referee_pb2, referee_pb2_grpc
from referee.errors import ServiceSettingsError
from referee.service.auth import NO_TOKEN, WRONG_TOKEN
from referee.service.client import ClientTls, referee_channel
from referee.service.server import CONNECT_FAILED
from referee.service.settings import ServiceSettings, is_local_address, load_tls, parse_bot
from tests.conftest import ROOMY_TIME, assert_no_bot_processes, bot_processes, builtin_bot_command, python_bot_command
from tests.service_support import TOKEN, Pki, make_pki, served, with_server
from tests.support import assert_usage_error, run_referee, start_referee

UNAUTHENTICATED = grpc.StatusCode.UNAUTHENTICATED
OWN_BOTS = tuple(parse_bot(f"random{seed}={builtin_bot_command(seed)}") for seed in (1, 2))


def run_match_request(bots: list[str], games: int = 1, **fields: object) -> referee_pb2.RunMatchRequest:
    return referee_pb2.RunMatchRequest(bots=bots, options=game_pb2.RuleOptions(players=len(bots)), games=games,
                                       seed=3, time_control=fields.pop("time_control", ROOMY_TIME.to_pb()), **fields)


async def refused(call: object) -> grpc.aio.AioRpcError:
    """The error a call (a coroutine, or a stream read to its end) ends with."""
    with pytest.raises(grpc.aio.AioRpcError) as error:
        if hasattr(call, "__aiter__"):
            [event async for event in call]  # type: ignore[attr-defined]
        else:
            await call  # type: ignore[misc]
    return error.value


# --- the token ---------------------------------------------------------------------------------

def reflection_services(channel: grpc.aio.Channel, metadata: tuple = ()) -> object:
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    return stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]),
                                     metadata=metadata)


def test_without_the_token_every_method_but_health_is_unauthenticated(tmp_path: Path) -> None:
    settings = ServiceSettings(token=TOKEN, bots=OWN_BOTS)

    async def body(channel: grpc.aio.Channel):
        stub = referee_pb2_grpc.RefereeServiceStub(channel)
        errors = [
            await refused(stub.RunMatch(run_match_request(["random1", "random2"]))),
            await refused(stub.GetGameRecord(referee_pb2.GetGameRecordRequest(game_id="x"))),
            await refused(reflection_services(channel)),
            await refused(channel.unary_unary("/casino.v1.RefereeService/NoSuchMethod")(b"")),
        ]
        healthy = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=""))
        return errors, healthy.status

    errors, status = asyncio.run(with_server(tmp_path, body, settings, token=""))  # "": send no token
    assert [(e.code(), e.details()) for e in errors] == [(UNAUTHENTICATED, NO_TOKEN)] * 4
    assert status == health_pb2.HealthCheckResponse.SERVING, "health checks need no token"
    assert list(tmp_path.iterdir()) == [], "nothing was played or written"
    assert_no_bot_processes()


def test_a_wrong_token_is_unauthenticated(tmp_path: Path) -> None:
    settings = ServiceSettings(token=TOKEN)
    wrong = [
        (("authorization", "Bearer " + TOKEN[:-1]),),  # one character short
        (("authorization", "Bearer " + TOKEN + "x"),),
        (("authorization", "Bearer " + TOKEN.upper()),),
        (("authorization", "Basic " + TOKEN),),  # the right token under another scheme
        (("authorization", TOKEN),),
        (("authorization", "Bearer " + TOKEN), ("authorization", "Bearer " + TOKEN)),  # given twice
    ]

    async def body(channel: grpc.aio.Channel):
        stub = referee_pb2_grpc.RefereeServiceStub(channel)
        request = referee_pb2.GetGameRecordRequest(game_id="no-such-game")
        errors = [await refused(stub.GetGameRecord(request, metadata=metadata)) for metadata in wrong]
        right = await refused(stub.GetGameRecord(request, metadata=(("authorization", "bearer " + TOKEN),)))
        return errors, right

    errors, right = asyncio.run(with_server(tmp_path, body, settings, token=""))
    assert [(e.code(), e.details()) for e in errors] == [(UNAUTHENTICATED, WRONG_TOKEN)] * len(wrong)
    assert right.code() == grpc.StatusCode.NOT_FOUND, "the right token (scheme in any case) gets in"


@pytest.mark.parametrize("asked, listed", [(None, False), (True, True)], ids=["default-off", "asked-for"])
def test_reflection_is_off_with_a_token_unless_asked_for(tmp_path: Path, asked: bool | None, listed: bool) -> None:
    settings = ServiceSettings(token=TOKEN, reflection=asked)

    async def body(channel: grpc.aio.Channel):
        try:
            replies = [r async for r in reflection_services(channel)]
        except grpc.aio.AioRpcError as error:
            return error.code(), []
        return grpc.StatusCode.OK, [s.name for r in replies for s in r.list_services_response.service]

    code, services = asyncio.run(with_server(tmp_path, body, settings))
    if listed:
        assert code == grpc.StatusCode.OK and "casino.v1.RefereeService" in services
    else:
        assert code == grpc.StatusCode.UNIMPLEMENTED, "no reflection service, even for a client with the token"


# --- TLS ---------------------------------------------------------------------------------------

def tls_settings(pki: Pki, mutual: bool = False, **fields: object) -> ServiceSettings:
    tls = load_tls(str(pki.server_cert), str(pki.server_key), str(pki.ca) if mutual else None)
    return ServiceSettings(tls=tls, **fields)  # type: ignore[arg-type]


async def code_of(address: str, tls: ClientTls | None, token: str | None = None) -> grpc.StatusCode:
    """What GetGameRecord of a game that does not exist ends with, from a new client: NOT_FOUND
    when the client got in."""
    async with referee_channel(address, token=token, tls=tls) as client:
        error = await refused(referee_pb2_grpc.RefereeServiceStub(client).GetGameRecord(
            referee_pb2.GetGameRecordRequest(game_id="no-such-game"), timeout=10))
    return error.code()


def test_tls_round_trip_with_the_token(tmp_path: Path) -> None:
    pki = make_pki(tmp_path / "pki")
    settings = tls_settings(pki, token=TOKEN, bots=OWN_BOTS)
    trusted = ClientTls.from_files(ca=str(pki.ca))
    stranger = ClientTls.from_files(ca=str(pki.stranger_cert))  # trusts another CA only
    records = tmp_path / "records"
    records.mkdir()

    async def scenario():
        async with served(records, settings) as address:
            async with referee_channel(address, token=TOKEN, tls=trusted) as channel, asyncio.timeout(90):
                stub = referee_pb2_grpc.RefereeServiceStub(channel)
                events = [e async for e in stub.RunMatch(run_match_request(["random1", "random2"], games=2))]
                game_id = events[-1].match_result.game_ids[0]
                reply = await stub.GetGameRecord(referee_pb2.GetGameRecordRequest(game_id=game_id))
            # a client that does not trust the server's CA; one that speaks plaintext
            others = [await code_of(address, tls, TOKEN) for tls in (stranger, None)]
        return events, json.loads(reply.record_json), others

    events, record, others = asyncio.run(scenario())
    assert list(events[0].match_started.bot_names) == ["builtin-random", "builtin-random"]
    assert [e.game_result.termination for e in events if e.HasField("game_result")] == [game_pb2.TERMINATION_NORMAL] * 2
    assert [s["endpoint"] for s in record["seats"]] == ["random1", "random2"], "records show the names clients gave"
    assert others == [grpc.StatusCode.UNAVAILABLE] * 2
    assert_no_bot_processes()


def test_mutual_tls_lets_in_only_certificates_of_its_ca(tmp_path: Path) -> None:
    pki = make_pki(tmp_path / "pki")
    settings = tls_settings(pki, mutual=True)
    assert settings.authenticated and not settings.reflection_on, "a client certificate is authentication"
    clients = {
        "its-ca": ClientTls.from_files(ca=str(pki.ca), cert=str(pki.client_cert), key=str(pki.client_key)),
        "no-certificate": ClientTls.from_files(ca=str(pki.ca)),
        "another-ca": ClientTls.from_files(ca=str(pki.ca), cert=str(pki.stranger_cert), key=str(pki.stranger_key)),
    }

    async def scenario():
        async with served(tmp_path, settings) as address, asyncio.timeout(90):
            return {name: await code_of(address, tls) for name, tls in clients.items()}

    assert asyncio.run(scenario()) == {"its-ca": grpc.StatusCode.NOT_FOUND,
                                       "no-certificate": grpc.StatusCode.UNAVAILABLE,
                                       "another-ca": grpc.StatusCode.UNAVAILABLE}
    # client certificates are authentication enough to listen beyond loopback
    assert ServiceSettings(listen="0.0.0.0:50051", tls=settings.tls).authenticated


# --- limits ------------------------------------------------------------------------------------

def test_concurrent_calls_beyond_the_cap_are_refused(tmp_path: Path) -> None:
    # the first call holds the only place (its bot never answers its first turn, with a 20 s
    # limit); a second is refused at once; once the first is cancelled a third is played
    settings = ServiceSettings(token=TOKEN, allow_commands=True, bots=OWN_BOTS, max_matches=1)
    hanging = run_match_request([python_bot_command("hang", after=1), builtin_bot_command(1)],
                                time_control=game_pb2.TimeControl(move_time_ms=20_000, startup_time_ms=10_000))

    async def body(channel: grpc.aio.Channel):
        stub = referee_pb2_grpc.RefereeServiceStub(channel)
        first = stub.RunMatch(hanging)
        async for event in first:
            if event.HasField("game_started"):
                break
        second = await refused(stub.RunMatch(run_match_request(["random1", "random2"])))
        first.cancel()
        for _ in range(200):  # up to 20 s for the server to see the cancel and free the place
            try:
                return second, [e async for e in stub.RunMatch(run_match_request(["random1", "random2"]))]
            except grpc.aio.AioRpcError as error:
                assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, error
                await asyncio.sleep(0.1)
        raise AssertionError("the cancelled call's place was never freed")

    second, third = asyncio.run(with_server(tmp_path, body, settings))
    assert second.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert second.details() == "this server plays at most 1 matches at once; try again when one has ended"
    assert third[-1].HasField("match_result")
    assert_no_bot_processes()


def test_games_beyond_the_cap_are_refused(tmp_path: Path) -> None:
    settings = ServiceSettings(bots=OWN_BOTS, max_games=2)

    async def body(channel: grpc.aio.Channel):
        stub = referee_pb2_grpc.RefereeServiceStub(channel)
        too_many = await refused(stub.RunMatch(run_match_request(["random1", "random2"], games=3)))
        return too_many, [e async for e in stub.RunMatch(run_match_request(["random1", "random2"], games=2))]

    too_many, played = asyncio.run(with_server(tmp_path, body, settings))
    assert (too_many.code(), too_many.details()) == (grpc.StatusCode.INVALID_ARGUMENT, "games must be 1..2")
    assert len(played[-1].match_result.game_ids) == 2


def test_a_full_records_folder_stops_the_match_before_its_record_and_refuses_the_next(tmp_path: Path) -> None:
    limit = 1 << 20
    filler = tmp_path / "filler.bin"
    filler.write_bytes(b"\0" * (limit - 64))  # room for less than one record
    settings = ServiceSettings(bots=OWN_BOTS, max_record_bytes=limit)

    async def body(channel: grpc.aio.Channel):
        stub = referee_pb2_grpc.RefereeServiceStub(channel)
        seen: list[str] = []
        with pytest.raises(grpc.aio.AioRpcError) as stopped:
            async for event in stub.RunMatch(run_match_request(["random1", "random2"], games=2)):
                seen.append(event.WhichOneof("event"))
        running_after = bot_processes()
        filler.write_bytes(b"\0" * limit)  # now full
        nothing: list[str] = []
        with pytest.raises(grpc.aio.AioRpcError) as refused_at_start:
            async for event in stub.RunMatch(run_match_request(["random1", "random2"])):
                nothing.append(event.WhichOneof("event"))
        return seen, stopped.value, running_after, nothing, refused_at_start.value

    seen, stopped, running_after, nothing, at_start = asyncio.run(with_server(tmp_path, body, settings))
    assert seen[0] == "match_started" and seen[-1] == "game_result" and seen.count("game_result") == 1
    assert stopped.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert re.fullmatch(rf"the records folder holds {limit - 64} bytes of the {limit} this server allows; "
                        r"no room for \d+ more", stopped.details()), stopped.details()
    assert list(tmp_path.glob("*.json")) == [], "no record was written past the limit"
    assert running_after == [], "the stopped match's bots were stopped"
    assert nothing == [] and at_start.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, "refused before any bot started"
    assert at_start.details().startswith("the records folder holds ")
    assert_no_bot_processes()


def test_a_disk_below_the_free_space_floor_refuses_matches(tmp_path: Path) -> None:
    settings = ServiceSettings(bots=OWN_BOTS, min_free_disk_bytes=1 << 62)  # more than any disk has

    async def body(channel: grpc.aio.Channel):
        return await refused(referee_pb2_grpc.RefereeServiceStub(channel).RunMatch(
            run_match_request(["random1", "random2"])))

    error = asyncio.run(with_server(tmp_path, body, settings))
    assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert error.details() == f"the disk of the records folder would have less than {1 << 62} bytes free"
    assert_no_bot_processes()


# --- the bots a client may name ----------------------------------------------------------------

def test_an_address_off_the_allow_list_is_refused_alike_open_or_closed_without_connecting(
        tmp_path: Path, running_builtin_bot: tuple[str, int]) -> None:
    bot_address, bot_pid = running_builtin_bot  # a real bot, listening on a unix socket
    with socket.socket() as listening, socket.socket() as closed:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        closed.bind(("127.0.0.1", 0))  # bound, not listening: connections are refused
        addresses = [f"127.0.0.1:{listening.getsockname()[1]}", f"127.0.0.1:{closed.getsockname()[1]}",
                     bot_address, "unix:/no/such/socket", "example.invalid:50051"]

        async def body(channel: grpc.aio.Channel):
            stub = referee_pb2_grpc.RefereeServiceStub(channel)
            return [await refused(stub.RunMatch(run_match_request([address, "random1"]))) for address in addresses]

        errors = asyncio.run(with_server(tmp_path, body, ServiceSettings(bots=OWN_BOTS)))
        connected, _, _ = select.select([listening], [], [], 0)
    assert connected == [], "the server connected to an address it does not allow"
    assert {e.code() for e in errors} == {grpc.StatusCode.INVALID_ARGUMENT}
    words = {e.details().replace(repr(address), "ADDR") for e, address in zip(errors, addresses)}
    assert words == {"bot ADDR is not one of this server's bots or an address it may connect to"}

    async def play(channel: grpc.aio.Channel):  # once allowed, the same bot plays
        stub = referee_pb2_grpc.RefereeServiceStub(channel)
        return [e async for e in stub.RunMatch(run_match_request([bot_address, "random1"]))]

    events = asyncio.run(with_server(tmp_path, play, ServiceSettings(bots=OWN_BOTS,
                                                                     allow_addresses=frozenset({bot_address}))))
    (result,) = [e.game_result for e in events if e.HasField("game_result")]
    assert result.termination == game_pb2.TERMINATION_NORMAL
    assert_no_bot_processes(exclude={bot_pid})


def test_an_allowed_address_that_fails_gives_one_generic_reason(tmp_path: Path,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    # three ways an address can fail: nothing listens (refused), something that is not gRPC
    # answers and hangs up, a gRPC server that is not a bot (healthy, no BotService)
    caplog.set_level(logging.WARNING, logger="referee")

    async def scenario() -> tuple[list[str], list, dict]:
        async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.write(b"HTTP/1.0 400 Bad Request\r\n\r\n")
            writer.close()

        not_grpc = await asyncio.start_server(hang_up, "127.0.0.1", 0)
        not_a_bot = grpc.aio.server()
        checker = health.aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(checker, not_a_bot)
        grpc_port = not_a_bot.add_insecure_port("127.0.0.1:0")
        await not_a_bot.start()
        with socket.socket() as closed:
            closed.bind(("127.0.0.1", 0))
            addresses = [f"127.0.0.1:{closed.getsockname()[1]}", f"127.0.0.1:{not_grpc.sockets[0].getsockname()[1]}",
                         f"127.0.0.1:{grpc_port}"]
            settings = ServiceSettings(allow_addresses=frozenset(addresses))
            request = run_match_request(addresses, time_control=game_pb2.TimeControl(
                move_time_ms=1000, startup_time_ms=2000))

            async def body(channel: grpc.aio.Channel):
                stub = referee_pb2_grpc.RefereeServiceStub(channel)
                events = [e async for e in stub.RunMatch(request)]
                (game_id,) = events[-1].match_result.game_ids
                reply = await stub.GetGameRecord(referee_pb2.GetGameRecordRequest(game_id=game_id))
                return events, json.loads(reply.record_json)

            try:
                events, record = await with_server(tmp_path, body, settings)
            finally:
                not_grpc.close()
                await not_a_bot.stop(grace=None)
        return addresses, events, record

    addresses, events, record = asyncio.run(scenario())
    shown = [(e.failure.seat, e.failure.reason, e.failure.received) for e in events if e.HasField("failure")]
    assert shown == [(seat, CONNECT_FAILED, "") for seat in range(3)], shown
    (result,) = [e.game_result for e in events if e.HasField("game_result")]
    assert [(f.reason, f.received) for f in result.failures] == [(CONNECT_FAILED, "")] * 3
    for failures in (record["failures"], record["result"]["failures"]):
        assert [(f["kind"], f["reason"], f["received"]) for f in failures] == [
            ("FAILURE_KIND_STARTUP", CONNECT_FAILED, "")] * 3
    # the detail is in the server's log, each address with its own
    logged = [r.getMessage() for r in caplog.records if "failed to start" in r.getMessage()]
    for address in addresses:
        assert any(address in line and CONNECT_FAILED not in line for line in logged), (address, logged)


def test_commands_are_refused_unless_allowed_and_allowing_them_needs_authentication() -> None:
    with pytest.raises(ServiceSettingsError, match="--allow-commands lets clients run programs here"):
        ServiceSettings(allow_commands=True)
    assert ServiceSettings(allow_commands=True, token=TOKEN).allow_commands


@pytest.mark.parametrize("listen, local", [
    ("127.0.0.1:50051", True), ("127.9.9.9:1", True), ("[::1]:50051", True), ("localhost:50051", True),
    ("unix:/tmp/r.sock", True), ("unix-abstract:referee", True), ("0.0.0.0:50051", False), ("[::]:50051", False),
    ("10.1.2.3:50051", False), ("referee.example.com:50051", False), ("ipv4:127.0.0.1:50051", False),
    ("nonsense::::", False), (":50051", False),
])
def test_which_listen_addresses_count_as_loopback(listen: str, local: bool) -> None:
    assert is_local_address(listen) is local


# --- referee serve -----------------------------------------------------------------------------

def test_serve_refuses_to_start_open_with_one_line(tmp_path: Path) -> None:
    pki = make_pki(tmp_path / "pki")
    token, short = tmp_path / "token", tmp_path / "short"
    token.write_text(TOKEN + "\n")
    short.write_text("hunter2\n")
    cases = [
        (["--listen", "0.0.0.0:0"], "listening on 0.0.0.0:0, which is not loopback, needs authentication"),
        (["--listen", "[::]:50051", "--tls-cert", str(pki.server_cert), "--tls-key", str(pki.server_key)],
         "which is not loopback, needs authentication"),  # TLS alone says nothing of who the client is
        (["--allow-commands"], "--allow-commands lets clients run programs here, so it needs authentication"),
        (["--token-file", str(short)], "is too short: 7 characters, at least 16"),
        (["--token-file", str(tmp_path / "missing")], "cannot read token file"),
        (["--token-file", str(token), "--token-env", "HOME"], "give the token once"),
        (["--token-env", "CASINO_NO_SUCH_VARIABLE"], "CASINO_NO_SUCH_VARIABLE (--token-env) is not set or empty"),
        (["--tls-cert", str(pki.server_cert)], "TLS needs both --tls-cert and --tls-key"),
        (["--tls-cert", str(pki.server_cert), "--tls-key", str(pki.client_key)], "cannot be used together"),
        (["--tls-client-ca", str(pki.ca)], "--tls-client-ca needs --tls-cert and --tls-key"),
        (["--allow-address", "not an address"], "allowed address 'not an address' is not host:port or unix:/path"),
        (["--bot", "greedy"], "bot 'greedy': give NAME=COMMAND_OR_ADDRESS"),
        (["--bot", "x=no-such-program-here"], "no program 'no-such-program-here' on PATH"),
        (["--max-matches", "0"], "max matches must be 1 to 1000, not 0"),
        (["--max-record-bytes", "lots"], "not a size: 'lots'"),
    ]
    for args, message in cases:
        line = assert_usage_error(run_referee("serve", *args, timeout=30))
        assert message in line, (args, line)


def test_serve_with_a_token_and_tls_plays_its_own_bots(tmp_path_factory: pytest.TempPathFactory) -> None:
    folder = tmp_path_factory.mktemp("serve")
    pki = make_pki(folder / "pki")
    (folder / "token").write_text(TOKEN + "\n")
    records = folder / "records"
    args = ["serve", "--listen", "127.0.0.1:0", "--records", str(records), "--token-file", str(folder / "token"),
            "--tls-cert", str(pki.server_cert), "--tls-key", str(pki.server_key),
            "--bot", f"random1={builtin_bot_command(1)}", "--bot", f"random2={builtin_bot_command(2)}"]
    server = start_referee(*args, stdout=subprocess.PIPE)
    try:
        assert server.stdout is not None
        line = server.stdout.readline()  # bounded: the server prints it at once, or exits (EOF)
        started = re.match(r"referee listening on 127\.0\.0\.1:0 \(port (\d+); TLS, token required\); records in ",
                           line)
        assert started, (line, server.poll())
        address = f"127.0.0.1:{started.group(1)}"
        tls = ClientTls.from_files(ca=str(pki.ca))

        async def client():
            async with referee_channel(address, token_file=str(folder / "token"), tls=tls) as channel, \
                    referee_channel(address, tls=tls) as no_token:
                async with asyncio.timeout(90):
                    stub = referee_pb2_grpc.RefereeServiceStub(channel)
                    events = [e async for e in stub.RunMatch(run_match_request(["random1", "random2"]))]
                    healthy = await health_pb2_grpc.HealthStub(no_token).Check(health_pb2.HealthCheckRequest())
                    without = await refused(referee_pb2_grpc.RefereeServiceStub(no_token).RunMatch(
                        run_match_request(["random1", "random2"])))
                    return events, healthy.status, without

        events, status, without = asyncio.run(client())
    finally:
        server.send_signal(signal.SIGTERM)
        code = server.wait(timeout=30)
    assert events[-1].match_result.game_ids and status == health_pb2.HealthCheckResponse.SERVING
    assert without.code() == UNAUTHENTICATED
    assert code == 0
    assert len(list(records.glob("*.json"))) == 1
    assert_no_bot_processes()
