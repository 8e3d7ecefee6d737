"""What a bot sees: its folder (its working directory, never what an argument names), its runtime
found by following its program's links (a venv's interpreter, the venv's editable sources), and
no path twice."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from referee.bots.endpoint import BotEndpoint
from referee.sandbox.view import bot_view, minimal_paths, runtime_folders, shown_problem, venv_sources
from tests.conftest import ROOT


def make_venv(folder: Path, editable_root: Path) -> Path:
    """A fake venv layout (no interpreter run): bin/python linking to this interpreter, pyvenv.cfg,
    an editable finder with a MAPPING and a .pth naming a folder."""
    (folder / "bin").mkdir(parents=True)
    (folder / "bin" / "python").symlink_to(os.path.realpath(sys.executable))
    (folder / "pyvenv.cfg").write_text("home = /usr/bin\n")
    site = folder / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (editable_root / "pkg").mkdir(parents=True)
    (editable_root / "other").mkdir()
    (site / "__editable___demo_0_1_finder.py").write_text(
        f"import sys\nMAPPING: dict[str, str] = {{'pkg': {str(editable_root / 'pkg')!r}, 'gone': '/no/such/dir'}}\n"
        "def install(): raise SystemExit('never run')\n")
    (site / "demo.pth").write_text(f"# a comment\nimport os\n{editable_root / 'other'}\nrelative-missing\n")
    return folder


def test_a_venvs_interpreter_brings_the_venv_its_base_and_its_editable_sources(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv", tmp_path / "src")
    found = runtime_folders(str(venv / "bin" / "python"))
    assert found[:3] == [str(venv), str(tmp_path / "src" / "pkg"), str(tmp_path / "src" / "other")]
    base = os.path.realpath(sys.executable)
    if not base.startswith(("/usr/", "/bin/")):
        assert os.path.dirname(os.path.dirname(base)) in found, "the interpreter the venv was made from"
    assert venv_sources(str(venv)) == [str(tmp_path / "src" / "pkg"), str(tmp_path / "src" / "other")]


def test_this_projects_venv_shows_its_packages_not_the_whole_checkout() -> None:
    venv = Path(sys.prefix)
    if not (venv / "pyvenv.cfg").exists():
        pytest.skip("the tests do not run in a virtual environment")
    sources = venv_sources(str(venv))
    if str(ROOT / "referee") not in sources:
        pytest.skip("the project is not installed editable in this venv")
    assert str(ROOT) not in sources, "the checkout itself (other bots, records) stays hidden"


def test_the_bots_folder_is_its_working_directory_never_what_an_argument_names(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "bots" / "a").mkdir(parents=True)
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "data.db").write_text("")
    script = tmp_path / "bots" / "a" / "bot.py"
    script.write_text("")
    python = sys.executable
    with_cwd = bot_view(BotEndpoint.parse(f"{python} bot.py ../../secret/data.db", cwd=str(tmp_path / "bots" / "a")),
                        (), os.environ)
    assert with_cwd.bot_folder == with_cwd.cwd == str(tmp_path / "bots" / "a")
    assert str(tmp_path / "secret") not in with_cwd.read_only and str(tmp_path) not in with_cwd.read_only
    monkeypatch.chdir(tmp_path / "bots")
    started_here = bot_view(BotEndpoint.parse(f"{python} -u {script} {tmp_path / 'secret' / 'data.db'}"), (), os.environ)
    assert started_here.bot_folder == str(tmp_path / "bots"), "without a cwd: where it is started, not its script's"
    assert not any(p.startswith(str(tmp_path / "secret")) for p in started_here.read_only)
    on_path = bot_view(BotEndpoint.parse("true"), (), {"PATH": "/usr/bin:/bin"})
    assert on_path.bot_folder == str(tmp_path / "bots") and on_path.argv[0] in ("/usr/bin/true", "/bin/true")


def test_no_folder_holding_or_inside_a_private_path_is_shown(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    own, other = cache / ("1" * 64), cache / ("2" * 64)
    own.mkdir(parents=True)
    other.mkdir()
    (tmp_path / "cup.db").write_text("")
    (tmp_path / "link").symlink_to(tmp_path)
    python = sys.executable
    private = [("the arena's database", str(tmp_path / "cup.db")), ("the archive cache", str(cache))]

    def problem(cwd: Path, *extra: str) -> str | None:
        return shown_problem(bot_view(BotEndpoint.parse(f"{python} bot.py", cwd=str(cwd)), extra, os.environ), private)

    assert problem(own) is None, "its own archive's folder lies inside the cache: shown"
    assert "holds the arena's database" in (problem(tmp_path) or "")
    assert "holds the arena's database" in (problem(tmp_path / "link") or ""), "through a symbolic link too"
    assert "holds the archive cache" in (problem(cache) or "")
    assert "is inside the archive cache" in (problem(own, str(other)) or ""), "another archive, as an extra path"
    assert "would be /" in (shown_problem(bot_view(BotEndpoint.parse(f"{python} x", cwd="/"), (), os.environ), []) or "")


def test_no_path_twice_none_inside_another_none_of_the_system() -> None:
    assert minimal_paths(["/a/b", "/a", "/a/b/c/", "/usr/lib/x", "/etc/ssl", "/ab", "/a"]) == ("/a", "/ab")


def test_a_missing_program_is_an_os_error() -> None:
    endpoint = BotEndpoint(spec="x", command=("no-such-program-here",))
    with pytest.raises(FileNotFoundError):
        bot_view(endpoint, (), {"PATH": "/usr/bin"})
