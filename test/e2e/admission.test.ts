/**
 * scale-validate end to end: kube-apiserver calls the webhook for pool writes and for `/scale`, and
 * kubectl shows its answers exactly as a user would see them.
 */
import { createServer } from 'node:net';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { POOL_PATH, SCALE_PATH } from '../../functions/scale-validate/app.js';
import {
  explicitReplicasMessage,
  explicitScaleMessage,
  withTargets,
} from '../../shared/domain/index.js';
import {
  CLAIM_API_VERSION,
  CLAIM_GROUP,
  CLAIM_VERSION,
  GROUP,
  VERSION,
  claimCelMessages,
  keys,
} from '../../shared/api/index.js';
import { startApiserverFacing, reportLatency, type ApiserverFacing } from './apiserver-facing.js';
import { cluster, create, dropNamespace, functionKube, newNamespace, read } from './harness.js';
import { runnersPool } from '../../local/guide.js';
import { toYaml } from '../../local/controlplane/kubectl.js';
import { requestText } from '../../local/controlplane/http.js';
import { WEBHOOK_TIMEOUT_MS } from '../../shared/reconcile/index.js';
import { createKube } from '../../shared/kube/index.js';
import { kubeConfigFor } from '../../shared/kube/config.js';

let ns = '';
let facing: ApiserverFacing;

beforeAll(async () => {
  ns = await newNamespace('admission');
  facing = await startApiserverFacing(ns);
});
afterAll(async () => {
  await facing.stop();
  await dropNamespace(ns);
});

type Pool = ReturnType<typeof runnersPool>;

function pool(name: string, edit: (p: Pool) => void = () => undefined): Pool {
  const p = runnersPool(ns, name);
  edit(p);
  return p;
}

const kubectl = (args: string[], input?: string) => cluster().kubectl([...args, '-n', ns], input);

