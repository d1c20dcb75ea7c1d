// Preloaded (node --require) by tests that need a full disk: the folder named by ABRIDGE_TEST_FULL_DIR fills up once
// ABRIDGE_TEST_FULL_AFTER files were created in it — every later open(O_CREAT) there fails with ENOSPC, as on a full
// file system. Patches node:fs/promises and fs.openSync (their ESM bindings synced), before the CLI loads.
const fs = require('node:fs');
const fsp = require('node:fs/promises');
const { syncBuiltinESMExports } = require('node:module');

const dir = process.env.ABRIDGE_TEST_FULL_DIR;
let left = Number(process.env.ABRIDGE_TEST_FULL_AFTER ?? 0);
const open = fsp.open;
fsp.open = function (path, flags, ...rest) {
  if (dir && String(path).startsWith(dir) && typeof flags === 'number' && flags & fs.constants.O_CREAT && left-- <= 0)
    return Promise.reject(
      Object.assign(new Error(`ENOSPC: no space left on device, open '${path}'`), {
        code: 'ENOSPC',
        errno: -28,
        syscall: 'open',
        path: String(path),
      }),
    );
  return open.call(this, path, flags, ...rest);
};
// A batch of results is written with synchronous calls: openSync fills up the same way.
const openSync = fs.openSync;
fs.openSync = function (path, flags, ...rest) {
  if (dir && String(path).startsWith(dir) && typeof flags === 'number' && flags & fs.constants.O_CREAT && left-- <= 0)
    throw Object.assign(new Error(`ENOSPC: no space left on device, open '${path}'`), {
      code: 'ENOSPC',
      errno: -28,
      syscall: 'open',
      path: String(path),
    });
  return openSync.call(this, path, flags, ...rest);
};
syncBuiltinESMExports();
