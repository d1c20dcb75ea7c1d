import { isLineTerminator, isSpace } from '../model/text.js';

/** A heredoc a command writes into a file: `cat > out <<'EOF'` … `EOF`. */
export interface Heredoc {
  /** `>` or `>>` before the target (`cat >> out <<EOF`). */
  redirect?: string;
  /** The word between `cat`/`tee` and `<<` (the target, when it is one). */
  target?: string;
  delimiter: string;
  /** `> out` after the delimiter (`cat <<EOF > out`), and its target. */
  after?: string;
  afterTarget?: string;
  body: string;
}

const isWord = (c: string | undefined) => c !== undefined && /\w/.test(c);

/**
 * The first heredoc of a command, exactly as the regular expression
 * `/(?:^|[;&|]\s*)(?:cat|tee)\s*(>>?)?\s*(\S+)?\s*<<-?\s*['"]?(\w+)['"]?\s*(>>?\s*(\S+))?\n([\s\S]*?)\n\s*\3\s*(?:\n|$)/m`
 * finds it (its groups are this object's fields), in time linear in the command. The expression itself is not: its
 * runs of `\s*` split a run of spaces between them in cubically many ways, and each `cat`/`tee` it tries searches the
 * rest of the command for the closing line. Here each piece is worked out once: the lines that could close a heredoc
 * (indexed by their word), which `<<` can open one (and where its body starts), and for each `cat`/`tee` in order, the
 * `<<` the expression would reach first.
 */
