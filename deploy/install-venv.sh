#!/bin/sh
# install-venv.sh DEST [SOURCE]: the project (SOURCE, default this checkout) installed into a new
# virtual environment at DEST, as a built package (not editable: the image carries no checkout).
# The Dockerfile's build stage runs it; tests/deploy/ runs it against a scratch folder.
# PIP_ARGS adds pip options (the tests pass --no-deps over an environment that has them; the
# Dockerfile passes none).
set -eu
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    echo "usage: install-venv.sh DEST [SOURCE]" >&2
    exit 2
fi
dest=$1
source=${2:-$(dirname "$0")/..}
python=${PYTHON:-python3}
"$python" -m venv "$dest"
# shellcheck disable=SC2086 # PIP_ARGS is a list of options, split on purpose
"$dest/bin/pip" install --no-cache-dir --disable-pip-version-check --quiet ${PIP_ARGS:-} "$source"
# the commands must start: a broken install fails the build here, not in production
"$dest/bin/arena" --help >/dev/null
"$dest/bin/referee" --help >/dev/null
