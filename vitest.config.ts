import { defineConfig } from 'vitest/config';

// One runner for the whole repo, three projects:
// - unit: beside the code, from TypeScript sources (the `source` export
//   condition), the inner loop (`pnpm test:unit`);
// - stress: long fuzz and load runs (`*.stress.test.ts`), also from sources;
//   `pnpm test` (and so CI) runs them, `pnpm test:unit` does not;
// - e2e: the built daemon as a child process against real peers.
const fromSources = {
  resolve: { conditions: ['source'] },
  ssr: { resolve: { conditions: ['source'] } },
};
const packageTests = (suffix: string) => [`packages/*/src/**/*${suffix}`, `apps/*/src/**/*${suffix}`];

export default defineConfig({
  test: {
    reporters: ['default', './scripts/summary-reporter.ts'],
    projects: [
      {
        ...fromSources,
        test: {
          name: 'unit',
          include: packageTests('.test.ts'),
          // Test files share a worker's module cache: no unit test depends on
          // a fresh module (910 pass either way), and it saves ~20 s a run.
          isolate: false,
          exclude: ['**/node_modules/**', '**/*.stress.test.ts'],
          // The one build output unit tests use: the analytics browser bundle.
          globalSetup: ['./scripts/unit-global-setup.ts'],
          testTimeout: 30_000,
        },
      },
      {
        ...fromSources,
        test: {
          name: 'stress',
          include: packageTests('.stress.test.ts'),
          globalSetup: ['./scripts/unit-global-setup.ts'],
          testTimeout: 120_000,
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['tests-e2e/**/*.test.ts'],
          testTimeout: 120_000,
          // Hooks start daemons: startProxyd bounds a start by the CPU it uses (30 s), then by 300 s of wall
          // time, which a start of several daemons at nice 19 beside a CPU hog can come near.
          hookTimeout: 300_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
