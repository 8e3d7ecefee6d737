"""The bot sandbox: every bot process runs confined, so it cannot touch another bot, the arena or
the machine (docs/sandbox.md).

``SandboxSettings`` (settings.py) holds every limit; ``make_launcher`` (launcher.py) turns them
into the ``Launcher`` a match starts its bots with: bubblewrap namespaces (bwrap.py builds the
command line), a uid of each bot's own (uids.py), cgroups (cgroups.py) or rlimits, a clean
environment and a view of the host limited to what the bot needs (view.py).
"""

from .launcher import SandboxLauncher, SandboxUnavailableError, default_launcher, make_launcher
from .settings import MODES, SandboxSettings, SandboxSettingsError

__all__ = ["MODES", "SandboxLauncher", "SandboxSettings", "SandboxSettingsError", "SandboxUnavailableError",
           "default_launcher", "make_launcher"]
