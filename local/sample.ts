/**
 * The sample pool of the user guide (`runners`), in its own namespace.
 * @module
 */
import { API_VERSION } from '../shared/api/index.js';
import { runnersPool } from './guide.js';

/** Namespace of the sample. */
export const SAMPLE_NAMESPACE = 'vmpool-demo';

/** The namespace and the user guide's example pool (verbatim but for its namespace), in apply order. */
export function sample(): object[] {
  return [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: SAMPLE_NAMESPACE } },
    { apiVersion: API_VERSION, ...runnersPool(SAMPLE_NAMESPACE) },
  ];
}
