#!/bin/sh
# install-bots.sh SOURCE DEST: the sample bots (SOURCE: the checkout's sample_bots/) copied to DEST
# as the image carries them (/srv/bots): the Python bots with their SDK (casino_bot), and the Node.js
# bot with its packages installed from its lock file (npm ci: exactly the locked versions).
# The Dockerfile's build stage runs it (npm is there only); tests/deploy/ runs it into a scratch folder.
set -eu
if [ $# -ne 2 ]; then
    echo "usage: install-bots.sh SOURCE DEST" >&2
    exit 2
fi
source=$1
dest=$2
mkdir -p "$dest/python" "$dest/node"
cp "$source"/python/*_bot.py "$dest/python/"
cp -R "$source/python/casino_bot" "$dest/python/"
cp "$source/node/bot.js" "$source/node/package.json" "$source/node/package-lock.json" "$dest/node/"
cp -R "$source/node/proto" "$dest/node/"
find "$dest" -name __pycache__ -prune -exec rm -rf {} +
(cd "$dest/node" && npm ci --omit=dev --no-audit --no-fund --loglevel=error)
# bots read these as a uid of their own (docs/sandbox.md): readable by others, nothing writable
chmod -R a+rX,go-w "$dest"
