/**
 * The sample pool of the user guide (`runners`), in its own namespace, with the images it references
 * so the platform simulator has something to point at.
 * @module
 */
import { API_VERSION } from '../../shared/api/index.js';

/** Namespace of the sample. */
export const SAMPLE_NAMESPACE = 'vmpool-demo';

/** The user guide's example pool, verbatim but for its namespace. */
export function samplePool(): object {
  return {
    apiVersion: API_VERSION,
    kind: 'VirtualMachinePool',
    metadata: { name: 'runners', namespace: SAMPLE_NAMESPACE },
    spec: {
      replicas: 3,
      scaleDownPolicy: 'NewestFirst',
      virtualMachineTemplate: {
        spec: {
          runPolicy: 'AlwaysOn',
          virtualMachineClassName: 'generic',
          cpu: { cores: 2 },
          memory: { size: '4Gi' },
          provisioning: {
            type: 'UserData',
            userData:
              '#cloud-config\nusers:\n  - name: cloud\n    sudo: ALL=(ALL) NOPASSWD:ALL\n    ssh_authorized_keys:\n      - <SSH_PUBLIC_KEY>\n',
          },
          blockDeviceRefs: [
            { kind: 'VirtualDisk', name: 'root' },
            { kind: 'VirtualDisk', name: 'cache' },
            { kind: 'ClusterVirtualImage', name: 'tools-iso' },
          ],
        },
      },
      virtualDiskTemplates: [
        {
          name: 'root',
          reclaim: { onScaleDown: 'Delete' },
          spec: {
            persistentVolumeClaim: { size: '30Gi' },
            dataSource: { type: 'ObjectRef', objectRef: { kind: 'VirtualImage', name: 'ubuntu' } },
          },
        },
        {
          name: 'cache',
          reclaim: { onScaleDown: 'Retain', keep: 5, ttl: '30m' },
          spec: { persistentVolumeClaim: { size: '50Gi' } },
        },
      ],
    },
  };
}

/** The namespace and the pool, in apply order. */
export function sample(): object[] {
  return [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: SAMPLE_NAMESPACE } },
    samplePool(),
  ];
}
