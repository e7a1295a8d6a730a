/**
 * Pool manifests from the user guide (seed 001), as the documentation prints them, plus helpers to
 * derive invalid variants. The CRD must accept every documented example.
 * @module
 */

/** The `runners` pool of the user guide, verbatim except namespace (tests choose their own). */
export function runnersPool(namespace: string, name = 'runners') {
  return {
    kind: 'VirtualMachinePool',
    metadata: { name, namespace },
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

/** The user guide's pool with 1Gi disks (sizes do not matter here and keep the plane light). */
export function smallPool(
  namespace: string,
  name: string,
  edit: (p: ReturnType<typeof runnersPool>) => void = () => undefined,
): ReturnType<typeof runnersPool> {
  const p = runnersPool(namespace, name);
  for (const t of p.spec.virtualDiskTemplates) t.spec.persistentVolumeClaim.size = '1Gi';
  edit(p);
  return p;
}

/** The "shared CD-ROM" example: one per-replica disk and a ClusterVirtualImage for everyone. */
export function cdromPool(namespace: string, name = 'cdrom') {
  return {
    kind: 'VirtualMachinePool',
    metadata: { name, namespace },
    spec: {
      replicas: 1,
      scaleDownPolicy: 'OldestFirst',
      virtualMachineTemplate: {
        spec: {
          blockDeviceRefs: [
            { kind: 'VirtualDisk', name: 'root' },
            { kind: 'ClusterVirtualImage', name: 'tools-iso' },
          ],
        },
      },
      virtualDiskTemplates: [
        {
          name: 'root',
          spec: {
            persistentVolumeClaim: { size: '30Gi' },
            dataSource: {
              type: 'ObjectRef',
              objectRef: { kind: 'ClusterVirtualImage', name: 'ubuntu' },
            },
          },
        },
      ],
    },
  };
}

/** The three reclaim examples (ephemeral root, warm cache, unlimited data) in one pool. */
export function reclaimPool(namespace: string, name = 'reclaim') {
  return {
    kind: 'VirtualMachinePool',
    metadata: { name, namespace },
    spec: {
      replicas: 0,
      scaleDownPolicy: 'Explicit',
      virtualMachineTemplate: {
        spec: {
          blockDeviceRefs: ['root', 'cache', 'data'].map((n) => ({ kind: 'VirtualDisk', name: n })),
        },
      },
      virtualDiskTemplates: [
        {
          name: 'root',
          spec: {
            persistentVolumeClaim: { size: '30Gi' },
            dataSource: { type: 'ObjectRef', objectRef: { kind: 'VirtualImage', name: 'ubuntu' } },
          },
        },
        {
          name: 'cache',
          reclaim: { onScaleDown: 'Retain', keep: 3, ttl: '1h' },
          spec: { persistentVolumeClaim: { size: '100Gi' } },
        },
        {
          name: 'data',
          reclaim: { onScaleDown: 'Retain' },
          spec: { persistentVolumeClaim: { size: '20Gi' } },
        },
      ],
    },
  };
}

/**
 * Every pool example of the user guide as a user applies it to a cluster. The runners pool is a full
 * manifest and stays verbatim; the CD-ROM and reclaim examples are fragments the guide shows to be
 * put into such a pool, so they get the runners template's class, CPU and memory, which the
 * platform's VirtualMachine API requires and the fragments leave out.
 */
export function guidePools(namespace: string) {
  const full = runnersPool(namespace).spec.virtualMachineTemplate.spec;
  const complete = (p: ReturnType<typeof cdromPool> | ReturnType<typeof reclaimPool>) => ({
    ...p,
    spec: {
      ...p.spec,
      virtualMachineTemplate: {
        spec: {
          virtualMachineClassName: full.virtualMachineClassName,
          cpu: full.cpu,
          memory: full.memory,
          ...p.spec.virtualMachineTemplate.spec,
        },
      },
    },
  });
  return [runnersPool(namespace), complete(cdromPool(namespace)), complete(reclaimPool(namespace))];
}

/** A VirtualMachine as a pool would stamp it from the runners template (disk names resolved). */
export function runnersVm(namespace: string, name: string) {
  const spec = structuredClone(runnersPool(namespace).spec.virtualMachineTemplate.spec);
  spec.blockDeviceRefs = spec.blockDeviceRefs.map((r) =>
    r.kind === 'VirtualDisk' ? { ...r, name: `${name}-${r.name}` } : r,
  );
  return { kind: 'VirtualMachine', metadata: { name, namespace }, spec };
}
