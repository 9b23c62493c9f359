import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { checkLogFiles, logFileProblem } from './log-files.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'cli-log-files-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const site = (host: string, file: string | null) => ({
  addresses: [{ host }],
  log: file === null ? null : { output: { kind: 'file', path: file } },
});

describe('log files (proxyd validate)', () => {
  it('passes a file that exists, one that does not, and one whose directories do not exist yet', async () => {
    await writeFile(path.join(dir, 'here.log'), '');
    for (const f of ['here.log', 'new.log', 'a/b/c/new.log']) expect(logFileProblem(path.join(dir, f)), f).toBeNull();
  });

  it('names what stands in the way: a file where a directory should be, a directory where the file should be', async () => {
    await writeFile(path.join(dir, 'plain'), '');
    await mkdir(path.join(dir, 'folder.log'));
    expect(logFileProblem(path.join(dir, 'plain', 'x', 'a.log'))).toBe(
      `ENOTDIR: "${path.join(dir, 'plain')}" is not a directory`,
    );
    expect(logFileProblem(path.join(dir, 'folder.log'))).toBe('EISDIR: it is a directory');
  });

  it('reports each unusable file once, at the path on its output line, relative paths against cwd', async () => {
    await writeFile(path.join(dir, 'plain'), '');
    const text =
      'a.test {\n\tlog {\n\t\toutput file plain/a.log\n\t}\n}\nb.test {\n\tlog {\n\t\toutput file plain/a.log\n\t}\n}\nc.test {\n\tlog {\n\t\toutput file ok.log\n\t}\n}\n';
    const problems = checkLogFiles(
      [site('a.test', 'plain/a.log'), site('b.test', 'plain/a.log'), site('c.test', 'ok.log'), site('d.test', null)],
      new Map([['Proxyfile', text]]),
      dir,
    );
    expect(problems).toEqual([
      `Proxyfile:3:15: site "a.test": log file "plain/a.log" cannot be opened: ENOTDIR: "${path.join(dir, 'plain')}" is not a directory`,
    ]);
  });
});
