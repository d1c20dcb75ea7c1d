/**
 * The fake "model": deterministic from the request alone. While the conversation has fewer assistant turns than
 * `toolTurns`, it answers with a short text and a tool call (read_file and bash alternating over fixed lists, chosen by
 * the turn number; every third turn two parallel calls); then a final text answer. It calls only tools the request
 * defines, with the argument name the tool's schema declares.
 */
import type { ModelAnswer, ModelScript, ModelToolCall, ScriptContext } from './types.js';

/** Paths the default model reads (the last one does not exist in the example workspace: a realistic error result). */
export const SCRIPT_PATHS = [
  'src/server/router.ts',
  'src/db/migrations.ts',
  'CHANGELOG.md',
  'src/auth/session.ts',
  'test/router.test.ts',
  'src/util/cache.ts',
  'README.md',
  'src/config/load.ts',
  'src/server/middleware/rate-limit.ts',
  'src/legacy/old-handler.ts',
];

export const SCRIPT_COMMANDS = [
  'npm test',
  'git log --stat -n 40',
  'ls -laR src',
  'grep -rn "TODO\\|FIXME" src',
  'git diff HEAD~3',
  'npx tsc --noEmit',
  'git status',
  'cat src/server/router.ts',
  'find . -name "*.ts" -not -path "./node_modules/*"',
];

export const DEFAULT_TOOL_TURNS = 8;

function argumentName(schema: unknown, preferred: string): string {
  const props =
    typeof schema === 'object' && schema !== null ? (schema as { properties?: unknown }).properties : undefined;
  if (typeof props !== 'object' || props === null) return preferred;
  const names = Object.keys(props);
  if (names.includes(preferred)) return preferred;
  const required = (schema as { required?: unknown }).required;
  const firstRequired = Array.isArray(required) ? required.find((r): r is string => typeof r === 'string') : undefined;
  return firstRequired ?? names[0] ?? preferred;
}

function readCall(ctx: ScriptContext, k: number): ModelToolCall | undefined {
  const tool = ctx.tools.find((t) => t.name === 'read_file');
  if (!tool) return undefined;
  return {
    name: tool.name,
    input: { [argumentName(tool.inputSchema, 'path')]: SCRIPT_PATHS[k % SCRIPT_PATHS.length]! },
  };
}

function bashCall(ctx: ScriptContext, k: number): ModelToolCall | undefined {
  const tool = ctx.tools.find((t) => t.name === 'bash');
  if (!tool) return undefined;
  return {
    name: tool.name,
    input: { [argumentName(tool.inputSchema, 'command')]: SCRIPT_COMMANDS[k % SCRIPT_COMMANDS.length]! },
  };
}

function describe(call: ModelToolCall): string {
  const v = Object.values(call.input)[0];
  return call.name === 'read_file' ? `read ${String(v)}` : `run \`${String(v)}\``;
}

export function defaultAnswer(ctx: ScriptContext, script: ModelScript): ModelAnswer {
  const turn = ctx.assistantTurns;
  const toolTurns = script.toolTurns ?? DEFAULT_TOOL_TURNS;
  const thinking = ctx.thinkingEnabled
    ? `Turn ${turn}. The task needs the failing test and the code it exercises; I have ${ctx.messages.length} messages of context so far.`
    : undefined;
  if (turn < toolTurns) {
    const half = Math.floor(turn / 2);
    const first =
      turn % 2 === 0 ? (readCall(ctx, half) ?? bashCall(ctx, half)) : (bashCall(ctx, half) ?? readCall(ctx, half));
    const calls: ModelToolCall[] = first ? [first] : [];
    if (first && turn % 3 === 2) {
      const second = first.name === 'read_file' ? bashCall(ctx, half + 1) : readCall(ctx, half + 1);
      if (second) calls.push(second);
    }
    if (calls.length > 0) {
      return {
        text: `Step ${turn + 1}: I'll ${calls.map(describe).join(' and ')} to narrow down the failure.`,
        toolCalls: calls,
        ...(thinking ? { thinking } : {}),
      };
    }
  }
  const seen = ctx.messages.flatMap((m) => m.parts).filter((p) => p.kind === 'tool_result').length;
  return {
    text:
      `Done. I looked at ${seen} tool results over ${turn} turns. The failing test in test/router.test.ts comes from ` +
      'the route table being built before the middleware is registered in src/server/router.ts; moving the ' +
      'registration above `buildRoutes()` fixes it, and `npm test` should pass again.',
    ...(thinking ? { thinking } : {}),
  };
}

export function answerFor(ctx: ScriptContext, script: ModelScript): ModelAnswer {
  const custom = script.answer?.(ctx);
  return custom ?? defaultAnswer(ctx, script);
}
