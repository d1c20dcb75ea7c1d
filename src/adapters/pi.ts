/**
 * abridge inside pi: a pi extension (`abridge-context/pi`).
 *
 *   pi -e abridge-context/pi                       // or "extensions": ["abridge-context/pi"] in pi's settings.json
 *   new DefaultResourceLoader({ extensionFactories: [abridgeExtension({ … })] })   // pi's SDK
 *
 * - Every LLM call (pi's `context` event): abridge reads pi's session as it reads a pi file, measures it against the
 *   model's window (prompt + pi's max output), and when it reaches the compaction mark compacts what the call sends —
 *   old tool output cleared or offloaded (read back with the `read_result` tool), long output cut to head and tail,
 *   old turns summarized. Each such compaction is recorded in pi's session as an `abridge.context` entry (pi ignores it
 *   in the context; the extension re-applies it on every later call and after a resume).
 * - pi's own compaction (`session_before_compact`, automatic or /compact): abridge writes the summary; pi records its
 *   compaction entry with it, so what pi resumes from the file is exactly what abridge's reader shows for the file.
 *   What `/compact <instructions>` asks the summary to keep goes to the summarizer.
 * - Summaries are written by pi's current model (called as pi calls it), checked against abridge's extractive hand-off,
 *   which stands in when the model's answer fails; `summarizer: 'extractive'` makes no model call.
 * - `compact_context` tool, `/context` command (abridge's breakdown), the pressure line in pi's footer status.
 * - `/pin [text]`, `/unpin [text]`: the last message a person wrote, or every message holding `text`, stays verbatim
 *   through abridge's compactions (recorded in pi's session as an `abridge.pins` entry, which pi ignores); pi's own
 *   compaction (/compact) cannot keep a message in place, so abridge's summary for it quotes the pinned ones whole.
 */
import { AbridgeError } from '../errors.js';
import type { Api, AssistantMessage, Model } from '@mariozechner/pi-ai';
import type { ExtensionAPI, ExtensionContext } from '@mariozechner/pi-coding-agent';
import { contextBreakdown, type ContextBreakdown } from '../budget/breakdown.js';
import { pressureLine, renderBreakdownText } from '../budget/report.js';
import { DEFAULT_BUDGET_SETTINGS } from '../budget/defaults.js';
import type { BudgetSettings } from '../budget/types.js';
import { compact, forceCompact, type CompactionResult } from '../compaction/compact.js';
import { ExtractiveSummarizer } from '../compaction/summarizers/extractive.js';
import { LlmSummarizer, type LlmClient, type LlmCompletionRequest } from '../compaction/summarizers/llm.js';
import type { Summarizer } from '../compaction/summarizers/summarizer.js';
import { isHumanUser } from '../compaction/turns.js';
import { pinKey, pinnableText, pinsRecord, PINS_RECORD, recordedPins } from '../compaction/pins.js';
import { isRecord } from '../formats/format.js';
import { decodePiMessage } from '../formats/pi.js';
import { PI_SUMMARY_TYPE, piRecordsFor } from '../formats/pi-write.js';
import { parseSession } from '../formats/read.js';
import { chooseSummarizer } from '../manager/summarizer.js';
import type { CompactionMarker, Message, Session } from '../model/types.js';
import { activeMessages, activeView, isSummaryItem, type AbridgeMarker } from '../model/view.js';
import { FileResultStore } from '../store/file-result-store.js';
import { MemoryResultStore } from '../compaction/memory-result-store.js';
import type { ResultStore } from '../compaction/result-store.js';
import { TokenCounter } from '../tokens/counter.js';
import { estimateTokens } from '../tokens/estimate.js';
import { compactContextTool } from '../tools/compact-context.js';
import { readResultTool } from '../tools/read-result.js';
import type { AgentTool } from '../tools/tool.js';
import { importSdk } from './missing-sdk.js';

/** Where abridge's summary for pi's own compaction quotes the pinned messages it archives, whole. */
const PINNED_HEADING = '## Pinned messages (verbatim)';

