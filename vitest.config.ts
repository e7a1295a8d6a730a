import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    environment: 'node',
    restoreMocks: true,
    passWithNoTests: true,
    unstubEnvs: true,
    coverage: {
      provider: 'v8',
      include: ['shared/domain/**/*.ts'],
      exclude: ['**/*.test.ts'],
      reporter: ['text-summary', 'text'],
      thresholds: { lines: 95 },
    },
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: [
            'shared/**/*.test.ts',
            'test/unit/**/*.test.ts',
            'plugin/**/*.test.ts',
            'local/**/*.test.ts',
          ],
        },
      },
      {
        extends: true,
        test: {
          name: 'functions',
          include: ['functions/**/*.test.ts', 'test/functions/**/*.test.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          globalSetup: ['test/e2e/global-setup.ts'],
          // After the unit and function projects, not beside them: on a 2-core machine their CPU
          // stretched e2e deadlines (a webhook answer due at 6 s came after kube-apiserver's 10 s).
          sequence: { groupOrder: 1 },
          testTimeout: 120_000,
          hookTimeout: 300_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
