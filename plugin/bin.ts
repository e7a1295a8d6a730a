/** The executable `kubectl-vmpool` (bundled by `npm run build` into dist/kubectl-vmpool.mjs). */
import { run } from './main.js';
import { quietOnClosedPipe } from './pipe.js';

const err = (l: string): void => {
  process.stderr.write(`${l}\n`);
};
quietOnClosedPipe(process.stdout, (code) => process.exit(code), err);
void run(process.argv.slice(2), (l) => process.stdout.write(`${l}\n`), err).then((code) => {
  process.exitCode = code;
});