/** customType of the session entry recording a compaction of what the LLM calls send. */
export const PI_CONTEXT_TYPE = 'abridge.context';
/** The key of abridge's line in pi's footer status. */
export const PI_STATUS_KEY = 'abridge';

type PiMessage = Record<string, unknown>;

export interface AbridgePiOptions {
  /** Budget settings (thresholds, allocations, model overrides); pi's model gives the window and the max output. */
  budget?: Partial<BudgetSettings>;
  /** Where cleared and offloaded tool output goes (default: `<session file>.results/`, as `abridge compact --out`; in memory without a file). */
  store?: ResultStore;
  /**
   * Writes the summaries. Default (and `'llm'` without `summaryClient`): pi's current model, called as pi calls it (its
   * key and headers from pi's model registry, through `@mariozechner/pi-ai`, which pi brings) — the answer checked
   * against abridge's extractive hand-off, retried once, and replaced by the extractive summary when it still fails.
   * `'extractive'`: abridge's extractive summary, no model call. Or a Summarizer of your own.
   */
  summarizer?: Summarizer | 'extractive' | 'llm';
  /** Another model than pi's for the summaries (`anthropicClient()` of `abridge-context/anthropic`, …). */
  summaryClient?: LlmClient;
  /** Agent steps at the end kept verbatim (default 5). */
  keepLastSteps?: number;
  /** Sees every LLM call abridge prepared: the snapshot after any compaction, the messages sent, the compaction. */
  onCall?: (call: { snapshot: ContextBreakdown; messages: readonly Message[]; compaction?: CompactionResult }) => void;
  /** Where `/context` prints (default: pi's notification). */
  print?: (text: string, ctx: ExtensionContext) => void;
}

