/**
 * What the benches check with that is not public API (invariant diffs, turn units, the token family): loaded from
 * src/ through tsx, since the build bundles dist/ into one file per entry point. The public API comes from dist/.
 */
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tsImport } from 'tsx/esm/api';

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'src');

/** A module of src/ by its path there, e.g. `internal('compaction/turns.ts')`. */
export const internal = (path) => tsImport(join(SRC, path), import.meta.url);
