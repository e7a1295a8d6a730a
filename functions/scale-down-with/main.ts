/** Entry point of the scale-down-with aggregated API server (HTTPS: TLS_CERT_FILE, TLS_KEY_FILE). */
import { runFunction } from '../../shared/runtime/index.js';
import { buildScaleDownApp } from './app.js';

runFunction(
  'scale-down-with',
  (deps) =>
    buildScaleDownApp({
      ...deps,
      acceptEvents: process.env.SCALEDOWNWITH_EVENTS === 'enabled',
      // Empty means the reference's group (knative/overlays/own-group sets vmpool's own).
      ...(process.env.SCALEDOWNWITH_GROUP ? { group: process.env.SCALEDOWNWITH_GROUP } : {}),
    }),
  { ...process.env, requestClientCert: true },
);
