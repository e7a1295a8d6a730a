/** The full chaos suite (`npm run test:chaos`). */
import { chaosSuite } from './suite.js';

chaosSuite({
  trials: Number(process.env.VMPOOL_CHAOS_TRIALS ?? 1000),
  crashStride: 1,
  faultTrials: Number(process.env.VMPOOL_CHAOS_FAULT_TRIALS ?? 120),
  fuzzRuns: 1000,
  runawayTrials: Number(process.env.VMPOOL_CHAOS_RUNAWAY_TRIALS ?? 12),
  raceTrials: Number(process.env.VMPOOL_CHAOS_RACE_TRIALS ?? 16),
  claimTrials: Number(process.env.VMPOOL_CHAOS_CLAIM_TRIALS ?? 12),
});
