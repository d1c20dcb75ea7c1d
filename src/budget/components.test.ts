import { describe, expect, it } from 'vitest';
import type { Message } from '../model/types.js';
import { componentOf, isProjectMemory } from './components.js';

const harness = (text: string): Message => ({ role: 'user', parts: [{ type: 'text', text }], synthetic: true });

describe('project memory a harness recorded as a message', () => {
  it.each([
    ['Codex', '# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>\nUse pnpm.\n</INSTRUCTIONS>'],
    ['Codex, earlier', '<user_instructions>\nUse pnpm.\n</user_instructions>'],
    [
      'Claude Code',
      "<system-reminder>\nAs you answer the user's questions, you can use the following context:\n# claudeMd\nContents of /repo/CLAUDE.md:\nUse pnpm.\n</system-reminder>",
    ],
    ['an extension', '# CLAUDE.md\nUse pnpm.'],
  ])('is recognized by the block it opens with: %s', (_, text) => {
    expect(isProjectMemory(harness(text))).toBe(true);
    expect(componentOf(harness(text))).toBe('memory');
  });

  it.each([
    ['a listing that shows the file', 'Ran `ls`\n```\nAGENTS.md\npackage.json\n```'],
    ['a reminder about something else', '<system-reminder>\nThe user opened src/a.ts.\n</system-reminder>'],
    ['a mention further down', 'Please read the notes.\n# AGENTS.md\nUse pnpm.'],
  ])('is not whatever mentions such a file: %s', (_, text) => {
    expect(isProjectMemory(harness(text))).toBe(false);
    expect(componentOf(harness(text))).toBe('recent');
  });

  it('is written by the harness, not typed by a person', () => {
    const typed: Message = { role: 'user', parts: [{ type: 'text', text: '# AGENTS.md\nUse pnpm.' }] };
    expect(isProjectMemory(typed)).toBe(false);
  });
});
