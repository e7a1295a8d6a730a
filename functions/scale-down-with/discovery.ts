/**
 * Discovery documents of the aggregated group, so the API server marks the APIService Available and
 * kubectl can find the subresource.
 * @module
 */
import { SUBRESOURCES_GROUP, VERSION } from '../../shared/api/index.js';

const groupVersion = `${SUBRESOURCES_GROUP}/${VERSION}`;

/** `GET /apis/<group>/<version>`. */
export const resourceList = {
  kind: 'APIResourceList',
  apiVersion: 'v1',
  groupVersion,
  resources: [
    {
      name: 'virtualmachinepools',
      singularName: 'virtualmachinepool',
      namespaced: true,
      kind: 'VirtualMachinePool',
      verbs: ['get'],
    },
    {
      name: 'virtualmachinepools/scaledownwith',
      singularName: '',
      namespaced: true,
      kind: 'VirtualMachinePoolScaleDownWith',
      verbs: ['create'],
    },
  ],
};

/** `GET /apis/<group>`. */
export const apiGroup = {
  kind: 'APIGroup',
  apiVersion: 'v1',
  name: SUBRESOURCES_GROUP,
  versions: [{ groupVersion, version: VERSION }],
  preferredVersion: { groupVersion, version: VERSION },
};

/** `GET /apis`. */
export const apiGroupList = { kind: 'APIGroupList', apiVersion: 'v1', groups: [apiGroup] };
