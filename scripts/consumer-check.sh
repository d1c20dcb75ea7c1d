#!/usr/bin/env bash
# A new project on Node 22 that installs the packed tarball beside the current SDK majors — as a user does — installs
# without a peer conflict, type-checks the README's agent loop, and runs it against a loopback fake provider:
#
#   1. Node 22 from the npm registry (scripts/install-node.sh, cached in .cache/node-22/);
#   2. `npm pack` of this working tree (its `prepack` builds dist/);
#   3. `npm init` of a new project in a temporary folder; with Node 22's npm, the tarball + ABRIDGE_CONSUMER_PACKAGES
#      (default: openai@7 better-sqlite3@13 @anthropic-ai/sdk typescript @types/node@22) — a plain `npm install`, so
#      a peer range that refuses one of them stops here (ERESOLVE);
#   4. the README's agent loop — taken from README.md at run time: the ```ts block that constructs `new
#      ContextManager(` and an SDK client (`new Anthropic(` / `new OpenAI(`) — as agent.ts, with the tool functions
#      the block declares (`declare function …`) given by a preamble; `tsc` (strict, NodeNext, no skipLibCheck) compiles it;
#   5. the compiled loop runs on Node 22 against test/support/fake-provider.ts (test/support/run-fake.mts: Anthropic
#      and OpenAI wire formats on 127.0.0.1, a 40,000-token window, refusing what the APIs refuse); the check passes
#      when the loop exits 0 after printing its turns and the server refused nothing.
#
#   bash scripts/consumer-check.sh
#
# Environment: ABRIDGE_CONSUMER_PACKAGES, ABRIDGE_CONSUMER_KEEP=1 (keep the project and print where).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"

PACKAGES="${ABRIDGE_CONSUMER_PACKAGES:-openai@7 better-sqlite3@13 @anthropic-ai/sdk typescript @types/node@22}"
NAME="$(node -p 'require("./package.json").name')"

start=$(date +%s)
node_env="$(bash scripts/install-node.sh 22)"
eval "$node_env"
export PATH="$(dirname "$ABRIDGE_NODE_BIN"):$PATH"
echo "== consumer check: node $(node --version), npm $(npm --version)" >&2

WORK="$(mktemp -d "${TMPDIR:-/tmp}/abridge-consumer-XXXXXX")"
FAKE_PID=
cleanup() {
  if [ -n "$FAKE_PID" ]; then kill "$FAKE_PID" 2>/dev/null || true; fi
  if [ "${ABRIDGE_CONSUMER_KEEP:-}" = 1 ]; then echo "the project stays in $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

echo "== npm pack ($NAME)" >&2
tarball="$(npm pack --silent --pack-destination "$WORK" | tail -1)"
echo "packed $tarball" >&2

mkdir "$WORK/project"
cd "$WORK/project"
npm init -y >/dev/null
npm pkg set type=module >/dev/null
echo "== npm install ../$tarball $PACKAGES" >&2
t=$(date +%s)
npm install --no-audit --no-fund --loglevel=error "../$tarball" $PACKAGES >&2
echo "installed in $(( $(date +%s) - t )) s" >&2
node -e '
  const fs = require("fs");
  const names = ["'"$NAME"'", "openai", "ai", "@anthropic-ai/sdk", "better-sqlite3", "typescript"];
  const v = (p) => { try { return JSON.parse(fs.readFileSync(`node_modules/${p}/package.json`, "utf8")).version; } catch { return "-"; } };
  console.error(`node ${process.version}; ` + names.map((n) => `${n} ${v(n)}`).join(", "));
'

# The README's agent loop, as the README has it now.
node - "$ROOT/README.md" > agent.ts <<'JS'
const fs = require('node:fs');
const readme = fs.readFileSync(process.argv[2], 'utf8');
const blocks = [...readme.matchAll(/^```(?:ts|typescript)[ \t]*\n([\s\S]*?)^```/gm)].map((m) => m[1]);
const loop = blocks.find((b) => b.includes('new ContextManager(') && /new (Anthropic|OpenAI)\(/.test(b));
if (!loop) {
  console.error('error: README.md has no ```ts block constructing `new ContextManager(` with an SDK client');
  process.exit(1);
}
process.stdout.write(`import './tools.js';\n${loop}\nexport {};\n`);
// The functions the block declares and leaves to the user (its tools), by name.
const declared = [...loop.matchAll(/^declare function (\w+)\(/gm)].map((m) => m[1]);
fs.writeFileSync('declared.json', JSON.stringify(declared));
JS
node - > tools.ts <<'JS'
const declared = JSON.parse(require('node:fs').readFileSync('declared.json', 'utf8'));
if (declared.length === 0) {
  console.error('error: the README\'s agent loop declares no tool function (`declare function …`) for this check to give');
  process.exit(1);
}
// What the README's loop leaves to the user: its tools. Small outputs, so that the loop's 50 turns stay well inside the
// fake provider's window (the README's model has a far larger one, which abridge budgets for).
process.stdout.write(`async function tool(name: string, input: unknown): Promise<string> {
  return \`\${name} \${JSON.stringify(input)}: ok\\n\${'output line\\n'.repeat(5)}\`;
}
Object.assign(globalThis, { ${declared.map((d) => `${d}: tool`).join(', ')} });
`);
JS
cat > tsconfig.json <<'JSON'
{
  "compilerOptions": {
    "target": "ES2022",
    "module": "NodeNext",
    "moduleResolution": "NodeNext",
    "strict": true,
    "types": ["node"],
    "outDir": "build"
  },
  "files": ["agent.ts", "tools.ts"]
}
JSON
echo "== tsc (the README's agent loop, $(wc -l < agent.ts) lines)" >&2
npx tsc -p tsconfig.json >&2
echo "type-checked" >&2

echo "== the loop against the fake provider (Node 22)" >&2
cd "$ROOT"
fifo="$WORK/fake.out"
node --import tsx test/support/run-fake.mts > "$fifo" 2> "$WORK/fake.err" &
FAKE_PID=$!
for _ in $(seq 1 100); do [ -s "$fifo" ] && break; sleep 0.1; done
BASE_URL="$(head -1 "$fifo")"
[ -n "$BASE_URL" ] || { echo "error: the fake provider did not start: $(cat "$WORK/fake.err")" >&2; exit 1; }
cd "$WORK/project"
t=$(date +%s)
ANTHROPIC_BASE_URL="$BASE_URL" ANTHROPIC_API_KEY=sk-ant-test OPENAI_BASE_URL="$BASE_URL/v1" OPENAI_API_KEY=sk-test \
  node build/agent.js > "$WORK/agent.out" 2> "$WORK/agent.err" || {
  echo "error: the README's agent loop failed:" >&2
  tail -20 "$WORK/agent.err" >&2
  exit 1
}
kill -TERM "$FAKE_PID"
wait "$FAKE_PID" || true
FAKE_PID=
stats="$(tail -1 "$WORK/fake.err")"
echo "the loop ran in $(( $(date +%s) - t )) s; the fake provider: $stats" >&2
# The loop ends of itself (its turn limit, or an answer without calls): every request it sent was one the provider took.
node -e '
  const s = JSON.parse(process.argv[1]);
  if (!(s.total > 0 && s.refused.length === 0)) {
    console.error(`error: expected requests, none refused: ${JSON.stringify(s)}`);
    process.exit(1);
  }
' "$stats"
echo "consumer check passed in $(( $(date +%s) - start )) s" >&2
