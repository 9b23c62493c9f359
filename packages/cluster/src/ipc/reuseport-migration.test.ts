import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { reusePortMigration } from './reuseport-migration.js';

describe('reusePortMigration', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'proxyd-migrate-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reads net.ipv4.tcp_migrate_req: 0 is off, 1 is on, no file is unknown', () => {
    const file = path.join(dir, 'tcp_migrate_req');
    writeFileSync(file, '0\n');
    expect(reusePortMigration(file)).toBe('off');
    writeFileSync(file, '1\n');
    expect(reusePortMigration(file)).toBe('on');
    expect(reusePortMigration(path.join(dir, 'missing'))).toBe('unknown');
  });
});