/** The extension, configured. pi's loader takes the default export, `abridgeExtension()` with the defaults. */
export function abridgeExtension(options: AbridgePiOptions = {}): (pi: ExtensionAPI) => void {
  // Checked when pi loads the extension: a bad option is an error then, not at the first compaction.
  const chosen = chooseSummarizer(options, 'abridge pi extension');
  const extractive = new ExtractiveSummarizer();
  return (pi) => {
    /** The summarizer chosen, else pi's current model (`signal`: pi's own abort of the compaction). */
    const summarizerFor = (ctx: ExtensionContext, signal?: AbortSignal): Summarizer => {
      if (chosen && chosen !== 'llm') return chosen;
      const client = ctx.model ? piModelClient(ctx, ctx.model, signal) : undefined;
      return client ? new LlmSummarizer(client) : extractive;
    };
    let store = options.store;
    const storeFor = (ctx: ExtensionContext): ResultStore => {
      if (!store) {
        const file = ctx.sessionManager.getSessionFile();
        // Beside the session file, where `abridge compact --out <file>` puts what it offloads: read_result finds both.
        store = file ? new FileResultStore(`${file}.results`) : new MemoryResultStore();
      }
      return store;
    };
    const settingsFor = (ctx: ExtensionContext): BudgetSettings => {
      const settings: BudgetSettings = { ...DEFAULT_BUDGET_SETTINGS, ...options.budget };
      const model = ctx.model;
      if (model) {
        settings.model = model.id;
        if (model.contextWindow > 0) settings.contextWindow = model.contextWindow;
        // What pi asks for as max output without thinking (pi-ai: the model's max output, at most 32,000).
        if (model.maxTokens > 0 && options.budget?.reserveTokens === undefined)
          settings.reserveTokens = Math.min(model.maxTokens, 32_000);
      }
      if (options.budget?.prefixTokens === undefined) {
        // pi's system prompt and tool definitions: sent with every call, not in the session.
        const tools = pi
          .getAllTools()
          .map((t) => ({ name: t.name, description: t.description, parameters: t.parameters }));
        settings.prefixTokens = estimateTokens(ctx.getSystemPrompt()) + estimateTokens(JSON.stringify(tools));
      }
      return settings;
    };
    // Pins, as the session records them (the last `abridge.pins` entry): a test of each message.
    const pinnedIn = (session: Session) => {
      const pins = recordedPins(session.entries);
      return pins && pins.size > 0 ? { pinned: (m: Message) => pins.has(pinKey(m)) } : {};
    };
    const compactOptions = (ctx: ExtensionContext, settings: BudgetSettings) => ({
      store: storeFor(ctx),
      summarizer: summarizerFor(ctx),
      ...(options.keepLastSteps !== undefined ? { keepLastSteps: options.keepLastSteps } : {}),
      ...(settings.prefixTokens !== undefined ? { prefixTokens: settings.prefixTokens } : {}),
    });
    const record = (r: CompactionResult): void => {
      if (!r.marker) return;
      const { number: _n, ...saved } = r.marker;
      pi.appendEntry(PI_CONTEXT_TYPE, { abridge: saved });
    };

    pi.on('context', async (event, ctx) => {
      const text = sessionText(ctx);
      const session = withPending(
        withContextMarkers(parseSession(text, { format: 'pi' })),
        parseSession(text, { format: 'pi' }),
        event.messages as unknown as PiMessage[],
      );
      // pi's context must be the session's as abridge reads it; if it is not, abridge leaves the call alone rather than
      // send something else.
      if (!session) return undefined;
      const settings = settingsFor(ctx);
      let snapshot = contextBreakdown(session, { settings });
      let compaction: CompactionResult | undefined;
      if (snapshot.level === 'compact' || snapshot.level === 'block') {
        compaction = await compact(session, {
          target: snapshot.marks.target,
          ...compactOptions(ctx, settings),
          ...pinnedIn(session),
        });
        record(compaction);
        snapshot = contextBreakdown(session, { settings });
      }
      ctx.ui.setStatus(PI_STATUS_KEY, pressureLine(snapshot));
      options.onCall?.({ snapshot, messages: activeMessages(session), ...(compaction ? { compaction } : {}) });
      return { messages: piMessages(session) as never };
    });

    pi.on('session_before_compact', async (event, ctx) => {
      const { preparation } = event;
      const messages = [...preparation.messagesToSummarize, ...preparation.turnPrefixMessages]
        .map((m) => decodePiMessage(m as unknown as PiMessage))
        .filter((m): m is Message => m !== undefined);
      const task = firstTask(event.branchEntries as unknown as PiMessage[]);
      const instructions = event.customInstructions?.trim();
      const counter = new TokenCounter();
      const summarizer = summarizerFor(ctx, event.signal);
      const notes: string[] = [];
      const summary = await summarizer.summarize({
        messages,
        ...(preparation.previousSummary ? { previousSummary: preparation.previousSummary } : {}),
        ...(task ? { task } : {}),
        ...(instructions ? { instructions } : {}),
        maxTokens: Math.max(500, Math.floor(preparation.settings.reserveTokens / 2)),
        counter,
        report: (note) => notes.push(note),
      });
      if (!summary.trim()) return undefined; // pi's own summary then
      // pi's compaction archives a prefix and cannot keep a message in place: every pinned message before what it keeps
      // (this compaction's or an earlier one's) is quoted whole, after the summary (a carried-over quote is dropped first).
      const branch = parseSession(sessionText(ctx), { format: 'pi' });
      const pins = recordedPins(branch.entries);
      const keptFrom =
        branch.entries.find((e) => e.id === preparation.firstKeptEntryId)?.index ?? branch.entries.length;
      const quoted = new Set<string>();
      const pinnedText = pins?.size
        ? branch.entries
            .filter((e) => e.index < keptFrom && e.message && !e.compaction && pins.has(pinKey(e.message)))
            .filter((e) => !quoted.has(pinKey(e.message!)) && quoted.add(pinKey(e.message!)) !== undefined)
            .map((e) => `- (${e.message!.role}) ${pinnableText(e.message!)}`)
            .join('\n')
        : '';
      const own = summary.split(`\n\n${PINNED_HEADING}\n`)[0]!;
      return {
        compaction: {
          summary: pinnedText ? `${own}\n\n${PINNED_HEADING}\n${pinnedText}` : own,
          firstKeptEntryId: preparation.firstKeptEntryId,
          tokensBefore: preparation.tokensBefore,
          details: {
            abridge: {
              source: 'abridge',
              layout: 'pi',
              summarizer: summarizer.name,
              messages: messages.length,
              // A fallback to the extractive summary, and why: the file says how its summary was made.
              ...(notes.length > 0 ? { notes } : {}),
            },
          },
        },
      };
    });

    pi.on('session_start', (_event, ctx) => {
      const session = withContextMarkers(parseSession(sessionText(ctx), { format: 'pi' }));
      if (session.entries.length > 1)
        ctx.ui.setStatus(PI_STATUS_KEY, pressureLine(contextBreakdown(session, { settings: settingsFor(ctx) })));
    });

    const register = (tool: AgentTool, label: string, run: (ctx: ExtensionContext) => AgentTool) => {
      pi.registerTool({
        name: tool.name,
        label,
        description: tool.description,
        parameters: tool.inputSchema as never,
        async execute(
          _id: string,
          params: unknown,
          _signal: AbortSignal | undefined,
          _update: unknown,
          ctx: ExtensionContext,
        ) {
          const text = await run(ctx).run(params);
          return { content: [{ type: 'text' as const, text }], details: {} };
        },
      } as never);
    };
    const placeholder = new MemoryResultStore();
    register(readResultTool(placeholder), 'Read result', (ctx) => readResultTool(storeFor(ctx)));
    register(
      compactContextTool({
        compact: async () => ({ beforeTokens: 0, afterTokens: 0, beforeMessages: 0, afterMessages: 0 }),
      }),
      'Compact context',
      (ctx) =>
        compactContextTool({
          compact: async ({ instructions }) => {
            const session = withContextMarkers(parseSession(sessionText(ctx), { format: 'pi' }));
            const r = await forceCompact(session, {
              ...compactOptions(ctx, settingsFor(ctx)),
              ...pinnedIn(session),
              ...(instructions ? { instructions } : {}),
            });
            record(r);
            return r;
          },
        }),
    );

    const changePins = (on: boolean) => async (args: string, ctx: ExtensionContext) => {
      const session = withContextMarkers(parseSession(sessionText(ctx), { format: 'pi' }));
      const text = args.trim();
      // Pinned: what the model sees now. Unpinned: any message, the ones an earlier compaction of pi's archived too.
      const pool = on ? activeMessages(session) : session.entries.flatMap((e) => (e.message ? [e.message] : []));
      const chosen = text
        ? pool.filter((m) => pinnableText(m).includes(text))
        : [pool.findLast((m) => isHumanUser(m))].filter((m): m is Message => m !== undefined);
      const pins = recordedPins(session.entries) ?? new Set<string>();
      let changed = 0;
      for (const m of chosen) {
        const key = pinKey(m);
        if (on === pins.has(key)) continue;
        if (on) pins.add(key);
        else pins.delete(key);
        changed++;
      }
      if (changed > 0) pi.appendEntry(PINS_RECORD, (pinsRecord(pins).raw as { data: unknown }).data);
      const what = text ? `messages holding "${text}"` : 'the last message you wrote';
      const said =
        chosen.length === 0
          ? `abridge: no ${text ? `message holds "${text}"` : 'message of yours to pin'}; nothing ${on ? 'pinned' : 'unpinned'}`
          : `abridge: ${changed} ${changed === 1 ? 'message' : 'messages'} ${on ? 'pinned' : 'unpinned'} (${what}${changed < chosen.length ? `; ${chosen.length - changed} already ${on ? 'pinned' : 'not pinned'}` : ''}); ${pins.size} pinned in all — ${on ? 'kept verbatim whenever abridge compacts' : 'they may be compacted again'}`;
      if (options.print) options.print(said, ctx);
      else ctx.ui.notify(said, 'info');
    };
    pi.registerCommand('pin', {
      description:
        'abridge: keep the last message you wrote (or every message holding the text given) verbatim through compaction',
      handler: changePins(true),
    });
    pi.registerCommand('unpin', {
      description:
        'abridge: let the last message you wrote (or every message holding the text given) be compacted again',
      handler: changePins(false),
    });

    pi.registerCommand('context', {
      description: "abridge: where the context's tokens go (what the next LLM call sends)",
      handler: async (_args, ctx) => {
        const session = withContextMarkers(parseSession(sessionText(ctx), { format: 'pi' }));
        const text = renderBreakdownText(contextBreakdown(session, { settings: settingsFor(ctx) }));
        if (options.print) options.print(text, ctx);
        else ctx.ui.notify(text, 'info');
      },
    });
  };
}

