"""The tournament file's [sandbox] table (arena/config.py, referee/sandbox/settings.py): its values,
relative read-only paths taken from the file's folder, every bad value one line naming the file and
the key, and the default when the table is absent."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from arena.config import ConfigError, parse_config
from referee.sandbox import SandboxSettings

BOTS = f"""
[[bots]]
name = "a"
command = {json.dumps(shlex.join([sys.executable, "bot.py"]))}

[[bots]]
name = "b"
address = "localhost:50051"
"""


def cup(sandbox: str) -> str:
    return f'name = "cup"\n\n[sandbox]\n{sandbox}\n{BOTS}'


def test_the_default_is_the_default_sandbox(tmp_path: Path) -> None:
    config = parse_config(f'name = "cup"\n{BOTS}', tmp_path / "cup.toml")
    assert config.sandbox == SandboxSettings()


def test_every_value_and_relative_paths_from_the_files_folder(tmp_path: Path) -> None:
    config = parse_config(cup('mode = "bwrap"\nmemory_mib = 256\nprocesses = 64\ncpus = 2\nopen_files = 512\n'
                              'file_size_mib = 8\ntmp_mib = 16\nlog_cap_mib = 1\nread_only = ["models", "/opt/jdk"]\n'
                              'pass_env = ["LANG"]\nuid_first = 900000\nuid_count = 50'), tmp_path / "cup.toml")
    assert config.sandbox == SandboxSettings(mode="bwrap", memory_mib=256, processes=64, cpus=2.0, open_files=512,
                                             file_size_mib=8, tmp_mib=16, log_cap_mib=1.0,
                                             read_only=(str(tmp_path / "models"), "/opt/jdk"), pass_env=("LANG",),
                                             uid_first=900000, uid_count=50)


@pytest.mark.parametrize("sandbox, expected", [
    ('mode = "docker"', ["cup.toml: [sandbox] mode must be one of auto, bwrap, limits, none, not 'docker'"]),
    ("memory_mib = 8\nprocesses = 1.5", [
        "cup.toml: [sandbox] memory_mib must be a whole number from 32 to 1048576, not 8",
        "cup.toml: [sandbox] processes must be a whole number from 8 to 65536, not 1.5"]),
    ("memory = 100", ['cup.toml: unknown key "memory" in [sandbox] (did you mean "memory_mib"?)']),
    ('read_only = "/opt"', ["cup.toml: [sandbox] read_only: must be a list of strings"]),
])
def test_bad_values_are_one_line_each_naming_the_file_and_key(tmp_path: Path, sandbox: str,
                                                              expected: list[str]) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(cup(sandbox), tmp_path / "cup.toml")
    assert list(caught.value.errors) == expected


def test_the_sandbox_does_not_change_the_fingerprint(tmp_path: Path) -> None:
    plain = parse_config(f'name = "cup"\n{BOTS}', tmp_path / "cup.toml")
    confined = parse_config(cup("memory_mib = 256"), tmp_path / "cup.toml")
    assert plain.settings_fingerprint() == confined.settings_fingerprint()
