import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { format } from '@proxyd/proxyfile';
import { describe, expect, it } from 'vitest';
import { unifiedDiff } from './fmt.js';

describe('fmt --diff: the unified diff', () => {
  it('is empty for equal texts', async () => {
    expect(await unifiedDiff('Proxyfile', 'a\n', 'a\n')).toBe('');
  });

  it('reads as diff -u prints it, and patch -p0 turns the file into its formatted form', async () => {
    const messy = 'a.test   {\n    reverse_proxy   127.0.0.1:9000\n}\n\n\n\nb.test {\nrespond "b"\n}';
    const formatted = format(messy);
    const diff = await unifiedDiff('Proxyfile', messy, formatted);
    expect(diff.split('\n').slice(0, 3)).toEqual(['--- Proxyfile', '+++ Proxyfile', '@@ -1,9 +1,7 @@']);
    expect(diff).toContain(
      '-a.test   {\n-    reverse_proxy   127.0.0.1:9000\n+a.test {\n+\treverse_proxy 127.0.0.1:9000\n }\n',
    );
    expect(diff).toContain('\\ No newline at end of file');

    const dir = mkdtempSync(path.join(tmpdir(), 'proxyd-fmt-diff-'));
    try {
      writeFileSync(path.join(dir, 'Proxyfile'), messy);
      execFileSync('patch', ['-s', '-p0'], { cwd: dir, input: diff });
      expect(readFileSync(path.join(dir, 'Proxyfile'), 'utf8')).toBe(formatted);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
