import { describe, expect, it } from 'vitest';
import type { ToolCallPart, ToolResultPart } from '../model/types.js';
import { callInfo, fileReads, shellReads, textChanges } from './records.js';

describe('what a call shows of a file, and its changes as text', () => {
  it.each([
    ['cat src/a.ts', [{ path: 'src/a.ts', text: true }]],
    ['cd /repo && cat src/a.ts', [{ path: 'src/a.ts', cwd: '/repo', text: true }]],
    ["sed -n '20,80p' src/a.ts", [{ path: 'src/a.ts', from: 20, to: 80, text: true }]],
    ["nl -ba src/a.ts | sed -n '5,9p'", [{ path: 'src/a.ts', from: 5, to: 9, text: true }]],
    ["sed -n '100,$p' a.py | head -n 10", [{ path: 'a.py', from: 100, to: 109, text: true }]],
    ['head -n 30 x.py', [{ path: 'x.py', from: 1, to: 30, text: true }]],
    ['tail -5 log.txt', [{ path: 'log.txt', partial: true, text: true }]],
    ['cat a.ts 2>/dev/null', [{ path: 'a.ts', text: true }]],
    ['cat a.ts | grep foo', [{ path: 'a.ts', text: false }]],
    ['cat a.ts > b.ts', [{ path: 'a.ts', text: false }]],
    ['test -f a.ts && cat a.ts || true', [{ path: 'a.ts', text: true }]],
    ['jq . a.json || cat a.json', [{ path: 'a.json', text: false, mixed: true }]],
    ['cat a.ts; echo ---; ls src', [{ path: 'a.ts', text: true, mixed: true }]],
    [
      "cd /r && sed -n '1,9p' a.ts && printf '\\n--\\n' && cat b.ts",
      [
        { path: 'a.ts', cwd: '/r', from: 1, to: 9, text: true, mixed: true },
        { path: 'b.ts', cwd: '/r', text: true, mixed: true },
      ],
    ],
    ["(cd sub && cat 'my file.md')", [{ path: 'my file.md', cwd: 'sub', text: true }]],
    ['cat src/*.ts', []],
    ["sed -i 's/a/b/' a.ts", []],
    ['cat > a.ts <<EOF\nx\nEOF', []],
    ['grep -n foo src/a.ts', []],
  ])('%s', (command, want) => {
    expect(shellReads(command)).toEqual(want);
  });

  it('a read tool names the lines its arguments ask for; a failed read shows nothing', () => {
    const call = (name: string, args: unknown): ToolCallPart => ({
      type: 'tool-call',
      id: `x${name}`,
      name,
      arguments: args,
    });
    expect(fileReads(call('read', { path: 'a.ts', offset: 20, limit: 60 }))).toEqual([
      { path: 'a.ts', from: 20, to: 79 },
    ]);
    expect(fileReads(call('Read', { file_path: '/r/a.ts' }))).toEqual([{ path: '/r/a.ts' }]);
    expect(fileReads(call('str_replace_editor', { command: 'view', path: '/r/a.ts', view_range: [5, -1] }))).toEqual([
      { path: '/r/a.ts', from: 5 },
    ]);
    expect(fileReads(call('bash', { command: 'open a.py 120' }))).toEqual([{ path: 'a.py', partial: true }]);
    const failed: ToolResultPart = { type: 'tool-result', callId: 'xRead', content: [], isError: true };
    expect(fileReads(call('Read', { file_path: '/r/a.ts' }), failed)).toEqual([]);
    // A command of Codex's that cd's first is a read of the file it prints (it used to name nothing read).
    expect(callInfo(call('exec_command', { cmd: "cd /r && sed -n '1,50p' src/a.ts" })).reads).toEqual(['src/a.ts']);
  });

  it('changes whole enough to apply: edit pairs, patch hunks, SWE-agent line edits, whole writes', () => {
    const call = (name: string, args: unknown): ToolCallPart => ({
      type: 'tool-call',
      id: `y${name}`,
      name,
      arguments: args,
    });
    expect(textChanges(call('Edit', { file_path: 'a.ts', old_string: 'x = 1', new_string: 'x = 2' }))).toEqual([
      { path: 'a.ts', how: 'replace', old: 'x = 1', new: 'x = 2' },
    ]);
    expect(
      textChanges(call('apply_patch', '*** Begin Patch\n*** Update File: a.ts\n@@\n keep\n-old\n+new\n*** End Patch')),
    ).toEqual([{ path: 'a.ts', how: 'replace', old: 'keep\nold', new: 'keep\nnew' }]);
    expect(textChanges(call('write', { path: 'b.md', content: '# B\n' }))).toEqual([
      { path: 'b.md', how: 'write', text: '# B\n' },
    ]);
    const swe: ToolResultPart = {
      type: 'tool-result',
      callId: 'ybash',
      content: [{ type: 'text', text: '[File: /r/c.py (3 lines total)]\n1:a' }],
      isError: false,
    };
    expect(textChanges(call('bash', { command: 'edit 2:2\nB\nend_of_edit' }), swe)).toEqual([
      { path: '/r/c.py', how: 'lines', from: 2, to: 2, text: 'B' },
    ]);
  });
});
