// A child process for the PostgreSQL store's concurrency tests (concurrency.test.ts). Runs the BUILT store (dist/), as
// another worker would. Not part of the package build (plain .mjs, only run by the tests).
//
//   node test-child.mjs append <sessionId> <writer> <count> plain|expected
//       appends <count> entries one by one (raw {w, i}); `expected`: with expectedVersion, re-reading the version and
//       retrying on CONFLICT. Prints one JSON line: {"writer", "appends", "conflicts", "ms"}.
//   node test-child.mjs append-together <sessionId> <writers> <tag>
//       <writers> async writers on one store, each appending one entry at a time (raw {p: tag, w, i}) until killed, printing
//       "ACK w i" once each append is acknowledged (the store commits the appends waiting together in one statement).
//   node test-child.mjs hold-compaction <sessionId> <number>
//       records a compaction whose transaction stops before COMMIT (beforeCommit hook), prints "HOLDING" and waits to
//       be killed.
//   node test-child.mjs compaction-loop <sessionId> <rounds>
//       appends two entries and records a compaction, <rounds> times (or until killed), printing "ROUND n" after each.
//
// Env: ABRIDGE_PG_URL, ABRIDGE_PG_SCHEMA, ABRIDGE_PG_MODULE (default: dist/store/postgres/index.js of this checkout).
import { pathToFileURL } from 'node:url';

const modulePath =
  process.env.ABRIDGE_PG_MODULE ?? new URL('../../../dist/store/postgres/index.js', import.meta.url).href;
const { openPostgresStore } = await import(
  modulePath.startsWith('file:') ? modulePath : pathToFileURL(modulePath).href
);

const [mode, sessionId, ...args] = process.argv.slice(2);
const url = process.env.ABRIDGE_PG_URL;
const schema = process.env.ABRIDGE_PG_SCHEMA;
if (!url || !schema || !sessionId) {
  console.error('usage: ABRIDGE_PG_URL=… ABRIDGE_PG_SCHEMA=… node test-child.mjs <mode> <sessionId> …');
  process.exit(2);
}

const say = (line) => new Promise((resolve) => process.stdout.write(`${line}\n`, resolve));

const message = (role, text) => ({ role, parts: [{ type: 'text', text }] });

function markerEntry(number, version) {
  const compaction = {
    number,
    summary: `summary ${number} at ${version}`,
    archived: { fromEntry: 0, toEntry: Math.max(0, version - 1) },
    source: 'abridge',
  };
  return {
    kind: 'compaction',
    compaction,
    message: message('user', compaction.summary),
    raw: { type: 'compaction', number },
  };
}

if (mode === 'append') {
  const [writerArg, countArg, how] = args;
  const writer = Number(writerArg);
  const count = Number(countArg);
  const store = await openPostgresStore(url, { schema, pool: { max: 1 } });
  const t0 = performance.now();
  let conflicts = 0;
  for (let i = 0; i < count; i++) {
    const entry = { kind: 'message', message: message('user', `w${writer} #${i}`), raw: { w: writer, i } };
    if (how === 'expected') {
      let version = (await store.getSession(sessionId)).version;
      for (;;) {
        try {
          await store.append(sessionId, [entry], { expectedVersion: version });
          break;
        } catch (err) {
          if (err?.code !== 'CONFLICT') throw err;
          conflicts++;
          version = (await store.getSession(sessionId)).version;
        }
      }
    } else {
      await store.append(sessionId, [entry]);
    }
  }
  const ms = performance.now() - t0;
  await store.close();
  await say(JSON.stringify({ writer, appends: count, conflicts, ms: Math.round(ms) }));
} else if (mode === 'append-together') {
  const writers = Number(args[0]);
  const p = args[1];
  const store = await openPostgresStore(url, { schema });
  await Promise.all(
    Array.from({ length: writers }, async (_, w) => {
      for (let i = 0; ; i++) {
        await store.append(sessionId, [
          { kind: 'message', message: message('user', `${p} w${w} #${i}`), raw: { p, w, i } },
        ]);
        await say(`ACK ${w} ${i}`);
      }
    }),
  );
} else if (mode === 'hold-compaction') {
  const number = Number(args[0]);
  const store = await openPostgresStore(url, {
    schema,
    hooks: {
      beforeCommit: async (op) => {
        if (op !== 'recordCompaction') return;
        await say('HOLDING');
        await new Promise(() => {}); // the transaction stays open until this process is killed
      },
    },
  });
  const { version } = await store.getSession(sessionId);
  const marker = markerEntry(number, version + 1);
  setInterval(() => {}, 1 << 30); // keep the event loop alive while the hook waits
  await store.recordCompaction(
    sessionId,
    [{ kind: 'message', message: message('assistant', 'before the marker') }, marker],
    {
      messages: [marker.message],
      marker: marker.compaction,
      tokens: 42,
    },
  );
  await say('COMMITTED'); // never reached
} else if (mode === 'compaction-loop') {
  const rounds = Number(args[0]);
  const store = await openPostgresStore(url, { schema, pool: { max: 1 } });
  for (let r = 0; r < rounds; r++) {
    await store.append(sessionId, [{ kind: 'message', message: message('user', `loop ${process.pid} round ${r}`) }]);
    for (;;) {
      const { version } = await store.getSession(sessionId);
      const number = (await store.latestSnapshot(sessionId))?.marker?.number ?? 0;
      const marker = markerEntry(number + 1, version + 2);
      try {
        await store.recordCompaction(
          sessionId,
          [{ kind: 'message', message: message('assistant', `reply ${process.pid} round ${r}`) }, marker],
          { messages: [marker.message], marker: marker.compaction, tokens: version },
          { expectedVersion: version },
        );
        break;
      } catch (err) {
        if (err?.code !== 'CONFLICT') throw err;
      }
    }
    await say(`ROUND ${r}`);
  }
  await store.close();
} else {
  console.error(`unknown mode ${mode}`);
  process.exit(2);
}