/** kubectl's stderr of a command that must fail. */
async function refused(args: string[], input?: string): Promise<string> {
  try {
    await kubectl(args, input);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error(`kubectl ${args.join(' ')} succeeded but should have been refused`);
}

async function readClaim(name: string): Promise<object | undefined> {
  try {
    return (await cluster().custom.getNamespacedCustomObject({
      group: CLAIM_GROUP,
      version: CLAIM_VERSION,
      namespace: ns,
      plural: 'virtualmachineclaims',
      name,
    })) as object;
  } catch (err) {
    if ((err as { code?: number }).code === 404) return undefined;
    throw err;
  }
}

async function replicas(name: string): Promise<number | undefined> {
  const p = await read('virtualmachinepools', ns, name);
  return (p?.spec as { replicas?: number } | undefined)?.replicas;
}

describe('one message per mistake', () => {
  it('spec.replicas: -1 is refused with one message, not the schema bound beside the scale check', async () => {
    await create('virtualmachinepools', ns, pool('negative'));
    const stderr = await refused([
      'patch',
      'virtualmachinepool/negative',
      '--type=merge',
      '-p',
      '{"spec":{"replicas":-1}}',
    ]);
    const messages = stderr.split('\n').filter((l) => l.includes('Invalid value'));
    expect(messages, stderr).toHaveLength(1);
    expect(stderr).toContain('should be a non-negative integer');
    expect(stderr).not.toContain('greater than or equal to 0');
    expect(await replicas('negative')).toBe(3);
  });
});

describe('claims: one clear message per mistake', () => {
  const claim = (name: string, spec: Record<string, unknown>) => ({
    apiVersion: CLAIM_API_VERSION,
    kind: 'VirtualMachineClaim',
    metadata: { name },
    spec,
  });
  /** The one message kubectl shows for a refused write (a second one would be a `* ` line). */
  function only(stderr: string): string {
    expect(
      stderr.split('\n').filter((l) => l.startsWith('* ')),
      stderr,
    ).toEqual([]);
    return stderr;
  }

  it.each<[string, Record<string, unknown>, string]>([
    ['no poolName', {}, 'spec.poolName: Required value'],
    [
      'an empty poolName',
      { poolName: '' },
      'spec.poolName in body should be at least 1 chars long',
    ],
    [
      'a holder over 253 characters',
      { poolName: 'runners', holder: 'h'.repeat(254) },
      'spec.holder: Too long: may not be more than 253 bytes',
    ],
    [
      'a ttl that is no Go duration',
      { poolName: 'runners', ttl: '2 hours' },
      'denied the request: spec.ttl: must be a Go duration such as 30m or 2h',
    ],
    [
      'a ttl of zero',
      { poolName: 'runners', ttl: '0s' },
      'denied the request: spec.ttl: must be a positive Go duration such as 30m or 2h',
    ],
    [
      'an onRelease other than Delete or Recycle',
      { poolName: 'runners', onRelease: 'Keep' },
      'spec.onRelease: Unsupported value: "Keep": supported values: "Delete", "Recycle"',
    ],
  ])('kubectl create of a claim with %s: refused, one message', async (_, spec, message) => {
    const stderr = only(await refused(['create', '-f', '-'], toYaml([claim('bad', spec)])));
    expect(stderr).toContain(message);
    expect(await readClaim('bad')).toBeUndefined();
  });

  it('kubectl apply of a claim for another pool: refused as immutable; other edits go through', async () => {
    await kubectl(['create', '-f', '-'], toYaml([claim('moved', { poolName: 'runners' })]));
    const stderr = only(
      await refused(['apply', '-f', '-'], toYaml([claim('moved', { poolName: 'desktops' })])),
    );
    expect(stderr).toContain(`denied the request: ${claimCelMessages.poolNameImmutable}`);
    await kubectl(
      ['apply', '-f', '-'],
      toYaml([claim('moved', { poolName: 'runners', holder: 'alice', ttl: '8h' })]),
    );
    const got = (await readClaim('moved')) as { spec: Record<string, unknown> } | undefined;
    expect(got?.spec).toEqual({ poolName: 'runners', holder: 'alice', ttl: '8h' });
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['minIdle -1', { minIdle: -1, maxReplicas: 4 }, 'should be greater than or equal to 0'],
    [
      'minIdle above maxReplicas',
      { minIdle: 5, maxReplicas: 4 },
      claimCelMessages.minIdleWithinMax,
    ],
    ['maxReplicas -1', { maxReplicas: -1 }, claimCelMessages.minIdleWithinMax],
    [
      'no maxReplicas',
      { minIdle: 2 },
      'spec.claims.maxReplicas: is required: the most replicas claims may grow the pool to',
    ],
    [
      'onRelease Keep',
      { maxReplicas: 4, onRelease: 'Keep' },
      'spec.claims.onRelease: must be Delete or Recycle',
    ],
    [
      'a maxTTL that is no Go duration',
      { maxReplicas: 4, maxTTL: 'a day' },
      'spec.claims.maxTTL: must be a Go duration such as 30m or 2h',
    ],
  ])("a pool's spec.claims with %s: refused, one message", async (_, claims, message) => {
    const bad = pool('claims-bad', (p) => Object.assign(p.spec, { claims }));
    const stderr = only(
      await refused(['create', '-f', '-'], toYaml([{ apiVersion: `${GROUP}/${VERSION}`, ...bad }])),
    );
    expect(stderr).toContain(message);
    expect(await read('virtualmachinepools', ns, 'claims-bad')).toBeUndefined();
  });
});

describe('the /scale webhook (reference §7)', () => {
  it('refuses kubectl scale down on an Explicit pool with the reference message', async () => {
    await create(
      'virtualmachinepools',
      ns,
      pool('explicit', (p) => (p.spec.scaleDownPolicy = 'Explicit')),
    );
    const before = facing.calls(SCALE_PATH);
    const stderr = await refused(['scale', 'virtualmachinepool/explicit', '--replicas=1']);
    expect(stderr).toContain('admission webhook');
    expect(stderr).toContain('denied the request');
    expect(stderr).toContain(explicitScaleMessage('explicit'));
    expect(facing.calls(SCALE_PATH)).toBeGreaterThan(before);
    expect(await replicas('explicit')).toBe(3);
  });

  it('lets kubectl scale an Explicit pool up', async () => {
    await kubectl(['scale', 'virtualmachinepool/explicit', '--replicas=5']);
    expect(await replicas('explicit')).toBe(5);
    // Unchanged is not a decrease either.
    await kubectl(['scale', 'virtualmachinepool/explicit', '--replicas=5']);
    expect(await replicas('explicit')).toBe(5);
  });

  it('lets kubectl scale a NewestFirst pool down', async () => {
    await create('virtualmachinepools', ns, pool('newest'));
    await kubectl(['scale', 'virtualmachinepool/newest', '--replicas=1']);
    expect(await replicas('newest')).toBe(1);
    await kubectl(['scale', 'virtualmachinepool/newest', '--replicas=0']);
    expect(await replicas('newest')).toBe(0);
  });
});

describe('the pool webhook', () => {
  it('refuses kubectl patch lowering spec.replicas of an Explicit pool (our improvement)', async () => {
    const stderr = await refused([
      'patch',
      'virtualmachinepool/explicit',
      '--type=merge',
      '-p',
      '{"spec":{"replicas":2}}',
    ]);
    expect(stderr).toContain('denied the request');
    expect(stderr).toContain(explicitReplicasMessage('explicit'));
    expect(await replicas('explicit')).toBe(5);
    // Raising it through the main resource stays allowed.
    await kubectl([
      'patch',
      'virtualmachinepool/explicit',
      '--type=merge',
      '-p',
      '{"spec":{"replicas":6}}',
    ]);
    expect(await replicas('explicit')).toBe(6);
  });

  describe('a forged Explicit target is refused', () => {
    const made = [{ name: 'forged-zzzzz', uid: 'made-up' }];

    it('kubectl patch adding a target and lowering spec.replicas: the Explicit message, nothing changed', async () => {
      await create(
        'virtualmachinepools',
        ns,
        pool('forged', (p) => (p.spec.scaleDownPolicy = 'Explicit')),
      );
      const patch = {
        metadata: { annotations: { [keys.scaleDownTargets]: JSON.stringify(made) } },
        spec: { replicas: 2 },
      };
      const stderr = await refused([
        'patch',
        'virtualmachinepool/forged',
        '--type=merge',
        '-p',
        JSON.stringify(patch),
      ]);
      expect(stderr).toContain('denied the request');
      expect(stderr).toContain(explicitReplicasMessage('forged'));
      expect(stderr).toContain('targets may be added only by system:serviceaccount:');
      expect(await replicas('forged')).toBe(3);
    });

    it('even written as scale-down-with, a uid that is no live member is refused', async () => {
      const sdw = await functionKube('scale-down-with');
      const got = await sdw.getPool(ns, 'forged');
      if (!got.ok) throw new Error(got.message);
      const p = got.value;
      const wrote = await sdw.updatePool(
        withTargets({ ...p, spec: { ...p.spec, replicas: 2 } }, made),
      );
      expect(wrote.ok).toBe(false);
      expect(wrote.ok ? '' : wrote.message).toContain(
        `${explicitReplicasMessage('forged')} Not a scaleDownWith target: target "forged-zzzzz" is not a VirtualMachine in namespace "${ns}"`,
      );
      expect(await replicas('forged')).toBe(3);
    });
  });

  it('lets kubectl patch lower spec.replicas of a NewestFirst pool', async () => {
    await create('virtualmachinepools', ns, pool('patched'));
    await kubectl([
      'patch',
      'virtualmachinepool/patched',
      '--type=merge',
      '-p',
      '{"spec":{"replicas":1}}',
    ]);
    expect(await replicas('patched')).toBe(1);
  });

  it('refuses a pool whose template the VirtualMachine API refuses, with that API’s message', async () => {
    // The pool CRD leaves cpu open; the VirtualMachine CRD requires cores >= 1 (both CRD sets).
    const bad = pool('zero-cores', (p) => (p.spec.virtualMachineTemplate.spec.cpu.cores = 0));
    const before = facing.calls(POOL_PATH);
    const stderr = await refused(
      ['create', '-f', '-'],
      toYaml([{ apiVersion: `${GROUP}/${VERSION}`, ...bad }]),
    );
    expect(facing.calls(POOL_PATH)).toBeGreaterThan(before);
    expect(stderr).toContain('denied the request');
    expect(stderr).toContain('the VirtualMachine this template produces is refused');
    expect(stderr).toContain('spec.cpu.cores');
    expect(stderr).toMatch(/greater than or equal to 1/);
    expect(await read('virtualmachinepools', ns, 'zero-cores')).toBeUndefined();
  });

  it('refuses a template edit the VirtualMachine API refuses, and accepts a valid one', async () => {
    await create('virtualmachinepools', ns, pool('edited'));
    const stderr = await refused([
      'patch',
      'virtualmachinepool/edited',
      '--type=merge',
      '-p',
      '{"spec":{"virtualMachineTemplate":{"spec":{"cpu":{"cores":0}}}}}',
    ]);
    expect(stderr).toContain('the VirtualMachine this template produces is refused');
    expect(stderr).toContain('spec.cpu.cores');
    await kubectl([
      'patch',
      'virtualmachinepool/edited',
      '--type=merge',
      '-p',
      '{"spec":{"virtualMachineTemplate":{"spec":{"cpu":{"cores":4}}}}}',
    ]);
    const p = await read('virtualmachinepools', ns, 'edited');
    const spec = p?.spec as Pool['spec'];
    expect(spec.virtualMachineTemplate.spec.cpu.cores).toBe(4);
  });
});

describe('who the webhook answers', () => {
  it('takes reviews from the kube-apiserver alone: a direct call without its client certificate is refused', async () => {
    // Every other test here is the API server's call, presenting the plane's webhook client
    // certificate (local/controlplane/admission-config.ts), and is answered.
    const direct = await requestText({
      url: `https://127.0.0.1:${String(facing.webhookPort)}${POOL_PATH}`,
      ca: facing.caPem,
      body: {
        apiVersion: 'admission.k8s.io/v1',
        kind: 'AdmissionReview',
        request: { uid: 'direct', operation: 'CREATE' },
      },
    });
    expect(direct.status).toBe(401);
    expect(direct.body).toContain('a client certificate is required');
  });
});

describe('admission that warns and refuses clearly, as kubectl shows it', () => {
  it('warns of a template field the VM API does not know, and accepts the pool', async () => {
    const typo = pool('typo');
    const spec = typo.spec.virtualMachineTemplate.spec as Record<string, unknown>;
    spec.cpus = 2;
    const out = await cluster().kubectlFull(
      ['apply', '--server-side', '-n', ns, '-f', '-'],
      toYaml([{ apiVersion: `${GROUP}/${VERSION}`, ...typo }]),
    );
    expect(out.stderr).toContain('Warning: unknown field "spec.virtualMachineTemplate.spec.cpus"');
    expect(await read('virtualmachinepools', ns, 'typo')).toBeDefined();
  });

  it('refuses lowering a disk template size, naming the template and both sizes; allows raising it', async () => {
    await create('virtualmachinepools', ns, pool('sizes'));
    const size = (to: string) =>
      `{"spec":{"virtualDiskTemplates":[{"name":"cache","reclaim":{"onScaleDown":"Retain","keep":5,"ttl":"30m"},"spec":{"persistentVolumeClaim":{"size":"${to}"}}}]}}`;
    // A merge patch replaces the list: keep the boot disk's template in it.
    const both = (to: string) => {
      const root = JSON.stringify(runnersPool(ns).spec.virtualDiskTemplates[0]);
      return size(to).replace('"virtualDiskTemplates":[', `"virtualDiskTemplates":[${root},`);
    };
    const stderr = await refused([
      'patch',
      'virtualmachinepool/sizes',
      '--type=merge',
      '-p',
      both('40Gi'),
    ]);
    expect(stderr).toContain(
      'virtualDiskTemplates "cache": persistentVolumeClaim.size cannot be lowered from 50Gi to 40Gi; disks only grow',
    );
    await kubectl(['patch', 'virtualmachinepool/sizes', '--type=merge', '-p', both('60Gi')]);
    const p = await read('virtualmachinepools', ns, 'sizes');
    const templates = (p?.spec as Pool['spec']).virtualDiskTemplates;
    expect(templates.find((t) => t.name === 'cache')?.spec.persistentVolumeClaim.size).toBe('60Gi');
  });
});

describe('webhook latency', () => {
  it('serves 300 /scale patches (0 / +1) through kube-apiserver', async () => {
    await create(
      'virtualmachinepools',
      ns,
      pool('latency', (p) => (p.spec.replicas = 0)),
    );
    const { custom } = cluster();
    const handlerBefore = facing.timings.get(SCALE_PATH)?.length ?? 0;
    const endToEnd: number[] = [];
    let r = 0;
    let failures = 0;
    for (let i = 0; i < 300; i++) {
      const next = i % 2 === 1 ? r + 1 : r;
      const t0 = performance.now();
      try {
        await custom.patchNamespacedCustomObjectScale({
          group: GROUP,
          version: VERSION,
          namespace: ns,
          plural: 'virtualmachinepools',
          name: 'latency',
          body: [{ op: 'replace', path: '/spec/replicas', value: next }],
        });
        r = next;
      } catch {
        failures++;
      }
      endToEnd.push(performance.now() - t0);
    }
    const handler = (facing.timings.get(SCALE_PATH) ?? []).slice(handlerBefore);
    reportLatency('PATCH /scale through kube-apiserver (end to end)', endToEnd);
    reportLatency('scale-validate handler, /scale', handler);
    const poolHandler = facing.timings.get(POOL_PATH) ?? [];
    reportLatency('scale-validate handler, pool CREATE/UPDATE (incl. VM dry-run)', poolHandler);
    expect(failures).toBe(0);
    expect(await replicas('latency')).toBe(150);
    // Every changing patch went through the webhook (no-op patches may too).
    expect(handler.length).toBeGreaterThanOrEqual(150);
  });
});

describe('the webhook inside its own deadline', () => {
  let slowNs = '';
  let slow: ApiserverFacing | undefined;
  const held = new Set<Socket>();
  // An "API server" that accepts connections and never answers: the webhook's dry run hangs on it.
  const blackHole = createServer((socket) => {
    held.add(socket);
  });
  beforeAll(async () => {
    slowNs = await newNamespace('admission-slow');
    await new Promise<void>((ok) => blackHole.listen(0, '127.0.0.1', ok));
    const addr = blackHole.address();
    if (addr === null || typeof addr === 'string') throw new Error('no port');
    const validateKube = createKube(
      kubeConfigFor({ server: `https://127.0.0.1:${String(addr.port)}` }),
    );
    slow = await startApiserverFacing(slowNs, { validateKube });
  }, 120_000);
  afterAll(async () => {
    await slow?.stop();
    for (const s of held) s.destroy();
    blackHole.close();
    await dropNamespace(slowNs);
  });

  it('denies a pool with its own clear message before kube-apiserver gives up on it', async () => {
    const t0 = performance.now();
    const stderr = await cluster()
      .kubectl(
        ['create', '-n', slowNs, '-f', '-'],
        toYaml([{ apiVersion: `${GROUP}/${VERSION}`, ...runnersPool(slowNs, 'unchecked') }]),
      )
      .then(
        () => 'created',
        (err: unknown) => (err as Error).message,
      );
    const took = performance.now() - t0;
    console.log(`[admission] slow API server: denied after ${String(Math.round(took))} ms`);
    // The webhook's words, not the API server's "context deadline exceeded".
    expect(stderr).toContain('cannot check the template against the VirtualMachine API');
    expect(stderr).toContain('the API server did not answer within 6000 ms');
    expect(took).toBeLessThan(WEBHOOK_TIMEOUT_MS);
    expect(await read('virtualmachinepools', slowNs, 'unchecked')).toBeUndefined();
  });
});
