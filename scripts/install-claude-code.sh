#!/usr/bin/env bash
# Installs the real Claude Code CLI, for the tests that check what it resumes from a transcript abridge wrote
# (src/cli/claude-code-resume.test.ts). It goes into its own folder (default .cache/claude-code/, git-ignored), outside
# the package's dependencies: the CLI is a ~380 MB native binary that npm takes from a platform-specific optional
# dependency. Its package asks for Node 22; the binary does not use Node, and runs where Node 20 is installed.
#
#   bash scripts/install-claude-code.sh [dir]      # prints ABRIDGE_CLAUDE_BIN=<path to the binary> on stdout
#   eval "$(bash scripts/install-claude-code.sh)" && export ABRIDGE_CLAUDE_BIN
#
# Idempotent: when the folder already holds the wanted version and its binary runs, nothing is downloaded.
# Progress goes to stderr. Set ABRIDGE_CLAUDE_CODE_VERSION to test another version.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION="${ABRIDGE_CLAUDE_CODE_VERSION:-2.1.330}"
DIR="${1:-${ABRIDGE_CLAUDE_DIR:-.cache/claude-code}}"
mkdir -p "$DIR"
DIR="$(cd "$DIR" && pwd)"

# The native binary of this platform: the optional dependency npm picked (@anthropic-ai/claude-code-<os>-<arch>[-musl]).
find_binary() {
  local f
  for f in "$DIR"/node_modules/@anthropic-ai/claude-code-*/claude; do
    if [ -x "$f" ] && [ "$("$f" --version 2>/dev/null | awk '{print $1}')" = "$VERSION" ]; then
      echo "$f"
      return 0
    fi
  done
  return 1
}

if bin="$(find_binary)"; then
  echo "Claude Code $VERSION already installed in $DIR" >&2
else
  echo "installing @anthropic-ai/claude-code@$VERSION into $DIR" >&2
  start=$(date +%s)
  # A package.json of its own, so that npm installs here and not into the project's dependencies.
  [ -f "$DIR/package.json" ] || echo '{ "name": "abridge-claude-code", "private": true }' > "$DIR/package.json"
  npm install --prefix "$DIR" --no-save --no-audit --no-fund --loglevel=error --engine-strict=false \
    "@anthropic-ai/claude-code@$VERSION" >&2
  if ! bin="$(find_binary)"; then
    echo "error: no runnable Claude Code $VERSION binary in $DIR/node_modules/@anthropic-ai/claude-code-*/ after npm install (is this platform supported, and were optional dependencies installed?)" >&2
    exit 1
  fi
  echo "installed in $(( $(date +%s) - start )) s" >&2
fi
echo "ABRIDGE_CLAUDE_BIN=$bin"
