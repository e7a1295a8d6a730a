/**
 * `npm run test:chaos`: the full chaos suite (≥ 1000 delivery trials, every crash point, API faults,
 * hostile input, security review) against one real control plane. `VMPOOL_CHAOS_TRIALS` and
 * `VMPOOL_CHAOS_SEED` override the size and the seed.
 */
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  root: fileURLToPath(new URL('../..', import.meta.url)),
  test: {
    name: 'chaos',
    environment: 'node',
    include: ['test/chaos/**/*.test.ts'],
    globalSetup: ['test/e2e/global-setup.ts'],
    testTimeout: 1_800_000,
    hookTimeout: 300_000,
    fileParallelism: false,
    restoreMocks: true,
    unstubEnvs: true,
  },
});
