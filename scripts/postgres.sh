#!/usr/bin/env bash
# The PostgreSQL server binaries the store tests start themselves (tests/helpers/postgres.py):
# Debian's `postgresql` package, installed when no initdb is found under /usr/lib/postgresql.
# No server is started here and none is assumed to run: each test session starts its own on a
# free loopback port in a temporary folder and stops it afterwards.
set -euo pipefail
if compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; then
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    echo "postgres.sh: PostgreSQL is not installed and this is not root; install Debian's postgresql package" >&2
    exit 1
fi
apt-get update -q
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || {
    echo "postgres.sh: postgresql was installed but no initdb is under /usr/lib/postgresql/*/bin" >&2
    exit 1
}
