/**
 * knative/overlays/own-group: the deployment for clusters where the platform serves the reference's
 * scaledownwith group. Rendered by the built kubectl; it must register only vmpool's own group,
 * point scale-down-with at it, and its built-in objects must pass a server-side dry run.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { OWN_SUBRESOURCES_GROUP, SUBRESOURCES_GROUP } from '../../shared/api/index.js';
import { REPO_ROOT } from '../../local/controlplane/binaries.js';
import { toYaml } from '../../local/controlplane/kubectl.js';
import { cluster } from './harness.js';
import type { Rendered } from './rbac.js';

async function render(dir: string): Promise<Rendered[]> {
  const text = await cluster().kubectl(['kustomize', join(REPO_ROOT, dir)]);
  return parseAllDocuments(text)
    .map((d) => d.toJSON() as Rendered | null)
    .filter((o): o is Rendered => o !== null);
}

describe('knative/overlays/own-group', () => {
  it('registers vmpool’s own group instead of the reference’s, and tells scale-down-with', async () => {
    const objects = await render('knative/overlays/own-group');
    const apiServices = objects.filter((o) => o.kind === 'APIService');
    expect(apiServices.map((o) => o.metadata.name)).toEqual([`v1alpha2.${OWN_SUBRESOURCES_GROUP}`]);
    expect(apiServices[0]?.spec).toMatchObject({
      group: OWN_SUBRESOURCES_GROUP,
      version: 'v1alpha2',
      service: { name: 'scale-down-with', namespace: 'vmpool-system', port: 443 },
    });
    const deploy = objects.find(
      (o) => o.kind === 'Deployment' && o.metadata.name === 'scale-down-with',
    );
    const env = (deploy?.spec as { template: { spec: { containers: Array<{ env: unknown[] }> } } })
      .template.spec.containers[0]?.env;
    expect(env).toContainEqual({ name: 'SCALEDOWNWITH_GROUP', value: OWN_SUBRESOURCES_GROUP });
    // Everything else is base's.
    const base = await render('knative/base');
    const ident = (o: Rendered) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
    expect(objects.filter((o) => o.kind !== 'APIService').map(ident)).toEqual(
      base.filter((o) => o.kind !== 'APIService').map(ident),
    );
    expect(base.find((o) => o.kind === 'APIService')?.spec).toMatchObject({
      group: SUBRESOURCES_GROUP,
    });

    // The API server accepts the two objects the overlay changes.
    const out = await cluster().kubectl(
      ['apply', '--server-side', '--dry-run=server', '-f', '-'],
      toYaml([...apiServices, deploy as Rendered]),
    );
    expect(out).toContain(
      `apiservice.apiregistration.k8s.io/v1alpha2.${OWN_SUBRESOURCES_GROUP} serverside-applied (server dry run)`,
    );
  });

  it('the aggregated edit role grants scaledownwith in both groups', async () => {
    const objects = await render('knative/base');
    const edit = objects.find((o) => o.metadata.name === 'vmpool:aggregate-to-edit');
    const rule = edit?.rules?.find((r) =>
      (r.resources as string[]).includes('virtualmachinepools/scaledownwith'),
    );
    expect(rule?.apiGroups).toEqual([SUBRESOURCES_GROUP, OWN_SUBRESOURCES_GROUP]);
  });
});
