import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The repository root. */
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * The end-to-end files that treat the daemon as a black box through
 * `startProxyd` only, run again against an installed `proxyd`
 * (`PROXYD_BIN`): routing and forwarding (cache, health, WebSocket), the
 * Proxyfile's site directives, the admin API through the client generated
 * from its OpenAPI document (routes, snapshot, purge, reload, analytics,
 * certificates), the analytics script in Chromium, worker processes, HTTPS
 * from manual files, the local CA and ACME (pebble). Together ~55 s.
 */
export const CONFORMANCE_FILES = [
  'tests-e2e/skeleton.test.ts',
  'tests-e2e/data-plane-proxy.test.ts',
  'tests-e2e/site-directives.test.ts',
  'tests-e2e/admin-openapi-client.test.ts',
  'tests-e2e/analytics-browser.test.ts',
  'tests-e2e/workers.test.ts',
  'tests-e2e/data-plane-https.test.ts',
  'tests-e2e/automatic-https.test.ts',
];

/** What a conformance run reports: files and tests by state, and the failures' messages. */
export interface ConformanceResult {
  files: string[];
  passed: number;
  failed: number;
  skipped: number;
  failures: string[];
}

interface JsonReport {
  numPassedTests: number;
  numFailedTests: number;
  numPendingTests: number;
  numTodoTests: number;
  testResults: Array<{
    name: string;
    message?: string;
    assertionResults: Array<{ fullName: string; status: string; failureMessages: string[] }>;
  }>;
}

/**
 * Runs {@link CONFORMANCE_FILES} in a child Vitest (the e2e project, the
 * JSON reporter) with `PROXYD_BIN=bin`, so every daemon they start is that
 * executable. Bounded by `timeoutMs`.
 */
export async function runConformance(bin: string, timeoutMs = 300_000): Promise<ConformanceResult> {
  const dir = await mkdtemp(path.join(tmpdir(), 'proxyd-conformance-'));
  const report = path.join(dir, 'report.json');
  try {
    await run(
      process.execPath,
      [
        path.join(ROOT, 'node_modules/vitest/vitest.mjs'),
        'run',
        '--project',
        'e2e',
        '--reporter=json',
        `--outputFile=${report}`,
        ...CONFORMANCE_FILES,
      ],
      {
        cwd: ROOT,
        env: { ...process.env, PROXYD_BIN: bin },
        timeout: timeoutMs,
        maxBuffer: 64 * 1024 * 1024,
      },
    ).catch((err: Error & { stdout?: string; stderr?: string }) => {
      // Failing tests exit 1 with a report to read; no report means the run itself failed.
      return readFile(report).catch(() => {
        throw new Error(`conformance run failed: ${err.message}\n${err.stderr ?? ''}`);
      });
    });
    const json = JSON.parse(await readFile(report, 'utf8')) as JsonReport;
    return {
      files: json.testResults.map((r) => path.relative(ROOT, r.name)).sort(),
      passed: json.numPassedTests,
      failed: json.numFailedTests,
      skipped: json.numPendingTests + json.numTodoTests,
      failures: json.testResults.flatMap((r) => [
        ...(r.message ? [`${path.relative(ROOT, r.name)}: ${r.message}`] : []),
        ...r.assertionResults
          .filter((a) => a.status === 'failed')
          .map((a) => `${a.fullName}: ${a.failureMessages.join('\n')}`),
      ]),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
