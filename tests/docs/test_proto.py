"""The public contract: buf lint passes, the committed generated code is fresh, and the
code-generation commands docs/protocol.md gives bot authors (section 11) work as written."""

from __future__ import annotations

import filecmp
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROTOCOL_DOC = ROOT / "docs" / "protocol.md"
# protoc's own generators; any other --NAME_out needs the plugin protoc-gen-NAME on PATH
PROTOC_BUILTIN_OUTPUTS = {"cpp", "csharp", "java", "kotlin", "objc", "php", "pyi", "python", "ruby", "rust", "upb"}
CODEGEN_TIMEOUT_S = 600


def _buf() -> str:
    found = Path(sys.executable).parent / "buf"
    path = str(found) if found.exists() else shutil.which("buf")
    if path is None:
        pytest.skip("buf is not installed (it comes with the dev extra: pip install -e '.[dev]')")
    return path


def test_buf_lint_passes() -> None:
    """`buf lint` (STANDARD rules) finds nothing in proto/."""
    done = subprocess.run([_buf(), "lint"], cwd=ROOT / "proto", capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_generated_code_is_fresh(tmp_path: Path) -> None:
    """Regenerating from proto/ with the pinned generators gives exactly the committed casino/v1/."""
    subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_proto.py"), "--out", str(tmp_path)],
                   check=True, capture_output=True, timeout=120)
    fresh = tmp_path / "casino" / "v1"
    committed = ROOT / "casino" / "v1"
    names = sorted(p.name for p in fresh.iterdir() if p.is_file())
    assert names == sorted(p.name for p in committed.iterdir() if p.is_file() and p.suffix in (".py", ".pyi"))
    match, mismatch, errors = filecmp.cmpfiles(fresh, committed, names, shallow=False)
    assert not mismatch and not errors, f"stale generated files {mismatch + errors}: run python scripts/gen_proto.py"


def test_generated_code_imports() -> None:
    """The generated modules import with the installed runtime."""
    from casino.v1 import bot_pb2, bot_pb2_grpc, game_pb2, referee_pb2, referee_pb2_grpc

    assert bot_pb2.DESCRIPTOR.package == "casino.v1"
    assert hasattr(bot_pb2_grpc, "BotServiceStub") and hasattr(referee_pb2_grpc, "RefereeServiceServicer")
    assert game_pb2.MoveKind.Value("MOVE_KIND_CAPTURE") == 2 and referee_pb2.FAILURE_POLICY_FORFEIT == 1


# --- docs/protocol.md section 11, step 2: the code-generation commands ---------------------------


def _codegen_commands() -> dict[str, list[list[str]]]:
    """Step 2's shell block, by language: each ``# Language ...`` comment line starts a language,
    whose commands (continued lines joined) follow, as argument lists."""
    text = PROTOCOL_DOC.read_text(encoding="utf-8")
    step = text[text.index("2. **Generate the stubs**"):text.index("3. **Implement `BotService.Play`.**")]
    block = re.search(r"```sh\n(.*?)```", step, re.S)
    assert block, "step 2 of section 11 has no sh block"
    commands: dict[str, list[list[str]]] = {}
    language = ""
    for line in block.group(1).replace("\\\n", " ").splitlines():
        line = line.strip()
        if line.startswith("#"):
            language = line.lstrip("# ").split()[0].rstrip(":")
            commands[language] = []
        elif line:
            assert language, f"a command before any '# Language' line: {line}"
            commands[language].append(shlex.split(line))
    return commands


CODEGEN = _codegen_commands()


def _tools(argv: list[str]) -> list[str]:
    """The programs a documented command needs: itself and, for protoc, its plugins (a plugin
    named by ``--plugin=protoc-gen-NAME=PATH`` is that PATH, else ``protoc-gen-NAME`` on PATH)."""
    tools = [argv[0]]
    if Path(argv[0]).name == "protoc":
        given = dict(m.groups() for arg in argv[1:] if (m := re.match(r"--plugin=protoc-gen-([\w-]+)=(.+)", arg)))
        for arg in argv[1:]:
            out = re.match(r"--([\w-]+)_out=", arg)
            if out and out.group(1) not in PROTOC_BUILTIN_OUTPUTS:
                tools.append(given.get(out.group(1), f"protoc-gen-{out.group(1)}"))
    return tools


