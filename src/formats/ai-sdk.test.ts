import { basename } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Message, Session, TextPart } from '../model/types.js';
import {
  conversationToolCalls,
  sessionOf as sessionOfFormat,
  expectInvalidInputs,
} from '../../test/support/sessions.js';
import { corpusAvailable, corpusFiles } from '../../test/support/corpus.js';
import { aiSdkFormat, aiSdkMessagesProblems, toAiSdkMessages } from './ai-sdk.js';
import { anthropicRequestProblems } from './anthropic.js';
import { openaiChatRequestProblems } from './openai-chat.js';
import { openaiResponsesRequestProblems } from './openai-responses.js';
import { parseSession, readSession } from './read.js';
import { writeSession } from './write.js';

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/58BAwAI/AL+hc2rNAAAAABJRU5ErkJggg==';
const PDF = 'JVBERi0xLjQKJcfsj6IKMSAwIG9iago8PD4+CmVuZG9iagp0cmFpbGVyCjw8Pj4KJSVFT0YK';

const text = (t: string): TextPart => ({ type: 'text', text: t });
const read = (doc: unknown, source = 'messages.json') =>
  parseSession(JSON.stringify(doc), { format: 'ai-sdk', source });

const sessionOf = (messages: Message[]): Session => sessionOfFormat('pi', messages);

/** AI SDK v5/v6 `ModelMessage[]`. */
const V5 = [
  { role: 'system', content: 'You are terse.' },
  {
    role: 'user',
    content: [
      { type: 'text', text: 'Describe' },
      { type: 'image', image: `data:image/png;base64,${PNG}` },
      { type: 'image', image: 'https://example.com/a.png', mediaType: 'image/png' },
      { type: 'file', data: PDF, mediaType: 'application/pdf', filename: 'a.pdf' },
    ],
  },
  {
    role: 'assistant',
    content: [
      { type: 'reasoning', text: 'Think.', providerOptions: { anthropic: { signature: 'sig' } } },
      { type: 'text', text: 'Calling.' },
      { type: 'tool-call', toolCallId: 'tc1', toolName: 'weather', input: { city: 'Oslo' } },
    ],
  },
  {
    role: 'tool',
    content: [
      { type: 'tool-result', toolCallId: 'tc1', toolName: 'weather', output: { type: 'json', value: { temp: 3 } } },
    ],
  },
  { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'tc2', toolName: 'shot', input: {} }] },
  {
    role: 'tool',
    content: [
      {
        type: 'tool-result',
        toolCallId: 'tc2',
        toolName: 'shot',
        output: {
          type: 'content',
          value: [
            { type: 'text', text: 'ok' },
            { type: 'media', data: PNG, mediaType: 'image/png' },
          ],
        },
      },
    ],
  },
  { role: 'assistant', content: 'Cold.' },
];

/** AI SDK v4 generateText options: `args`, `result`, `mimeType`, signature on the reasoning part. */
const V4 = {
  model: 'openai:gpt-4o',
  maxTokens: 100,
  system: 'Sys',
  messages: [
    { role: 'user', content: [{ type: 'image', image: PNG, mimeType: 'image/jpeg' }] },
    {
      role: 'assistant',
      content: [
        { type: 'reasoning', text: 'r', signature: 's4' },
        { type: 'redacted-reasoning', data: 'red' },
        { type: 'tool-call', toolCallId: 'a', toolName: 'f', args: { x: 1 } },
      ],
    },
    {
      role: 'tool',
      content: [{ type: 'tool-result', toolCallId: 'a', toolName: 'f', result: { ok: true }, isError: true }],
    },
  ],
};

