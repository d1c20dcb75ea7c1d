import { startFakeProvider } from './fake-provider.ts';
const fp = await startFakeProvider({
  window: 40_000,
  maxOutputTokens: 64_000,
  script: { toolTurns: 1000, marker: 'TASK-MARKER-42' },
});
console.log(fp.baseURL);
process.on('SIGTERM', async () => {
  const r = fp.requests;
  console.error(
    JSON.stringify({
      total: r.length,
      refused: r.filter((x) => x.refused).map((x) => x.refused),
      marker: r.filter((x) => !x.markerInSystem).length,
    }),
  );
  await fp.close();
  process.exit(0);
});
setInterval(() => {}, 1000);
