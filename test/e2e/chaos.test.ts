/**
 * The short chaos run inside `npm test`: every part of `npm run test:chaos` (test/chaos/suite.ts) at
 * a size that fits the e2e budget.
 */
import { chaosSuite } from '../chaos/suite.js';

chaosSuite({
  trials: 60,
  crashStride: 4,
  faultTrials: 12,
  fuzzRuns: 100,
  runawayTrials: 3,
  raceTrials: 4,
  claimTrials: 3,
});
