/**
 * Which of a set of literals occur in a text, in one pass: what findSecrets asks before it runs a rule (a rule whose
 * head, or all of whose hints, are absent cannot match). A regex alternation of the ~80 issuers' heads, and one
 * `includes` per hint, each read the whole text again and took most of the scan (two thirds of `export`'s redaction).
 *
 * The pass reads each position once: the two and three characters there pick, through hash tables, the few literals
 * that start with them, which are then compared. Literals of one character are looked up with `includes`.
 */
export class LiteralScanner {
  readonly literals: readonly string[];
  /**
   * Two tables: literals of two characters by the hash of that pair, longer ones by the hash of their first three
   * (a pair such as "re" or "pa" starts a word every few characters; three characters rarely start a literal that is
   * not there). Hash → bucket number + 1 (0: none).
   */
  private readonly pairTable = new Int32Array(TABLE_SIZE);
  private readonly tripleTable = new Int32Array(TABLE_SIZE);
  /** Per bucket, the indexes (into `literals`) of the literals it holds. */
  private readonly buckets: number[][] = [];
  private readonly singles: number[] = [];
  private readonly multi: number;
  /** Per bucket, how many literals it holds (copied per call as what is still to find). */
  private readonly sizes: Int32Array;

  constructor(literals: Iterable<string>) {
    this.literals = [...new Set(literals)].filter((l) => l.length > 0);
    this.literals.forEach((lit, i) => {
      if (lit.length === 1) {
        this.singles.push(i);
        return;
      }
      const [table, h] =
        lit.length === 2
          ? [this.pairTable, pairHash(lit.charCodeAt(0), lit.charCodeAt(1))]
          : [this.tripleTable, tripleHash(lit.charCodeAt(0), lit.charCodeAt(1), lit.charCodeAt(2))];
      let b = table[h]!;
      if (b === 0) {
        this.buckets.push([]);
        b = table[h] = this.buckets.length;
      }
      this.buckets[b - 1]!.push(i);
    });
    this.multi = this.literals.length - this.singles.length;
    this.sizes = Int32Array.from(this.buckets, (b) => b.length);
  }

  /** The literals that occur in `text` (anywhere, overlapping ones too). */
  present(text: string): Set<string> {
    const out = new Set<string>();
    const lits = this.literals;
    for (const i of this.singles) if (text.includes(lits[i]!)) out.add(lits[i]!);
    if (this.multi === 0) return out;
    // Per call: which literals were found, and how many of each bucket are still to find (a bucket whose literals are
    // all found is skipped: a common start such as "do" then costs one lookup per occurrence).
    // Made at the first candidate: most short texts (a line, a message) have none, and this is per call.
    let found: Uint8Array | undefined;
    let left: Int32Array | undefined;
    let missing = this.multi;
    const pairs = this.pairTable;
    const triples = this.tripleTable;
    const n = text.length;
    if (n < 2) return out;
    let a = text.charCodeAt(0);
    let b = text.charCodeAt(1);
    for (let i = 0; i + 1 < n; i++) {
      const c = i + 2 < n ? text.charCodeAt(i + 2) : -1;
      const p = pairs[pairHash(a, b)]!;
      const t = c < 0 ? 0 : triples[tripleHash(a, b, c)]!;
      a = b;
      b = c;
      if (p === 0 && t === 0) continue;
      // The pair's bucket, then the triple's (no array per position).
      if (!found || !left) {
        found = new Uint8Array(lits.length);
        left = this.sizes.slice();
      }
      for (let k = p; k !== -1; k = k === t ? -1 : t) {
        if (k === 0 || left[k - 1] === 0) continue;
        for (const li of this.buckets[k - 1]!) {
          if (found[li] === 1) continue;
          const lit = lits[li]!;
          if (text.startsWith(lit, i)) {
            found[li] = 1;
            left[k - 1]!--;
            out.add(lit);
            if (--missing === 0) return out;
          }
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

function tripleHash(a: number, b: number, c: number): number {
  return (Math.imul(Math.imul(a, 0x9e37) ^ b, 0x85eb) ^ c) & (TABLE_SIZE - 1);
}
