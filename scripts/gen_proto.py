"""Generate the Python code for proto/casino/v1/*.proto into casino/v1/ (committed).

Usage: python scripts/gen_proto.py [--out DIR]

Needs the pinned generators of the ``dev`` extra (grpcio-tools, mypy-protobuf); tests/docs/test_proto.py
regenerates into a temporary folder and fails when the committed files differ.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROTO_ROOT = ROOT / "proto"


def generate(out: Path) -> list[Path]:
    """Run protoc (from grpcio-tools) with the Python, gRPC and mypy stub plugins."""
    from grpc_tools import protoc  # imported here: only the dev extra has it

    files = sorted(str(p.relative_to(PROTO_ROOT)) for p in (PROTO_ROOT / "casino" / "v1").glob("*.proto"))
    out.mkdir(parents=True, exist_ok=True)
    include = Path(protoc.__file__).parent / "_proto"
    plugins = []
    for name in ("protoc-gen-mypy", "protoc-gen-mypy_grpc"):
        # next to this interpreter (a venv's bin/, which need not be on PATH), else on PATH
        found = Path(sys.executable).parent / name
        path = str(found) if found.exists() else shutil.which(name)
        if path is None:
            raise SystemExit(f"{name} not found: install the dev extra (pip install -e '.[dev]')")
        plugins.append(f"--plugin={name}={path}")
    args = [
        "protoc",
        *plugins,
        f"-I{PROTO_ROOT}",
        f"-I{include}",
        f"--python_out={out}",
        f"--grpc_python_out={out}",
        f"--mypy_out={out}",
        f"--mypy_grpc_out={out}",
        *files,
    ]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")
    package = out / "casino"
    for folder in (package, package / "v1"):
        init = folder / "__init__.py"
        if not init.exists():
            init.write_text('"""Generated from proto/ by scripts/gen_proto.py; do not edit."""\n', encoding="utf-8")
    return sorted(p for p in package.rglob("*") if p.is_file())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT, help="folder that receives casino/v1/ (default: repository root)")
    args = parser.parse_args()
    for path in generate(args.out):
        print(path.relative_to(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
