#!/usr/bin/env bash
# Install scheduled-events-forwarder as a hardened systemd service on a Linux Azure VM.
#
#   sudo ./install.sh [PACKAGE]      PACKAGE: an npm spec or a .tgz from `npm pack` (default: scheduled-events-forwarder)
#
# What it does (each step is idempotent):
#   1. checks Node.js >= 22.13 is installed (Node 24 LTS recommended; see docs/install.md for distro steps);
#   2. installs the package into /opt/scheduled-events-forwarder (no global npm install, no build tools needed);
#   3. writes /etc/scheduled-events-forwarder/forwarder.yaml from the example if none exists (its ./state
#      paths pointed at /var/lib/scheduled-events-forwarder), and an empty secrets.env (mode 0600) for
#      connection strings / webhook URLs; validates the config with those secrets in the environment;
#   4. installs the systemd unit, enables and starts it (not with DESTDIR alone: see below).
# Environment (for tests, images and unusual layouts): DESTDIR (prefix for every path; with it set, systemd is
# not touched unless SYSTEMCTL is given too), SYSTEMCTL (default systemctl), NODE (default node), NPM (default npm).
set -euo pipefail

PACKAGE="${1:-scheduled-events-forwarder}"
DESTDIR="${DESTDIR:-}"
# Empty SYSTEMCTL: systemd is not touched (DESTDIR without SYSTEMCTL: an image or a test root, not this host's).
if [[ -n "$DESTDIR" ]]; then SYSTEMCTL="${SYSTEMCTL:-}"; else SYSTEMCTL="${SYSTEMCTL:-systemctl}"; fi
NODE="${NODE:-node}"
NPM="${NPM:-npm}"
PREFIX="$DESTDIR/opt/scheduled-events-forwarder"
CONFIG_DIR="$DESTDIR/etc/scheduled-events-forwarder"
# The unit's StateDirectory (a path the service sees, so without DESTDIR).
STATE_DIR="/var/lib/scheduled-events-forwarder"
UNIT_DIR="$DESTDIR/etc/systemd/system"
HERE="$(cd "$(dirname "$0")" && pwd)"

say() { printf 'install: %s\n' "$*"; }
fail() { printf 'install: error: %s\n' "$*" >&2; exit 1; }

command -v "$NODE" >/dev/null 2>&1 || fail "Node.js not found. Install Node.js 24 LTS first (docs/install.md)."
node_version="$("$NODE" -p 'process.versions.node')"
IFS=. read -r major minor _ <<<"$node_version"
if (( major < 22 || (major == 22 && minor < 13) )); then
  fail "Node.js $node_version is too old; version 22.13 or later is required (24 LTS recommended)."
fi
say "Node.js $node_version"

mkdir -p "$PREFIX"
if [[ ! -f "$PREFIX/package.json" ]]; then
  printf '{"name":"scheduled-events-forwarder-install","private":true}\n' >"$PREFIX/package.json"
fi
say "installing $PACKAGE into $PREFIX"
(cd "$PREFIX" && "$NPM" install --omit=dev --no-audit --no-fund --ignore-scripts "$PACKAGE" >/dev/null)
ENTRY="$PREFIX/node_modules/scheduled-events-forwarder/dist/cli/main.js"
[[ -f "$ENTRY" ]] || fail "package installed but $ENTRY is missing"
"$NODE" "$ENTRY" --version >/dev/null || fail "the installed forwarder does not start"

mkdir -p "$CONFIG_DIR"
if [[ ! -f "$CONFIG_DIR/forwarder.yaml" ]]; then
  # The example keeps its state in ./state (relative to the working directory). Under systemd the only
  # writable place is the StateDirectory, so point those paths there.
  sed -e "s#^stateDir: \./state\$#stateDir: $STATE_DIR#" -e "s#\./state/#$STATE_DIR/#g" \
    "$PREFIX/node_modules/scheduled-events-forwarder/config/forwarder.example.yaml" >"$CONFIG_DIR/forwarder.yaml"
  say "wrote $CONFIG_DIR/forwarder.yaml (edit it, then: systemctl restart scheduled-events-forwarder)"
fi
if [[ ! -f "$CONFIG_DIR/secrets.env" ]]; then
  (umask 077 && printf '# NAME=value lines, referenced from forwarder.yaml as ${NAME}\n' >"$CONFIG_DIR/secrets.env")
fi
chmod 600 "$CONFIG_DIR/secrets.env"
# Validate with the secrets the service will get: systemd passes secrets.env (NAME=value lines) as its
# environment. Exported inside a subshell, never on a command line (where `ps` would show them).
(
  while IFS= read -r line || [[ -n "$line" ]]; do
    [[ "$line" =~ ^[[:space:]]*(#|$) ]] && continue
    [[ "$line" =~ ^[[:space:]]*([A-Za-z_][A-Za-z0-9_]*)=(.*)$ ]] || continue
    name="${BASH_REMATCH[1]}"
    value="${BASH_REMATCH[2]}"
    if [[ "$value" =~ ^\"(.*)\"$ || "$value" =~ ^\'(.*)\'$ ]]; then value="${BASH_REMATCH[1]}"; fi
    export "$name=$value"
  done <"$CONFIG_DIR/secrets.env"
  exec "$NODE" "$ENTRY" config validate "$CONFIG_DIR/forwarder.yaml"
) || fail "configuration is invalid (see above)"

mkdir -p "$UNIT_DIR"
install -m 0644 "$HERE/../systemd/scheduled-events-forwarder.service" "$UNIT_DIR/scheduled-events-forwarder.service"
if [[ -z "$SYSTEMCTL" ]]; then
  say "installed under $DESTDIR; systemd was not touched (DESTDIR without SYSTEMCTL): on the system that uses" \
    "this root, run: systemctl enable --now scheduled-events-forwarder"
  exit 0
fi
"$SYSTEMCTL" daemon-reload
"$SYSTEMCTL" enable --now scheduled-events-forwarder
say "enabled and started; status: systemctl status scheduled-events-forwarder; logs: journalctl -u scheduled-events-forwarder -f"
