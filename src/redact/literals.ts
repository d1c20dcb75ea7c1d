/**
 * Which of a set of literals occur in a text, in one pass: what findSecrets asks before it runs a rule (a rule whose
 * head, or all of whose hints, are absent cannot match). A regex alternation of the ~80 issuers' heads, and one
 * `includes` per hint, each read the whole text again and took most of the scan (two thirds of `export`'s redaction).
 *
 * The pass reads each position once: the pair of characters there picks, through a hash table, the few literals that
 * start with that pair, which are then compared. Literals of one character are looked up with `includes`.
 */
export class LiteralScanner {
  readonly literals: readonly string[];
  /** Pair hash → bucket number + 1 (0: no literal starts with a pair of that hash). */
  private readonly table = new Int32Array(TABLE_SIZE);
  /** Per bucket, the indexes (into `literals`) of the literals starting with a pair of its hash. */
  private readonly buckets: number[][] = [];
  private readonly singles: number[] = [];
  private readonly pairs: number;

  constructor(literals: Iterable<string>) {
    this.literals = [...new Set(literals)].filter((l) => l.length > 0);
    this.literals.forEach((lit, i) => {
      if (lit.length === 1) {
        this.singles.push(i);
        return;
      }
      const h = pairHash(lit.charCodeAt(0), lit.charCodeAt(1));
      let b = this.table[h]!;
      if (b === 0) {
        this.buckets.push([]);
        b = this.table[h] = this.buckets.length;
      }
      this.buckets[b - 1]!.push(i);
    });
    this.pairs = this.literals.length - this.singles.length;
  }

  /** The literals that occur in `text` (anywhere, overlapping ones too). */
  present(text: string): Set<string> {
    const out = new Set<string>();
    const lits = this.literals;
    for (const i of this.singles) if (text.includes(lits[i]!)) out.add(lits[i]!);
    if (this.pairs === 0) return out;
    // Per call: which literals were found, and how many of each bucket are still to find (a bucket whose literals are
    // all found is skipped: a common pair such as "do" then costs one lookup per occurrence).
    const found = new Uint8Array(lits.length);
    const left = this.buckets.map((b) => b.length);
    let missing = this.pairs;
    const table = this.table;
    const n = text.length;
    let prev = n > 0 ? text.charCodeAt(0) : 0;
    for (let i = 0; i + 1 < n; i++) {
      const c = text.charCodeAt(i + 1);
      const b = table[pairHash(prev, c)]!;
      prev = c;
      if (b === 0 || left[b - 1] === 0) continue;
      for (const li of this.buckets[b - 1]!) {
        if (found[li] === 1) continue;
        const lit = lits[li]!;
        if (text.startsWith(lit, i)) {
          found[li] = 1;
          left[b - 1]!--;
          out.add(lit);
          if (--missing === 0) return out;
        }
      }
    }
    return out;
  }
}

const TABLE_BITS = 16;
const TABLE_SIZE = 1 << TABLE_BITS;

function pairHash(a: number, b: number): number {
  return (Math.imul(a, 0x9e37) ^ b) & (TABLE_SIZE - 1);
}
