import { describe, expect, it } from 'vitest';
import { parseSession } from '../formats/read.js';
import { TokenCounter } from '../tokens/counter.js';
import type { Message } from '../model/types.js';
import { displayToolName, mcpServerOf, ToolAttribution } from './attribution.js';
import { contextBreakdown } from './breakdown.js';

const jsonl = (records: unknown[]) => `${records.map((r) => JSON.stringify(r)).join('\n')}\n`;

describe('mcpServerOf', () => {
  it('reads the naming conventions of Claude Code / Codex, mcp_ prefixes and Cline-style proxies', () => {
    expect(mcpServerOf('mcp__github__create_issue')).toBe('github');
    expect(mcpServerOf('mcp__claude_ai_Linear__list_issues')).toBe('claude_ai_Linear');
    expect(mcpServerOf('mcp_excalidraw_create_element')).toBe('excalidraw');
    expect(mcpServerOf('use_mcp_tool', { server_name: 'weather', tool_name: 'forecast' })).toBe('weather');
    expect(mcpServerOf('Bash')).toBeUndefined();
    expect(mcpServerOf('list_mcp_resources')).toBeUndefined();
    expect(displayToolName('use_mcp_tool', { server_name: 'weather', tool_name: 'forecast' })).toBe(
      'mcp__weather__forecast',
    );
  });
});

describe('ToolAttribution', () => {
  it('attributes results to their call by id when the result does not name its tool', () => {
    const counter = new TokenCounter();
    const a = new ToolAttribution(counter);
    const call: Message = {
      role: 'assistant',
      parts: [
        { type: 'tool-call', id: 'c1', name: 'mcp__docs__search', arguments: { q: 'x' } },
        { type: 'tool-call', id: 'c2', name: 'Read', arguments: { path: 'a' } },
      ],
    };
    const r1: Message = {
      role: 'tool',
      parts: [
        { type: 'tool-result', callId: 'c1', content: [{ type: 'text', text: 'found '.repeat(200) }], isError: false },
      ],
    };
    const r2: Message = {
      role: 'tool',
      parts: [{ type: 'tool-result', callId: 'c2', content: [{ type: 'text', text: 'x' }], isError: false }],
    };
    for (const m of [call, r1, r2]) a.add(m);
    const tools = a.tools();
    expect(Object.keys(tools)).toEqual(['mcp__docs__search', 'Read']);
    expect(tools['mcp__docs__search']).toEqual({
      calls: 1,
      results: 1,
      tokens: counter.part(r1.parts[0]!),
      callTokens: counter.part(call.parts[0]!),
    });
    expect(tools['Read']!.results).toBe(1);
    expect(a.mcpServers()).toEqual({ docs: { ...tools['mcp__docs__search'], tools: ['mcp__docs__search'] } });
  });
});

describe('contextBreakdown: per-tool attribution', () => {
  // Claude Code: results carry only the call id; one MCP tool, one built-in.
  const base = { sessionId: 's', cwd: '/w', version: '2.0.0', userType: 'external', isSidechain: false };
  const records = [
    {
      ...base,
      type: 'user',
      uuid: 'u1',
      parentUuid: null,
      timestamp: '2026-01-01T00:00:00Z',
      message: { role: 'user', content: 'look it up' },
    },
    {
      ...base,
      type: 'assistant',
      uuid: 'a1',
      parentUuid: 'u1',
      timestamp: '2026-01-01T00:00:01Z',
      message: {
        id: 'r1',
        role: 'assistant',
        model: 'claude-sonnet-4-5',
        content: [{ type: 'tool_use', id: 't1', name: 'mcp__context7__get-library-docs', input: { id: 'react' } }],
        usage: { input_tokens: 10, cache_read_input_tokens: 1000, cache_creation_input_tokens: 0, output_tokens: 5 },
      },
    },
    {
      ...base,
      type: 'user',
      uuid: 'u2',
      parentUuid: 'a1',
      timestamp: '2026-01-01T00:00:02Z',
      message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'docs '.repeat(2000) }] },
    },
    {
      ...base,
      type: 'assistant',
      uuid: 'a2',
      parentUuid: 'u2',
      timestamp: '2026-01-01T00:00:03Z',
      message: {
        id: 'r2',
        role: 'assistant',
        model: 'claude-sonnet-4-5',
        content: [{ type: 'tool_use', id: 't2', name: 'Bash', input: { command: 'ls' } }],
        usage: { input_tokens: 10, cache_read_input_tokens: 3000, cache_creation_input_tokens: 0, output_tokens: 5 },
      },
    },
    {
      ...base,
      type: 'user',
      uuid: 'u3',
      parentUuid: 'a2',
      timestamp: '2026-01-01T00:00:04Z',
      message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't2', content: 'a.ts' }] },
    },
  ];
  it('names each tool and MCP server with its calls, results and provider tokens', () => {
    const s = contextBreakdown(parseSession(jsonl(records)));
    const byTool = s.byTool!;
    expect(Object.keys(byTool)).toEqual(['mcp__context7__get-library-docs', 'Bash']);
    const docs = byTool['mcp__context7__get-library-docs']!;
    expect(docs).toMatchObject({ calls: 1, results: 1 });
    // 2,000 repetitions of "docs ": well over a thousand tokens, far more than Bash's.
    expect(docs.tokens).toBeGreaterThan(1000);
    expect(byTool['Bash']!.tokens).toBeLessThan(50);
    expect(s.byMcpServer).toEqual({ context7: { ...docs, tools: ['mcp__context7__get-library-docs'] } });
  });
});
