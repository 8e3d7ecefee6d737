#!/bin/sh
# What the project needs from the system besides Python 3.11: bubblewrap (bwrap), the bot sandbox
# (docs/sandbox.md). Installs it with apt-get when it is missing and this runs as root where
# apt-get exists (as CI does); otherwise says in one line what is missing and carries on: the
# sandbox then falls back to mode "limits" and its tests skip, saying why.
# util-linux's setpriv and prlimit, which the sandbox also uses, are part of every Debian system.
set -u
command -v bwrap >/dev/null 2>&1 && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing bubblewrap for the bot sandbox (apt-get install bubblewrap)" >&2
    apt-get install -y -qq bubblewrap >/dev/null 2>&1 ||
        { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq bubblewrap >/dev/null 2>&1; } ||
        echo "setup: could not install bubblewrap; bots will run in sandbox mode \"limits\"" >&2
else
    echo "setup: bubblewrap (bwrap) is not installed and cannot be installed from here (needs root and" \
         "apt-get); bots will run in sandbox mode \"limits\" (docs/sandbox.md)" >&2
fi
exit 0
