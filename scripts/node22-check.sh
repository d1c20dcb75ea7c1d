#!/usr/bin/env bash
# Runs abridge's tests on Node 22 with the current majors of the peer SDKs installed (what users on Node 22+ install
# beside abridge), in a scratch copy of this working tree, so that the project's own node_modules are left alone:
#
#   1. Node 22 from the npm registry (scripts/install-node.sh, cached in .cache/node-22/);
#   2. a copy of the tracked and untracked-but-not-ignored files into a temporary folder; with Node 22's npm, the
#      locked dependencies plus the peers' current majors (default: openai@7 better-sqlite3@13 ai@7 and the AI SDK 7
#      packages @ai-sdk/provider@4 @ai-sdk/anthropic@4 @ai-sdk/openai@4 — better-sqlite3 13 ships its prebuilt
#      binaries inside the npm package: no download from GitHub, no compiler; ai@7 runs the AI SDK adapter's tests on
#      LanguageModelV4, its providers being V4 models — and the hosts whose current releases need Node 22:
#      @openai/agents@0 (0.15 and later are built on openai 7; Node 20 runs 0.14) and @mastra/core@1);
#   3. in that copy, on Node 22: that better-sqlite3 loads, `npm run build` (tsc + esbuild), `tsc --noEmit` of src/
#      and test/ against those majors (and of test/node22/, the tests of libraries that need Node 22), the typed
#      consumers and every documentation block (scripts/typecheck-consumers.js, none set aside), then `vitest run` of
#      the adapters', stores' and CLI test files, test/node22/ (and the example agent's, the LangChain agent's, the
#      Anthropic tool runner's, the provider-window and the package's tests).
#
#   bash scripts/node22-check.sh [vitest filters…]      # default filters: see TESTS below
#
# Environment: ABRIDGE_NODE22_PACKAGES (what to install over the lock file), ABRIDGE_NODE22_KEEP=1 (keep the copy and
# print where), and whatever the tests themselves read (ABRIDGE_PG_URL, ABRIDGE_CLAUDE_BIN…), passed through.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"

PACKAGES="${ABRIDGE_NODE22_PACKAGES:-openai@7 better-sqlite3@13 ai@7 @ai-sdk/provider@4 @ai-sdk/anthropic@4 @ai-sdk/openai@4 @openai/agents@0 @mastra/core@1}"
TESTS=(src/adapters src/store src/cli test/node22 test/example-agent.test.ts test/langchain-agent.test.ts test/anthropic-tool-runner.test.ts test/provider-window.test.ts test/pack.test.ts test/exports.test.ts)
# vitest.config.ts runs test/node22/ only when this is set; Mastra reports usage to its makers unless told not to.
export ABRIDGE_NODE22=1 MASTRA_TELEMETRY_DISABLED=1
[ "$#" -gt 0 ] && TESTS=("$@")

start=$(date +%s)
node_env="$(bash scripts/install-node.sh 22)"
eval "$node_env"
NODE_DIR="$(dirname "$ABRIDGE_NODE_BIN")"
# npm, npx and every `node` the tests spawn by name run on Node 22 (npm is a Node script: its shebang finds this node).
export PATH="$NODE_DIR:$PATH"
echo "== Node 22 check: node $(node --version), npm $(npm --version)" >&2

# The copy is elsewhere: the tests over real transcripts find the corpus beside this checkout through ABRIDGE_CORPUS.
if [ -z "${ABRIDGE_CORPUS:-}" ] && [ -d ../shared/corpus ]; then
  ABRIDGE_CORPUS="$(cd ../shared/corpus && pwd)"
  export ABRIDGE_CORPUS
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/abridge-node22-XXXXXX")"
if [ "${ABRIDGE_NODE22_KEEP:-}" = 1 ]; then
  echo "the copy stays in $WORK" >&2
else
  trap 'rm -rf "$WORK"' EXIT
fi
# Never node_modules: a worktree may hold it as a symlink (not matched by the `node_modules/` ignore rule), and an
# install into the copy would then write into the original's dependencies.
git ls-files -z --cached --others --exclude-standard | grep -zv '^node_modules\(/\|$\)' |
  tar --null -T - -cf - | tar -xf - -C "$WORK"
cd "$WORK"
if [ -e node_modules ] || [ -L node_modules ]; then
  echo "error: $WORK/node_modules exists before the install: refusing to install through it" >&2
  exit 1
fi
echo "== installing the locked dependencies and $PACKAGES (Node 22's npm)" >&2
t=$(date +%s)
# `npm install <pkg>@<major>` over the lock file: everything else stays as locked, these move to the new major.
npm install --no-audit --no-fund --loglevel=error --save-dev $PACKAGES >&2
echo "installed in $(( $(date +%s) - t )) s" >&2
node -e '
  const v = (p) => JSON.parse(require("fs").readFileSync(`node_modules/${p}/package.json`, "utf8")).version;
  const Database = require("better-sqlite3");
  const db = new Database(":memory:");
  const sqlite = db.prepare("select sqlite_version() as v").get().v;
  db.close();
  console.error(`node ${process.version}; openai ${v("openai")}, ai ${v("ai")}, @ai-sdk/provider ${v("@ai-sdk/provider")}, @ai-sdk/anthropic ${v("@ai-sdk/anthropic")}, @ai-sdk/openai ${v("@ai-sdk/openai")}, better-sqlite3 ${v("better-sqlite3")} (SQLite ${sqlite}), @anthropic-ai/sdk ${v("@anthropic-ai/sdk")}, @openai/agents ${v("@openai/agents")}, @mastra/core ${v("@mastra/core")}`);
'
echo "== build and type-check on Node 22" >&2
t=$(date +%s)
npm run build >&2
node node_modules/typescript/bin/tsc -p tsconfig.json --noEmit >&2
node node_modules/typescript/bin/tsc -p test/node22/tsconfig.json --noEmit >&2
# The typed consumers (good/bad against the SDKs, now openai 7) and the documentation's blocks: tsc's own pass, not a
# test. Here every block is checked, those of the libraries that need Node 22 included.
ABRIDGE_REQUIRE_ALL_BLOCKS=1 node scripts/typecheck-consumers.js >&2
echo "built and type-checked in $(( $(date +%s) - t )) s" >&2
echo "== vitest run ${TESTS[*]} (Node 22)" >&2
t=$(date +%s)
npx vitest run "${TESTS[@]}"
echo "tests in $(( $(date +%s) - t )) s; the whole Node 22 check in $(( $(date +%s) - start )) s" >&2
