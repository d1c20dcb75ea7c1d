#!/usr/bin/env bash
# Installs the real Codex CLI, for the tests that check what it resumes from a rollout abridge wrote
# (src/cli/codex-resume.test.ts). It goes into its own folder (default .cache/codex/, git-ignored), outside the
# package's dependencies: the CLI is a ~420 MB native (musl, static) binary that npm takes from a platform-specific
# optional dependency, and it does not use Node.
#
#   bash scripts/install-codex.sh [dir]      # prints ABRIDGE_CODEX_BIN=<path to the binary> on stdout
#   eval "$(bash scripts/install-codex.sh)" && export ABRIDGE_CODEX_BIN
#
# Idempotent: when the folder already holds the wanted version and its binary runs, nothing is downloaded.
# Progress goes to stderr. Set ABRIDGE_CODEX_VERSION to test another version.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION="${ABRIDGE_CODEX_VERSION:-0.171.0}"
DIR="${1:-${ABRIDGE_CODEX_DIR:-.cache/codex}}"
mkdir -p "$DIR"
DIR="$(cd "$DIR" && pwd)"

# The native binary of this platform, from the optional dependency npm picked (@openai/codex-<os>-<arch>).
find_binary() {
  local f
  for f in "$DIR"/node_modules/@openai/codex-*/vendor/*/bin/codex; do
    if [ -x "$f" ] && [ "$("$f" --version 2>/dev/null | awk '{print $2}')" = "$VERSION" ]; then
      echo "$f"
      return 0
    fi
  done
  return 1
}

if bin="$(find_binary)"; then
  echo "Codex CLI $VERSION already installed in $DIR" >&2
else
  echo "installing @openai/codex@$VERSION into $DIR" >&2
  start=$(date +%s)
  # A package.json of its own, so that npm installs here and not into the project's dependencies.
  [ -f "$DIR/package.json" ] || echo '{ "name": "abridge-codex", "private": true }' > "$DIR/package.json"
  npm install --prefix "$DIR" --no-save --no-audit --no-fund --loglevel=error "@openai/codex@$VERSION" >&2
  if ! bin="$(find_binary)"; then
    echo "error: no runnable Codex CLI $VERSION binary in $DIR/node_modules/@openai/codex-*/vendor/*/bin/ after npm install (is this platform supported, and were optional dependencies installed?)" >&2
    exit 1
  fi
  echo "installed in $(( $(date +%s) - start )) s" >&2
fi
echo "ABRIDGE_CODEX_BIN=$bin"