export default abridgeExtension();

/**
 * An LlmClient on pi's model, called as pi's own compaction calls it: pi-ai's `completeSimple` with the key and headers
 * pi's model registry resolves for the model. `signal` (pi's abort of a compaction) ends the call too.
 */
function piModelClient(ctx: ExtensionContext, model: Model<Api>, signal?: AbortSignal): LlmClient {
  return {
    model: model.id,
    contextWindow: model.contextWindow > 0 ? model.contextWindow : 128_000,
    ...(model.maxTokens > 0 ? { maxOutputTokens: model.maxTokens } : {}),
    async complete(req: LlmCompletionRequest): Promise<string> {
      const auth = await ctx.modelRegistry.getApiKeyAndHeaders(model);
      if (!auth.ok)
        throw new AbridgeError('PROVIDER_ERROR', `no credentials for ${model.provider}/${model.id}: ${auth.error}`);
      const { completeSimple } = await importSdk(
        () => import('@mariozechner/pi-ai'),
        '@mariozechner/pi-ai',
        "pi's model for abridge's summaries",
      );
      const signals = [req.signal, signal].filter((s): s is AbortSignal => s !== undefined);
      const reply: AssistantMessage = await completeSimple(
        model,
        {
          systemPrompt: req.system,
          messages: [{ role: 'user', content: [{ type: 'text', text: req.prompt }], timestamp: Date.now() }],
        },
        {
          maxTokens: req.maxOutputTokens,
          ...(signals.length > 0 ? { signal: signals.length > 1 ? AbortSignal.any(signals) : signals[0]! } : {}),
          ...(auth.apiKey ? { apiKey: auth.apiKey } : {}),
          ...(auth.headers ? { headers: auth.headers } : {}),
        },
      );
      // pi-ai answers a failed call with a message rather than a rejection.
      if (reply.stopReason === 'error' || reply.stopReason === 'aborted')
        throw new AbridgeError('PROVIDER_ERROR', reply.errorMessage || `the call ended: ${reply.stopReason}`);
      return reply.content
        .map((c) => (c.type === 'text' ? c.text : ''))
        .join('')
        .trim();
    },
  };
}

