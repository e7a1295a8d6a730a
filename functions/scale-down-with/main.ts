/**
 * Entry point of scale-down-with: the aggregated API (HTTPS with TLS_CERT_FILE, TLS_KEY_FILE on
 * PORT) and, with SCALEDOWNWITH_EVENTS=enabled, the authenticated CloudEvent form on EVENTS_PORT
 * (default 8080; HTTPS too with EVENTS_TLS=enabled): the delivery's token must be issued for
 * EVENTS_AUDIENCE, the sender's own (in the event) for EVENTS_SENDER_AUDIENCE.
 */
import { runFunction, startFunction } from '../../shared/runtime/index.js';
import { buildScaleDownApp } from './app.js';
import {
  DEFAULT_EVENTS_AUDIENCE,
  DEFAULT_SENDER_AUDIENCE,
  buildScaleDownEventsApp,
} from './events.js';

// The environment is read at the start: a snapshot is built by one process and resumed by another.
startFunction(() => {
  const env = process.env;
  const group = env.SCALEDOWNWITH_GROUP;
  void runFunction(
    'scale-down-with',
    // Unset or empty: the reference's group (knative/overlays/own-group sets vmpool's own).
    (deps) => buildScaleDownApp({ ...deps, ...(group ? { group } : {}) }),
    { ...env, requestClientCert: true },
  );
  if (env.SCALEDOWNWITH_EVENTS === 'enabled') {
    const audience = env.EVENTS_AUDIENCE ?? DEFAULT_EVENTS_AUDIENCE;
    const senderAudience = env.EVENTS_SENDER_AUDIENCE ?? DEFAULT_SENDER_AUDIENCE;
    const tls =
      env.EVENTS_TLS === 'enabled'
        ? { TLS_CERT_FILE: env.TLS_CERT_FILE, TLS_KEY_FILE: env.TLS_KEY_FILE }
        : {};
    void runFunction(
      'scale-down-with-events',
      (deps) => buildScaleDownEventsApp({ ...deps, audience, senderAudience }),
      {
        PORT: env.EVENTS_PORT ?? '8080',
        ...tls,
      },
    );
  }
});
