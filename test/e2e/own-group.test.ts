/**
 * knative/overlays/own-group: vmpool's deployment where the platform serves the reference's
 * scaledownwith group. Rendered by the built kubectl in an admin's checkout (a copy of knative/ with
 * self-signed certificates): the Component points scale-down-with at vmpool's own group, and each
 * TLS path's last step registers only that group, with its caBundle source kept. The server-side dry
 * run of the steps is in manifests.test.ts (it renders every kustomization under knative/).
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OWN_SUBRESOURCES_GROUP, SUBRESOURCES_GROUP } from '../../shared/api/index.js';
import { cluster } from './harness.js';
import type { K8sObject } from './knative.js';
import { adminCheckout, render } from './knative.js';

let checkout = '';
beforeAll(async () => {
  checkout = await adminCheckout();
});
afterAll(() => {
  rmSync(checkout, { recursive: true, force: true });
});

async function objects(dir: string): Promise<K8sObject[]> {
  const { info } = cluster();
  return (await render(join(info.binDir, 'kubectl'), info.kubeconfigPath, join(checkout, dir)))
    .objects;
}

describe('knative/overlays/own-group', () => {
  it('the Component tells scale-down-with to serve vmpool’s own group, and changes nothing else', async () => {
    // An admin's copy of overlays/example with the Component added, as the overlay's comment says.
    const mine = join(checkout, 'knative/overlays/mine');
    mkdirSync(mine);
    writeFileSync(
      join(mine, 'kustomization.yaml'),
      'resources: [../example]\ncomponents: [../own-group]\n',
    );
    const withGroup = await objects('knative/overlays/mine');
    const without = await objects('knative/overlays/example');
    const envOf = (all: K8sObject[]) =>
      (
        all.find((o) => o.kind === 'Deployment' && o.metadata.name === 'scale-down-with')?.spec as {
          template: { spec: { containers: Array<{ env: Array<{ name: string }> }> } };
        }
      ).template.spec.containers[0]?.env;
    expect(envOf(withGroup)).toEqual([
      ...(envOf(without) ?? []),
      { name: 'SCALEDOWNWITH_GROUP', value: OWN_SUBRESOURCES_GROUP },
    ]);
    const ident = (o: K8sObject) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
    expect(withGroup.map(ident)).toEqual(without.map(ident));
    expect(withGroup.some((o) => o.kind === 'APIService')).toBe(false);
  });

  it.each(['cert-manager', 'plain-tls'])(
    'the %s last step registers only vmpool’s own group, with the same backend and CA source',
    async (tls) => {
      const own = await objects(`knative/overlays/own-group/${tls}/apiservice`);
      const ref = await objects(`knative/overlays/${tls}/apiservice`);
      const [api] = own.filter((o) => o.kind === 'APIService');
      const [refApi] = ref.filter((o) => o.kind === 'APIService');
      expect(own.filter((o) => o.kind === 'APIService')).toHaveLength(1);
      expect(api?.metadata.name).toBe(`v1alpha2.${OWN_SUBRESOURCES_GROUP}`);
      expect(refApi?.metadata.name).toBe(`v1alpha2.${SUBRESOURCES_GROUP}`);
      expect(api?.spec).toEqual({ ...(refApi?.spec as object), group: OWN_SUBRESOURCES_GROUP });
      expect(api?.metadata.annotations).toEqual(refApi?.metadata.annotations);
    },
  );

  it('the aggregated edit role grants scaledownwith in both groups', async () => {
    const edit = (await objects('knative/base')).find(
      (o) => o.metadata.name === 'vmpool:aggregate-to-edit',
    ) as (K8sObject & { rules: Array<{ apiGroups: string[]; resources: string[] }> }) | undefined;
    const rule = edit?.rules.find((r) => r.resources.includes('virtualmachinepools/scaledownwith'));
    expect(rule?.apiGroups).toEqual([SUBRESOURCES_GROUP, OWN_SUBRESOURCES_GROUP]);
  });
});
