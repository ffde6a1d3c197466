#!/usr/bin/env bash
# What `make test` needs besides Python, from Debian's packages: PostgreSQL (the sweep tests start
# it, as `make server` does), openssl and curl (scripts/server.sh) and Chromium (the MLflow UI
# test). Installs the missing ones where it may (root, with apt-get); else stops before any test
# with one line naming them. Prints nothing when all are there.
set -euo pipefail

missing=()
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
command -v openssl >/dev/null || missing+=(openssl)
command -v curl >/dev/null || missing+=(curl)
command -v chromium >/dev/null || missing+=(chromium)
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
  echo "make test: installing ${missing[*]} from Debian's packages (the tests start them)"
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      "${missing[@]}"; } >/dev/null 2>&1; then
    echo "make test: apt-get could not install ${missing[*]}; install them, then run make test again" >&2
    exit 2
  fi
else
  echo "make test: the tests need Debian's ${missing[*]}: apt-get install ${missing[*]} (as root), then run make test again" >&2
  exit 2
fi