/** pi's session as its file holds it (header, then every entry). */
function sessionText(ctx: ExtensionContext): string {
  const header = ctx.sessionManager.getHeader();
  const records = [header, ...ctx.sessionManager.getEntries()].filter((r) => r !== null && r !== undefined);
  return `${records.map((r) => JSON.stringify(r)).join('\n')}\n`;
}

const ROLE: Record<string, Message['role']> = { user: 'user', assistant: 'assistant', toolResult: 'tool' };

/**
 * The session with what pi's context holds beyond it: pi records a prompt after the call's context is built, so the
 * messages of the context that the session does not hold yet are added (in memory) on the active branch. Undefined
 * when the recorded messages are not the start of pi's context.
 */
function withPending(session: Session, plain: Session, context: readonly PiMessage[]): Session | undefined {
  const recorded = activeMessages(plain);
  if (recorded.length > context.length) return undefined;
  for (let i = 0; i < recorded.length; i++)
    if ((ROLE[String(context[i]!.role)] ?? 'user') !== recorded[i]!.role) return undefined;
  let parentId = [...session.entries].reverse().find((e) => e.id !== undefined && e.parentId !== undefined)?.id ?? null;
  for (const m of context.slice(recorded.length)) {
    const message = decodePiMessage(m);
    if (!message) return undefined;
    const id = `pending-${session.entries.length}`;
    session.entries.push({
      index: session.entries.length,
      kind: 'message',
      id,
      parentId,
      message,
      raw: { type: 'message', id, parentId, message: m },
    });
    parentId = id;
  }
  return session;
}

