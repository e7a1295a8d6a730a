/** Entry point of the scale-down-with aggregated API server (HTTPS: TLS_CERT_FILE, TLS_KEY_FILE). */
import { runFunction } from '../../shared/runtime/index.js';
import { buildScaleDownApp } from './app.js';

runFunction('scale-down-with', buildScaleDownApp, { ...process.env, requestClientCert: true });
