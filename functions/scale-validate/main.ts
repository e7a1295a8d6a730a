/**
 * Entry point of the scale-validate webhook (HTTPS: set TLS_CERT_FILE and TLS_KEY_FILE). With
 * WEBHOOK_CLIENT_CA_FILE it serves only callers with a client certificate signed by that bundle (the
 * kube-apiserver, where its admission configuration gives it one), optionally only the common names
 * in WEBHOOK_CLIENT_NAMES (comma-separated). SCALEDOWNWITH_USER names the one user that may add
 * scaledownwith targets to a pool (unset: the scale-down-with ServiceAccount of knative/base; `*`:
 * any user, members are still checked). VMPOOL_MAX_REPLICAS caps `spec.replicas`.
 */
import { caFile } from '../../shared/http/client-ca.js';
import { runFunction, startFunction } from '../../shared/runtime/index.js';
import { buildValidateApp } from './app.js';

// The environment is read at the start: a snapshot is built by one process and resumed by another.
startFunction(() => {
  const env = process.env;
  const caPath = env.WEBHOOK_CLIENT_CA_FILE;
  const clientNames = (env.WEBHOOK_CLIENT_NAMES ?? '')
    .split(',')
    .map((n) => n.trim())
    .filter((n) => n !== '');
  const recorder = env.SCALEDOWNWITH_USER;
  void runFunction(
    'scale-validate',
    (deps) =>
      buildValidateApp({
        ...deps,
        ...(caPath ? { clientCa: caFile(caPath), clientNames } : {}),
        ...(recorder === undefined ? {} : { recorder }),
      }),
    { ...env, requestClientCert: Boolean(caPath) },
  );
});
