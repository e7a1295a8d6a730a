import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AWAITING_RESTART } from '../../shared/api/vm.js';
import { SIM_FINALIZER, startSimulator, type Simulator } from '../../local/simulator/simulator.js';
import {
  cluster,
  create,
  dropNamespace,
  eventually,
  newNamespace,
  read,
  type Obj,
} from './harness.js';
import { runnersVm } from '../../local/guide.js';

let ns = '';
let sim: Simulator;
const errors: unknown[] = [];

beforeAll(async () => {
  ns = await newNamespace('sim');
  sim = startSimulator({
    kubeconfigPath: cluster().info.kubeconfigPath,
    namespace: ns,
    seed: 42,
    onError: (e) => errors.push(e),
  });
});
afterAll(async () => {
  await sim.stop();
  expect(errors).toEqual([]);
  await dropNamespace(ns);
});

interface Status {
  phase?: string;
  capacity?: string;
  observedGeneration?: number;
  conditions?: { type: string; status: string; reason?: string }[];
}
const statusOf = (o: Obj | undefined) => (o?.status ?? {}) as Status;

async function phase(plural: string, name: string, want: string) {
  return eventually(`${plural}/${name} to reach ${want}`, async () => {
    const o = await read(plural, ns, name);
    return statusOf(o).phase === want ? o : undefined;
  });
}

function awaitingRestart(o: Obj | undefined) {
  return statusOf(o).conditions?.find((c) => c.type === AWAITING_RESTART);
}

describe('platform simulator', () => {
  it('makes a VirtualDisk Ready with its capacity', async () => {
    await create('virtualdisks', ns, {
      kind: 'VirtualDisk',
      metadata: { name: 'vm1-root', namespace: ns },
      spec: { persistentVolumeClaim: { size: '30Gi' } },
    });
    const disk = await phase('virtualdisks', 'vm1-root', 'Ready');
    expect(statusOf(disk).capacity).toBe('30Gi');
  });

  it('drives a VM to Running with observedGeneration and a cleanup finalizer', async () => {
    await create('virtualmachines', ns, runnersVm(ns, 'vm1'));
    const vm = await phase('virtualmachines', 'vm1', 'Running');
    expect(statusOf(vm).observedGeneration).toBe(vm.metadata.generation);
    expect(vm.metadata.finalizers).toContain(SIM_FINALIZER);
  });

  it('flags a restart-requiring change; Automatic approval restarts and clears it', async () => {
    const { kubectl } = cluster();
    await kubectl([
      'patch',
      '-n',
      ns,
      'vm/vm1',
      '--type=merge',
      '-p',
      '{"spec":{"cpu":{"cores":4}}}',
    ]);
    const flagged = await eventually('AwaitingRestart=True', async () => {
      const o = await read('virtualmachines', ns, 'vm1');
      return awaitingRestart(o)?.status === 'True' ? o : undefined;
    });
    expect(awaitingRestart(flagged)?.reason).toBe('ChangesPendingRestart');
    expect(statusOf(flagged).phase).toBe('Running');

    const patch = '{"spec":{"disruptions":{"restartApprovalMode":"Automatic"}}}';
    await kubectl(['patch', '-n', ns, 'vm/vm1', '--type=merge', '-p', patch]);
    await phase('virtualmachines', 'vm1', 'Stopping');
    const restarted = await phase('virtualmachines', 'vm1', 'Running');
    expect(awaitingRestart(restarted)).toBeUndefined();
  });

  it('stops a VM whose runPolicy is AlwaysOff', async () => {
    const body = runnersVm(ns, 'vm2');
    await create('virtualmachines', ns, {
      ...body,
      spec: { ...body.spec, runPolicy: 'AlwaysOff' },
    });
    await phase('virtualmachines', 'vm2', 'Stopped');
  });

  it('keeps a deleted VM Terminating briefly, then lets it go', async () => {
    await cluster().kubectl(['delete', '-n', ns, 'vm/vm1', '--wait=false']);
    await phase('virtualmachines', 'vm1', 'Terminating');
    await eventually('vm1 to disappear', async () =>
      (await read('virtualmachines', ns, 'vm1')) ? undefined : true,
    );
  });
});
