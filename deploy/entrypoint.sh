#!/bin/sh
# The image's one entry point: `arena ARGS...` or `referee ARGS...`, the project's two commands,
# from its virtual environment (ARENA_VENV, default /opt/arena). Anything else is refused in one
# line (exit 2), so a typo in a compose file or a manifest fails at once instead of running
# something else. tini (the image's PID 1) forwards signals and reaps what bots leave behind.
# PGPASSWORD_FILE (a mounted secret): its content becomes PGPASSWORD, which libpq, and so every
# command, uses for a database URL without a password (docs/deploy.md, "The database password").
set -eu
venv=${ARENA_VENV:-/opt/arena}
if [ -n "${PGPASSWORD_FILE:-}" ] && [ -z "${PGPASSWORD:-}" ]; then
    if ! PGPASSWORD=$(cat "$PGPASSWORD_FILE"); then
        echo "entrypoint: error: cannot read PGPASSWORD_FILE $PGPASSWORD_FILE" >&2
        exit 2
    fi
    export PGPASSWORD
fi
case "${1:-}" in
    arena | referee)
        command=$1
        shift
        exec "$venv/bin/$command" "$@"
        ;;
    *)
        echo "entrypoint: error: the first argument must be arena or referee, not '${1:-}' (docs/deploy.md)" >&2
        exit 2
        ;;
esac
