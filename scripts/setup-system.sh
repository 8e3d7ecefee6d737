#!/bin/sh
# What the project needs from the system besides Python 3.11: bubblewrap (bwrap), the bot sandbox
# (docs/sandbox.md), and Chromium, the browser the web app's browser tests drive (Playwright cannot
# download its own browser builds here). Installs each with apt-get when it is missing and this
# runs as root where apt-get exists (as CI does); otherwise says in one line what is missing and
# carries on: the sandbox then falls back to mode "limits" and its tests skip, saying why, and so do
# the browser tests without Chromium.
# util-linux's setpriv and prlimit, which the sandbox also uses, are part of every Debian system.
set -u
export DEBIAN_FRONTEND=noninteractive  # apt-get asks nothing
can_install() { [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; }
# apt_install PACKAGE: quietly, updating the package lists once if the first try fails
apt_install() {
    apt-get install -y -qq "$1" >/dev/null 2>&1 ||
        { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq "$1" >/dev/null 2>&1; }
}
if ! command -v bwrap >/dev/null 2>&1; then
    if can_install; then
        echo "setup: installing bubblewrap for the bot sandbox (apt-get install bubblewrap)" >&2
        apt_install bubblewrap || echo "setup: could not install bubblewrap; bots will run in sandbox mode \"limits\"" >&2
    else
        echo "setup: bubblewrap (bwrap) is not installed and cannot be installed from here (needs root and" \
             "apt-get); bots will run in sandbox mode \"limits\" (docs/sandbox.md)" >&2
    fi
fi
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
    if can_install; then
        echo "setup: installing chromium for the web app's browser tests (apt-get install chromium)" >&2
        apt_install chromium ||
            echo "setup: could not install chromium; the browser tests will skip" >&2
    else
        echo "setup: chromium is not installed and cannot be installed from here (needs root and apt-get);" \
             "the browser tests will skip" >&2
    fi
fi
exit 0