/** The session with the extension's own compactions of what the calls send (its `abridge.context` entries) as markers. */
function withContextMarkers(session: Session): Session {
  let number = 0;
  for (const e of session.entries) {
    const raw = e.raw;
    if (
      e.kind === 'custom' &&
      isRecord(raw) &&
      raw.customType === PI_CONTEXT_TYPE &&
      isRecord(raw.data) &&
      isRecord(raw.data.abridge)
    ) {
      e.kind = 'compaction';
      e.compaction = {
        ...(raw.data.abridge as unknown as Omit<AbridgeMarker, 'number'>),
        number: ++number,
      } as CompactionMarker;
    } else if (e.compaction) e.compaction.number = ++number;
  }
  return session;
}

/** The messages pi sends for abridge's view: pi's own messages where unchanged, rewritten where abridge edited them. */
function piMessages(session: Session): PiMessage[] {
  const out: PiMessage[] = [];
  for (const item of activeView(session)) {
    if (isSummaryItem(item)) {
      const marker = item.message.parts.find((p) => p.type === 'compaction');
      const summary = marker?.type === 'compaction' ? marker.marker : undefined;
      if (summary && summary.source !== 'abridge') {
        out.push({
          role: 'compactionSummary',
          summary: summary.summary,
          tokensBefore: summary.tokensBefore ?? 0,
          timestamp: Date.now(),
        });
      } else {
        out.push({
          role: 'custom',
          customType: PI_SUMMARY_TYPE,
          content: [{ type: 'text', text: summary?.summary ?? '' }],
          display: true,
          timestamp: Date.now(),
        });
      }
      continue;
    }
    const raw = session.entries[item.entry!]!.raw;
    if (!item.edit && isRecord(raw) && raw.type === 'message' && isRecord(raw.message)) {
      out.push(structuredClone(raw.message));
      continue;
    }
    for (const r of piRecordsFor(session, item)) out.push(agentMessageOf(r));
  }
  return out;
}

/** A pi session record as the message pi's context holds for it (what pi's buildSessionContext makes of it). */
function agentMessageOf(r: Record<string, unknown>): PiMessage {
  const timestamp = typeof r.timestamp === 'string' ? Date.parse(r.timestamp) : Date.now();
  switch (r.type) {
    case 'message':
      return r.message as PiMessage;
    case 'custom_message':
      return {
        role: 'custom',
        customType: r.customType,
        content: r.content,
        display: r.display,
        details: r.details,
        timestamp,
      };
    case 'branch_summary':
      return { role: 'branchSummary', summary: r.summary, fromId: r.fromId, timestamp };
    default:
      return { role: 'custom', customType: String(r.type), content: [], display: false, timestamp };
  }
}

/** The first thing the user asked, from pi's session entries. */
function firstTask(entries: readonly PiMessage[]): string | undefined {
  for (const e of entries) {
    if (e.type !== 'message' || !isRecord(e.message)) continue;
    const m = decodePiMessage(e.message);
    if (m && isHumanUser(m))
      return (
        m.parts
          .map((p) => (p.type === 'text' ? p.text : ''))
          .join('\n')
          .trim() || undefined
      );
  }
  return undefined;
}
