/** Entry point of the scale-validate webhook (HTTPS: set TLS_CERT_FILE and TLS_KEY_FILE). */
import { runFunction } from '../../shared/runtime/index.js';
import { buildValidateApp } from './app.js';

void runFunction('scale-validate', buildValidateApp);
