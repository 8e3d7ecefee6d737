"""Sandbox settings: the defaults, every bad value refused with one line naming the setting, and a
[sandbox] table read with the same checks (every problem listed)."""

from __future__ import annotations

import pytest

from referee.sandbox.settings import SandboxSettings, SandboxSettingsError, pass_env_from_environment


def test_the_defaults() -> None:
    s = SandboxSettings()
    assert (s.mode, s.memory_mib, s.processes, s.cpus, s.open_files, s.file_size_mib, s.tmp_mib, s.log_cap_mib) == (
        "auto", 512, 128, 1.0, 1024, 64, 64, 4.0)
    assert s.read_only == () and s.pass_env == () and s.log_cap_bytes == 4 << 20


@pytest.mark.parametrize("changes, message", [
    ({"mode": "docker"}, "sandbox mode must be one of auto, bwrap, limits, none, not 'docker'"),
    ({"memory_mib": 8}, "sandbox memory_mib must be a whole number from 32 to 1048576, not 8"),
    ({"memory_mib": 512.5}, "sandbox memory_mib must be a whole number"),
    ({"processes": True}, "sandbox processes must be a whole number"),
    ({"cpus": 0}, "sandbox cpus must be a number from 0.01 to 1024, not 0"),
    ({"cpus": float("nan")}, "sandbox cpus must be a number"),
    ({"log_cap_mib": -1.0}, "sandbox log_cap_mib must be a number"),
    ({"read_only": ("relative/path",)}, "sandbox read_only paths must be absolute, not 'relative/path'"),
    ({"read_only": ("/ok", "/bad\nline")}, "sandbox read_only paths must be absolute, not '/bad\\nline'"),
    ({"pass_env": ("NOT A NAME",)}, "sandbox pass_env must be environment variable names"),
])
def test_bad_values_are_one_line_each(changes: dict, message: str) -> None:
    with pytest.raises(SandboxSettingsError) as caught:
        SandboxSettings(**changes)
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)
    assert caught.value.exit_status == 2


def test_a_table_with_every_problem_listed() -> None:
    with pytest.raises(SandboxSettingsError) as caught:
        SandboxSettings.from_table({"memory": 100, "processes": 2, "read_only": "/opt"})
    assert caught.value.errors[0].startswith("[sandbox] memory: unknown setting (the settings: mode, memory_mib")
    assert caught.value.errors[1] == "[sandbox] read_only: must be a list of strings"
    with pytest.raises(SandboxSettingsError) as caught:
        SandboxSettings.from_table({"processes": 2, "cpus": 0.001})
    assert caught.value.errors == ("[sandbox] processes must be a whole number from 8 to 65536, not 2",
                                   "[sandbox] cpus must be a number from 0.01 to 1024, not 0.001")


def test_a_good_table() -> None:
    s = SandboxSettings.from_table({"mode": "bwrap", "memory_mib": 256, "cpus": 2, "log_cap_mib": 1,
                                    "read_only": ["/opt/jdk"], "pass_env": ["LANG"]})
    assert s == SandboxSettings(mode="bwrap", memory_mib=256, cpus=2.0, log_cap_mib=1.0, read_only=("/opt/jdk",),
                                pass_env=("LANG",))


def test_replace_ignores_flags_not_given() -> None:
    s = SandboxSettings(memory_mib=256)
    assert s.replace(memory_mib=None, processes=64) == SandboxSettings(memory_mib=256, processes=64)
    assert s.replace() is s


def test_the_operators_pass_env_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CASINO_SANDBOX_PASS_ENV", " LANG, TZ ,,bad name,")
    assert pass_env_from_environment() == ("LANG", "TZ")
