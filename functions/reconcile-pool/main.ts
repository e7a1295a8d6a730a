/** Entry point of the reconcile-pool function. */
import { runFunction } from '../../shared/runtime/index.js';
import { buildReconcileApp } from './app.js';

void runFunction('reconcile-pool', buildReconcileApp);