export function firstHeredoc(cmd: string): Heredoc | undefined {
  if (!cmd.includes('<<')) return undefined;
  const n = cmd.length;
  // End of the run of spaces, and of the run of non-spaces, from each position.
  const spaceEnd = new Int32Array(n + 1);
  const solidEnd = new Int32Array(n + 1);
  spaceEnd[n] = n;
  solidEnd[n] = n;
  for (let i = n - 1; i >= 0; i--) {
    const sp = isSpace(cmd[i]!);
    spaceEnd[i] = sp ? spaceEnd[i + 1]! : i;
    solidEnd[i] = sp ? i : solidEnd[i + 1]!;
  }
  const wordEnd = (i: number) => {
    let j = i;
    while (j < n && isWord(cmd[j])) j++;
    return j;
  };

  // Closing lines: a `\n`, spaces, the word, then spaces that end the text or hold a line break. By word, in order.
  const closers = new Map<string, number[]>();
  let lastStart = -1;
  let lastKey: string | undefined;
  for (let p = cmd.indexOf('\n'); p !== -1; p = cmd.indexOf('\n', p + 1)) {
    const e = spaceEnd[p + 1]!;
    if (e !== lastStart) {
      lastStart = e;
      lastKey = undefined;
      const f = wordEnd(e);
      if (f > e) {
        const g = spaceEnd[f]!;
        let breaks = g === n;
        for (let i = f; i < g && !breaks; i++) breaks = isLineTerminator(cmd[i]!);
        if (breaks) lastKey = cmd.slice(e, f);
      }
    }
    if (lastKey !== undefined) {
      const list = closers.get(lastKey);
      if (list) list.push(p);
      else closers.set(lastKey, [p]);
    }
  }
  const firstCloser = (word: string, from: number) => {
    const list = closers.get(word);
    if (!list) return -1;
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (list[mid]! < from) lo = mid + 1;
      else hi = mid;
    }
    return lo < list.length ? list[lo]! : -1;
  };

  // What each `<<` opens, if anything: its delimiter, the redirection after it, and its body.
  type Opened = Pick<Heredoc, 'delimiter' | 'after' | 'afterTarget' | 'body'>;
  const opened = (r: number): Opened | undefined => {
    let i = r + 2;
    if (cmd[i] === '-') i++;
    i = spaceEnd[i]!;
    if (cmd[i] === '"' || cmd[i] === "'") i++;
    const f = wordEnd(i);
    if (f === i) return undefined;
    const delimiter = cmd.slice(i, f);
    let a = f;
    if (cmd[a] === '"' || cmd[a] === "'") a++;
    const w = spaceEnd[a]!;
    const bodyFrom = (b: number) => {
      const p = firstCloser(delimiter, b);
      return p === -1 ? undefined : cmd.slice(b, p);
    };
    // The longest run of spaces first, then a redirection after it; then each line break of the run, the last first.
    for (const len of cmd.startsWith('>>', w) ? [2, 1] : cmd[w] === '>' ? [1] : []) {
      // `>>? \s* (\S+) \n`: the spaces whole, the word whole (the expression can split them no other way).
      const x = spaceEnd[w + len]!;
      const y = solidEnd[x]!;
      if (y === x || cmd[y] !== '\n') continue;
      const body = bodyFrom(y + 1);
      if (body !== undefined) return { delimiter, after: cmd.slice(w, y), afterTarget: cmd.slice(x, y), body };
    }
    for (let q = w - 1; q >= a; q--) {
      if (cmd[q] !== '\n') continue;
      const body = bodyFrom(q + 1);
      if (body !== undefined) return { delimiter, body };
    }
    return undefined;
  };
  const opens: number[] = [];
  const openedAt = new Map<number, Opened>();
  for (let r = cmd.indexOf('<<'); r !== -1; r = cmd.indexOf('<<', r + 1)) {
    const o = opened(r);
    if (o) {
      opens.push(r);
      openedAt.set(r, o);
    }
  }
  if (opens.length === 0) return undefined;
  /** The last `<<` that opens a heredoc in [from, to], or -1. */
  const lastOpenIn = (from: number, to: number) => {
    let lo = 0;
    let hi = opens.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (opens[mid]! <= to) lo = mid + 1;
      else hi = mid;
    }
    return lo > 0 && opens[lo - 1]! >= from ? opens[lo - 1]! : -1;
  };

  // Each `cat`/`tee` that starts a line or follows `;`, `&` or `|` (and spaces), in order; the first that reaches a
  // `<<` that opens a heredoc, in the order the expression tries them, wins.
  for (let h = 0; h + 3 <= n; h++) {
    const c = cmd[h];
    if (c !== 'c' && c !== 't') continue;
    const verb = cmd.slice(h, h + 3);
    if (verb !== 'cat' && verb !== 'tee') continue;
    if (h > 0 && !isLineTerminator(cmd[h - 1]!)) {
      let j = h;
      while (j > 0 && isSpace(cmd[j - 1]!)) j--;
      if (j === 0 || !';&|'.includes(cmd[j - 1]!)) continue;
    }
    const p1 = spaceEnd[h + 3]!;
    const redirects: (string | undefined)[] = [];
    if (cmd.startsWith('>>', p1)) redirects.push('>>');
    if (cmd[p1] === '>') redirects.push('>');
    redirects.push(undefined);
    for (const redirect of redirects) {
      const p2 = redirect ? spaceEnd[p1 + redirect.length]! : p1;
      const e = solidEnd[p2]!;
      const found = (r: number, target: string | undefined): Heredoc | undefined => {
        const o = openedAt.get(r);
        if (!o) return undefined;
        return {
          ...(redirect ? { redirect } : {}),
          ...(target !== undefined ? { target } : {}),
          ...o,
        };
      };
      if (e > p2) {
        // The word whole, spaces, then `<<`; then the word cut before each `<<` inside it, the last first.
        const after = spaceEnd[e]!;
        const whole = cmd.startsWith('<<', after) ? found(after, cmd.slice(p2, e)) : undefined;
        if (whole) return whole;
        const inside = lastOpenIn(p2 + 1, e - 2);
        if (inside !== -1) return found(inside, cmd.slice(p2, inside));
      }
      const bare = cmd.startsWith('<<', p2) ? found(p2, undefined) : undefined;
      if (bare) return bare;
    }
  }
  return undefined;
}
