/**
 * Discovery documents of the aggregated group, so the API server marks the APIService Available and
 * kubectl can find the subresource.
 * @module
 */
import { VERSION } from '../../shared/api/index.js';

/** The three discovery documents of `group` (the reference's, or vmpool's own). */
export function discovery(group: string) {
  const groupVersion = `${group}/${VERSION}`;
  /** `GET /apis/<group>/<version>`. */
  const resourceList = {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion,
    // The GET-only meta-resource `virtualmachinepools` is served but not advertised: listed here it
    // would share the CRD's names, and with the reference's APIService priority (1000, the CRDs' too)
    // the alphabetically first group wins, so kubectl would send `kubectl scale virtualmachinepool/x`
    // (and get, patch, edit) to this server instead of the CRD. Subresources are safe to list: kubectl
    // maps kinds and short names from top-level resources only.
    resources: [
      {
        name: 'virtualmachinepools/scaledownwith',
        singularName: '',
        namespaced: true,
        kind: 'VirtualMachinePoolScaleDownWith',
        verbs: ['create'],
      },
      {
        name: 'virtualmachinepools/victims',
        singularName: '',
        namespaced: true,
        kind: 'VirtualMachinePoolVictims',
        verbs: ['get'],
      },
    ],
  };
  /** `GET /apis/<group>`. */
  const apiGroup = {
    kind: 'APIGroup',
    apiVersion: 'v1',
    name: group,
    versions: [{ groupVersion, version: VERSION }],
    preferredVersion: { groupVersion, version: VERSION },
  };
  /** `GET /apis`. */
  const apiGroupList = { kind: 'APIGroupList', apiVersion: 'v1', groups: [apiGroup] };
  return { resourceList, apiGroup, apiGroupList };
}