describe('AI SDK reader', () => {
  it('is detected from its content', () => {
    expect(parseSession(JSON.stringify(V5)).format).toBe('ai-sdk');
    expect(parseSession(JSON.stringify(V4)).format).toBe('ai-sdk');
    expect(parseSession(JSON.stringify({ system: 'S', prompt: 'hello' })).format).toBe('ai-sdk');
    expect(
      aiSdkFormat.detect({
        head: '',
        document: { model: 'gpt-4o', messages: [{ role: 'tool', tool_call_id: 'x', content: 'y' }] },
      }),
    ).toBeLessThan(0.5);
  });

  it('maps v5 messages', () => {
    const s = read(V5);
    expect(s.entries.map((e) => e.message?.role)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'assistant',
      'tool',
      'assistant',
    ]);
    const user = s.entries[1]!.message!.parts;
    expect(user[1]).toEqual({ type: 'image', mediaType: 'image/png', data: PNG, byteSize: 70 });
    expect(user[2]).toEqual({ type: 'image', mediaType: 'image/png', url: 'https://example.com/a.png' });
    expect(user[3]).toEqual({ type: 'file', mediaType: 'application/pdf', data: PDF, byteSize: 54, name: 'a.pdf' });
    expect(s.entries[2]!.message!.parts).toEqual([
      { type: 'thinking', text: 'Think.', signature: 'sig' },
      text('Calling.'),
      { type: 'tool-call', id: 'tc1', name: 'weather', arguments: { city: 'Oslo' } },
    ]);
    expect(s.entries[3]!.message!.parts).toEqual([
      { type: 'tool-result', callId: 'tc1', toolName: 'weather', content: [text('{"temp":3}')], isError: false },
    ]);
    expect(s.entries[5]!.message!.parts).toEqual([
      {
        type: 'tool-result',
        callId: 'tc2',
        toolName: 'shot',
        content: [text('ok'), { type: 'image', mediaType: 'image/png', data: PNG, byteSize: 70 }],
        isError: false,
      },
    ]);
    expect(s.entries[6]!.raw).toEqual(V5[6]);
  });

  it('maps v4 names and the options object', () => {
    const s = read(V4);
    expect(s.entries.map((e) => [e.message?.role, e.sourceType])).toEqual([
      ['system', 'option:system'],
      ['user', 'user'],
      ['assistant', 'assistant'],
      ['tool', 'tool'],
    ]);
    expect(s.entries[1]!.message!.parts).toEqual([{ type: 'image', mediaType: 'image/jpeg', data: PNG, byteSize: 70 }]);
    expect(s.entries[2]!.message!.parts).toEqual([
      { type: 'thinking', text: 'r', signature: 's4' },
      { type: 'thinking', text: '', signature: 'red', redacted: true },
      { type: 'tool-call', id: 'a', name: 'f', arguments: { x: 1 } },
    ]);
    expect(s.entries[3]!.message!.parts).toEqual([
      { type: 'tool-result', callId: 'a', toolName: 'f', content: [text('{"ok":true}')], isError: true },
    ]);
    expect(s.extra!.request).toEqual({ model: 'openai:gpt-4o', maxTokens: 100 });
  });

  it('names the source and the JSON path of bad input', () => {
    const cases: [unknown, string][] = [
      ['text', '(document)'],
      [{ system: 'x' }, 'messages: expected an array of ModelMessage (or a prompt)'],
      [
        [
          { role: 'user', content: 'a' },
          { role: 'assistant', content: [{ text: 'no type' }] },
        ],
        '[1].content[0]: expected a part object',
      ],
      [
        { messages: [{ role: 'bot', content: 'x' }] },
        'messages[0].role: expected "system", "user", "assistant" or "tool", got the string "bot"',
      ],
      [[{ role: 'tool', content: 'x' }], '[0].content: expected an array of tool-result parts'],
      [
        [{ role: 'assistant', content: [{ type: 'tool-call', toolName: 'f', input: {} }] }],
        '[0].content[0].toolCallId: expected a string, got nothing',
      ],
      [{ system: 5, messages: [] }, 'system: expected a string or a system message'],
      // A tool result whose output has no value: a clear error, never a TypeError (issue 13).
      ...(['text', 'error-text', 'json', 'error-json', 'content'] as const).map((type): [unknown, string] => [
        [{ role: 'tool', content: [{ type: 'tool-result', toolCallId: 'a', toolName: 'f', output: { type } }] }],
        `[0].content[0].output.value: expected ${type === 'content' ? 'an array of content parts' : `the ${type} output`}`,
      ]),
    ];
    expectInvalidInputs(read, cases);
  });
});

