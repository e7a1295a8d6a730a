/** The executable `kubectl-vmpool` (bundled by `npm run build` into dist/kubectl-vmpool.mjs). */
import { run } from './main.js';

void run(
  process.argv.slice(2),
  (l) => process.stdout.write(`${l}\n`),
  (l) => process.stderr.write(`${l}\n`),
).then((code) => {
  process.exitCode = code;
});
