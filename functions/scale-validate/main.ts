/**
 * Entry point of the scale-validate webhook (HTTPS: set TLS_CERT_FILE and TLS_KEY_FILE).
 * SCALEDOWNWITH_USER names the one user that may add scaledownwith targets to a pool (unset: the
 * scale-down-with ServiceAccount of knative/base; `*`: any user, members are still checked).
 */
import { runFunction } from '../../shared/runtime/index.js';
import { buildValidateApp } from './app.js';

const recorder = process.env.SCALEDOWNWITH_USER;
void runFunction('scale-validate', (deps) =>
  buildValidateApp({ ...deps, ...(recorder === undefined ? {} : { recorder }) }),
);
