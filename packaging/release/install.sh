#!/bin/sh
# Installs (or removes) scheduled-events-forwarder from this release archive as a hardened systemd service.
# Needs no Node.js: the executable carries its own runtime. Run from the unpacked archive, as root:
#
#   sudo ./install.sh              install or upgrade: executable, unit, config (kept if present); start
#   sudo ./install.sh --uninstall  stop and remove the service and the executable (config and state are kept)
#
# Install: 1. copies the executable to /usr/local/bin; 2. writes /etc/scheduled-events-forwarder/forwarder.yaml
# from the example if none exists (its ./state paths pointed at /var/lib/scheduled-events-forwarder) and an
# empty secrets.env (mode 0600) for connection strings and webhook URLs; 3. validates the config with those
# secrets in the environment; 4. installs the systemd unit and enables and (re)starts it.
# Environment (tests, images, unusual layouts): DESTDIR (prefix of every installed path; with it set, systemd
# is not touched unless SYSTEMCTL is given too), SYSTEMCTL (default systemctl).
set -eu

DESTDIR="${DESTDIR:-}"
# Empty SYSTEMCTL: systemd is not touched (DESTDIR without SYSTEMCTL: an image or a test root, not this host's).
if [ -n "$DESTDIR" ]; then SYSTEMCTL="${SYSTEMCTL:-}"; else SYSTEMCTL="${SYSTEMCTL:-systemctl}"; fi
NAME=scheduled-events-forwarder
HERE="$(cd "$(dirname "$0")" && pwd)"
BIN="$DESTDIR/usr/local/bin/$NAME"
CONFIG_DIR="$DESTDIR/etc/$NAME"
UNIT="$DESTDIR/etc/systemd/system/$NAME.service"
# The unit's StateDirectory, as the service sees it (no DESTDIR).
STATE_DIR="/var/lib/$NAME"

say() { printf 'install: %s\n' "$*"; }
fail() { printf 'install: error: %s\n' "$*" >&2; exit 1; }

if [ "${1:-}" = "--uninstall" ]; then
  if [ -n "$SYSTEMCTL" ]; then "$SYSTEMCTL" disable --now "$NAME" >/dev/null 2>&1 || true; fi
  rm -f "$UNIT" "$BIN"
  if [ -n "$SYSTEMCTL" ]; then "$SYSTEMCTL" daemon-reload || true; fi
  say "removed the service and $BIN; kept $CONFIG_DIR and $STATE_DIR (delete them to remove everything)"
  exit 0
fi
[ $# -eq 0 ] || fail "unknown argument '$1' (usage: install.sh [--uninstall])"
if [ -z "$DESTDIR" ] && [ "$(id -u)" -ne 0 ]; then fail "run as root (sudo ./install.sh)"; fi

"$HERE/$NAME" --version >/dev/null 2>&1 ||
  fail "$HERE/$NAME does not run on this machine (wrong archive for this CPU? uname -m: $(uname -m))"

mkdir -p "$(dirname "$BIN")"
# Copy then rename: an upgrade never leaves a half-written executable where the service starts it.
cp "$HERE/$NAME" "$BIN.new" && chmod 0755 "$BIN.new" && mv -f "$BIN.new" "$BIN"
say "installed $BIN ($("$BIN" --version))"

mkdir -p "$CONFIG_DIR"
if [ ! -f "$CONFIG_DIR/forwarder.yaml" ]; then
  # Under systemd the only writable place is the StateDirectory, so point the example's ./state paths there.
  sed -e "s#^stateDir: \./state\$#stateDir: $STATE_DIR#" -e "s#\./state/#$STATE_DIR/#g" \
    "$HERE/forwarder.example.yaml" >"$CONFIG_DIR/forwarder.yaml"
  say "wrote $CONFIG_DIR/forwarder.yaml (edit it, then: systemctl restart $NAME)"
else
  say "kept $CONFIG_DIR/forwarder.yaml"
fi
if [ ! -f "$CONFIG_DIR/secrets.env" ]; then
  (umask 077 && printf '# NAME=value lines, referenced from forwarder.yaml as ${NAME}\n' >"$CONFIG_DIR/secrets.env")
fi
chmod 600 "$CONFIG_DIR/secrets.env"

# Validate with the secrets the service will get (systemd passes secrets.env as its environment). Exported in
# a subshell, never put on a command line (where `ps` would show them).
# Lines are read as systemd reads an EnvironmentFile (NAME=value, optional quotes), not sourced: connection
# strings contain ';' and '&'.
(
  while IFS= read -r line || [ -n "$line" ]; do
    line="${line#"${line%%[! ]*}"}"
    case "$line" in '' | '#'*) continue ;; esac
    name="${line%%=*}"
    value="${line#*=}"
    case "$name" in '' | [0-9]* | *[!A-Za-z0-9_]*) continue ;; esac
    case "$value" in
      \"*\") value="${value#\"}"; value="${value%\"}" ;;
      \'*\') value="${value#\'}"; value="${value%\'}" ;;
    esac
    export "$name=$value"
  done <"$CONFIG_DIR/secrets.env"
  exec "$BIN" config validate "$CONFIG_DIR/forwarder.yaml"
) || fail "configuration $CONFIG_DIR/forwarder.yaml is invalid (see above); fix it and run install.sh again"

mkdir -p "$(dirname "$UNIT")"
cp "$HERE/$NAME.service" "$UNIT.new" && chmod 0644 "$UNIT.new" && mv -f "$UNIT.new" "$UNIT"
if [ -z "$SYSTEMCTL" ]; then
  say "installed under $DESTDIR; systemd was not touched (DESTDIR without SYSTEMCTL): on the system that uses" \
    "this root, run: systemctl enable --now $NAME"
  exit 0
fi
"$SYSTEMCTL" daemon-reload
"$SYSTEMCTL" enable "$NAME"
"$SYSTEMCTL" restart "$NAME"
say "enabled and started; status: systemctl status $NAME; logs: journalctl -u $NAME -f"