describe('AI SDK writer', () => {
  it('writes a session read from this format back as it was, and reads it back alike', () => {
    for (const doc of [V5, V4, { system: 'S', prompt: 'hello', temperature: 0 }]) {
      const s = read(doc);
      const written = writeSession(s);
      expect(JSON.parse(written)).toEqual(doc);
      expect(parseSession(written, { format: 'ai-sdk' }).entries.map((e) => e.message)).toEqual(
        s.entries.map((e) => e.message),
      );
    }
  });

  it('converts a session from another format into v5 ModelMessage[]', () => {
    const s = sessionOf([
      { role: 'system', parts: [text('Sys')] },
      { role: 'user', parts: [text('Go')] },
      {
        role: 'assistant',
        parts: [
          { type: 'thinking', text: 'plan', signature: 'SIG' },
          { type: 'tool-call', id: 't1', name: 'shot', arguments: {} },
          { type: 'tool-call', id: 't2', name: 'rm', arguments: { f: 'x' } },
        ],
      },
      {
        role: 'tool',
        parts: [
          {
            type: 'tool-result',
            callId: 't1',
            content: [text('ok'), { type: 'image', mediaType: 'image/png', data: PNG }],
            isError: false,
          },
        ],
      },
    ]);
    const messages = toAiSdkMessages(s);
    expect(aiSdkMessagesProblems(messages)).toEqual([]);
    expect(messages).toEqual([
      { role: 'system', content: 'Sys' },
      { role: 'user', content: 'Go' },
      {
        role: 'assistant',
        content: [
          { type: 'reasoning', text: 'plan', providerOptions: { anthropic: { signature: 'SIG' } } },
          { type: 'tool-call', toolCallId: 't1', toolName: 'shot', input: {} },
          { type: 'tool-call', toolCallId: 't2', toolName: 'rm', input: { f: 'x' } },
        ],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 't1',
            toolName: 'shot',
            output: {
              type: 'content',
              value: [
                { type: 'text', text: 'ok' },
                { type: 'media', data: PNG, mediaType: 'image/png' },
              ],
            },
          },
          {
            type: 'tool-result',
            toolCallId: 't2',
            toolName: 'rm',
            output: { type: 'error-text', value: '[no result recorded]' },
          },
        ],
      },
    ]);
  });

  it('has validity checks that catch unpaired tool calls', () => {
    expect(
      aiSdkMessagesProblems([
        { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'x', toolName: 'f', input: {} }] },
      ]).join(),
    ).toMatch(/has no tool-result/);
    expect(
      aiSdkMessagesProblems([
        {
          role: 'tool',
          content: [{ type: 'tool-result', toolCallId: 'x', toolName: 'f', output: { type: 'text', value: '' } }],
        },
      ]).join(),
    ).toMatch(/no earlier tool-call/);
    expect(aiSdkMessagesProblems([{ role: 'user', content: [] }]).join()).toMatch(/empty/);
  });
});

describe('across formats', () => {
  it('AI SDK messages write as valid API requests of each kind', () => {
    const s = read(V5);
    const anthropic = JSON.parse(writeSession(s, 'anthropic')) as {
      system: string;
      messages: { role: string; content: { type: string }[] }[];
    };
    expect(anthropicRequestProblems(anthropic)).toEqual([]);
    expect(anthropic.system).toBe('You are terse.');
    expect(anthropic.messages[1]!.content.map((b) => b.type)).toEqual(['thinking', 'text', 'tool_use']);
    expect(anthropic.messages[2]!.content).toEqual([
      { type: 'tool_result', tool_use_id: 'tc1', content: '{"temp":3}' },
    ]);
    expect(openaiChatRequestProblems(JSON.parse(writeSession(s, 'openai-chat')))).toEqual([]);
    expect(openaiResponsesRequestProblems(JSON.parse(writeSession(s, 'openai-responses')))).toEqual([]);
  });
});

const run = corpusAvailable() ? describe : describe.skip;

run('corpus transcripts written as AI SDK messages', () => {
  for (const folder of ['pi', 'claude-code']) {
    for (const file of corpusFiles(folder)) {
      const name = `${folder}/${basename(file)}`;
      it(name, async () => {
        const s = await readSession(file);
        const messages = JSON.parse(writeSession(s, 'ai-sdk')) as { role: string; content: unknown }[];
        expect(aiSdkMessagesProblems(messages)).toEqual([]);
        const calls = conversationToolCalls(s);
        const written = messages
          .flatMap((m) => (Array.isArray(m.content) ? (m.content as { type: string }[]) : []))
          .filter((p) => p.type === 'tool-call').length;
        expect(written).toBe(calls);
        expect(parseSession(JSON.stringify(messages)).format).toBe('ai-sdk');
      });
    }
  }
});
