/**
 * Entry of reconcile-pool's V8 startup snapshot (scripts/snapshot.ts). Run once at build time by
 * `node --build-snapshot`: every module is evaluated — zod's schemas built, the hono app's code
 * loaded, the YAML parser ready for a kubeconfig — and the heap is saved. A start with
 * `node --snapshot-blob dist/reconcile-pool.blob` resumes from that heap and runs only what follows:
 * credentials, the server, the first event.
 * @module
 */
import { startupSnapshot } from 'node:v8';
// Evaluated into the snapshot: a kubeconfig file is parsed with it at every start.
import 'yaml';
import { runFunction } from '../../shared/runtime/index.js';
import { buildReconcileApp } from './app.js';

startupSnapshot.setDeserializeMainFunction(() => {
  void runFunction('reconcile-pool', buildReconcileApp);
});
