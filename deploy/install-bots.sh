#!/bin/sh
# install-bots.sh SOURCE DEST [RUNTIMES]: the sample bot packages (SOURCE: the checkout's sample_bots/)
# copied to DEST as the image carries them (/srv/bots/NAME, each a folder with bot.toml): the Python
# kits (the SDK is installed with the project) and the Node.js kit; and the node runtime's packages
# installed from its lock file (npm ci: exactly the locked versions) into RUNTIMES/node (default
# DEST/../runtimes), with the proto files beside them (CASINO_RUNTIMES_HOME names that folder).
# The Dockerfile's build stage runs it (npm is there only); tests/deploy/ runs it into a scratch folder.
set -eu
if [ $# -lt 2 ] || [ $# -gt 3 ]; then
    echo "usage: install-bots.sh SOURCE DEST [RUNTIMES]" >&2
    exit 2
fi
source=$1
dest=$2
runtimes=${3:-$(dirname "$dest")/runtimes}
checkout=$(dirname "$source")
mkdir -p "$dest" "$runtimes/node"
for kit in random greedy lookahead node; do
    cp -R "$source/$kit" "$dest/"
done
cp "$checkout/runtimes/node/package.json" "$checkout/runtimes/node/package-lock.json" "$runtimes/node/"
cp -R "$checkout/proto" "$runtimes/node/"
find "$dest" "$runtimes" -name __pycache__ -prune -exec rm -rf {} +
(cd "$runtimes/node" && npm ci --omit=dev --no-audit --no-fund --loglevel=error)
# bots read these as a uid of their own (docs/sandbox.md): readable by others, nothing writable
chmod -R a+rX,go-w "$dest" "$runtimes"
