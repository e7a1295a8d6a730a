/** Entry point of the reconcile-pool function (its bundle and its startup snapshot). */
import { runFunction, startFunction } from '../../shared/runtime/index.js';
import { buildReconcileApp } from './app.js';

startFunction(() => runFunction('reconcile-pool', buildReconcileApp));