def _env_without_pythonpath() -> dict[str, str]:
    """This environment without PYTHONPATH, so Python loads what was generated, not this checkout."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def _run_codegen(language: str, folder: Path) -> None:
    """Do steps 1 and 2 of section 11 in ``folder`` for ``language``: copy game.proto and bot.proto
    (only those, in their folder layout) under proto/, then run its documented commands there
    (``python`` is this interpreter). Skips when a tool is not on PATH."""
    for name in ("game.proto", "bot.proto"):
        target = folder / "proto" / "casino" / "v1" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / "proto" / "casino" / "v1" / name, target)
    commands = [[sys.executable, *argv[1:]] if argv[0] == "python" else argv for argv in CODEGEN[language]]
    missing = sorted({tool for argv in commands for tool in _tools(argv) if shutil.which(tool) is None})
    if missing:
        pytest.skip(f"{language}: {', '.join(missing)} not on PATH")
    for argv in commands:
        done = subprocess.run(argv, cwd=folder, env=_env_without_pythonpath(), capture_output=True, text=True,
                              timeout=CODEGEN_TIMEOUT_S)
        assert done.returncode == 0, f"{shlex.join(argv)} failed:\n{done.stdout}{done.stderr}"


def test_codegen_examples_cover_the_documented_languages() -> None:
    """Section 11 gives Python, Go, Ruby and C++ commands, each language at least one."""
    assert {"Python", "Go", "Ruby", "C++"} <= set(CODEGEN), sorted(CODEGEN)
    assert all(CODEGEN.values()), CODEGEN


@pytest.mark.parametrize("language", sorted(CODEGEN))
def test_documented_codegen_commands_work(language: str, tmp_path: Path) -> None:
    """Each language's commands, as written, generate its stubs from the two files step 1 copies
    (and its last command, where the document gives one, loads them)."""
    _run_codegen(language, tmp_path)
    generated = [p for p in tmp_path.rglob("*") if p.is_file() and "proto" not in p.relative_to(tmp_path).parts]
    assert generated, f"{language}: nothing generated"


def test_documented_python_stubs_are_the_ones_loaded(tmp_path: Path) -> None:
    """The Python check line loads the stubs it generated, not this checkout's casino package
    (which this interpreter could also import)."""
    _run_codegen("Python", tmp_path)
    done = subprocess.run([sys.executable, "-c", "from casino.v1 import bot_pb2_grpc; print(bot_pb2_grpc.__file__)"],
                          cwd=tmp_path, env=_env_without_pythonpath(), capture_output=True, text=True,
                          timeout=CODEGEN_TIMEOUT_S)
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).resolve().is_relative_to(tmp_path.resolve()), done.stdout


def _go_source_roots() -> list[Path]:
    """GOPATH roots that hold the sources of the grpc and protobuf Go modules (``go env GOPATH``,
    and /usr/share/gocode, where Debian's golang-google-grpc-dev puts them)."""
    roots = [Path("/usr/share/gocode")]
    done = subprocess.run(["go", "env", "GOPATH"], capture_output=True, text=True, timeout=CODEGEN_TIMEOUT_S)
    roots += [Path(p) for p in done.stdout.strip().split(os.pathsep) if p]
    return [r for r in roots if all((r / "src" / "google.golang.org" / m).is_dir() for m in ("grpc", "protobuf"))]


def test_documented_go_stubs_build(tmp_path: Path) -> None:
    """The Go stubs generated as documented compile (in GOPATH mode, offline: the module path of
    the example, example.com/mybot, laid out under a GOPATH of its own)."""
    if shutil.which("go") is None:
        pytest.skip("go is not on PATH")
    roots = _go_source_roots()
    if not roots:
        pytest.skip("no GOPATH with the google.golang.org/grpc and protobuf sources (Debian: golang-google-grpc-dev)")
    _run_codegen("Go", tmp_path / "mybot")
    workspace = tmp_path / "gopath"
    shutil.copytree(tmp_path / "mybot" / "casinov1", workspace / "src" / "example.com" / "mybot" / "casinov1")
    gopath = os.pathsep.join(str(p) for p in (workspace, *roots))
    env = {**os.environ, "GO111MODULE": "off", "GOFLAGS": "", "GOPATH": gopath}
    if not any(os.environ.get(v) for v in ("GOCACHE", "XDG_CACHE_HOME", "HOME")):
        env["GOCACHE"] = str(tmp_path / "gocache")  # else go's own build cache: grpc is compiled once, not every run
    done = subprocess.run(["go", "build", "example.com/mybot/casinov1"], cwd=workspace, env=env,
                          capture_output=True, text=True, timeout=CODEGEN_TIMEOUT_S)
    assert done.returncode == 0, done.stdout + done.stderr


def test_documented_cpp_stubs_compile(tmp_path: Path) -> None:
    """The C++ stubs generated as documented compile with the check line the document gives
    (against the system's gRPC and protobuf headers)."""
    if shutil.which("g++") is None:
        pytest.skip("g++ is not on PATH")
    if not Path("/usr/include/grpcpp/grpcpp.h").is_file():
        pytest.skip("no grpc++ headers in /usr/include (Debian: libgrpc++-dev)")
    _run_codegen("C++", tmp_path)
    text = PROTOCOL_DOC.read_text(encoding="utf-8")
    check = re.search(r"`(g\+\+ -std=c\+\+17 -fsyntax-only [^`]+)`", text)
    assert check, "section 11 gives no g++ line that checks the C++ stubs"
    done = subprocess.run(shlex.split(check.group(1)), cwd=tmp_path, capture_output=True, text=True,
                          timeout=CODEGEN_TIMEOUT_S)
    assert done.returncode == 0, done.stdout + done.stderr
