import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { readBuildInfo, versionLine } from './version.js';

const runtime = { node: 'v24.1.0', platform: 'linux', arch: 'x64' };
const commit = '0123456789abcdef0123456789abcdef01234567';

describe('proxyd version', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'proxyd-version-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, text: string) => {
    writeFileSync(path.join(dir, name), text);
    return pathToFileURL(path.join(dir, name));
  };

  it('one line: version, 12-digit commit (+dirty), build time, Node.js, platform', () => {
    expect(versionLine('1.2.3', { commit, dirty: false, built: '2026-01-02T03:04:05Z' }, runtime)).toBe(
      'v1.2.3 commit 0123456789ab built 2026-01-02T03:04:05Z node v24.1.0 linux/x64',
    );
    expect(versionLine('1.2.3', { commit, dirty: true, built: null }, runtime)).toBe(
      'v1.2.3 commit 0123456789ab+dirty node v24.1.0 linux/x64',
    );
    expect(versionLine('1.2.3', { commit: null, dirty: null, built: null }, runtime)).toBe(
      'v1.2.3 commit unknown node v24.1.0 linux/x64',
    );
  });

  it('reads the build info the build wrote, and nothing it cannot trust', () => {
    expect(readBuildInfo(file('ok.json', JSON.stringify({ commit, dirty: true, built: 'B' })))).toEqual({
      commit,
      dirty: true,
      built: 'B',
    });
    expect(readBuildInfo(file('odd.json', JSON.stringify({ commit: 'main', dirty: 'yes', built: 7 })))).toEqual({
      commit: null,
      dirty: null,
      built: null,
    });
    expect(readBuildInfo(file('bad.json', '{'))).toEqual({ commit: null, dirty: null, built: null });
    expect(readBuildInfo(pathToFileURL(path.join(dir, 'absent.json')))).toEqual({
      commit: null,
      dirty: null,
      built: null,
    });
  });
});
