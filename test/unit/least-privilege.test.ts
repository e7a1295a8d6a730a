/**
 * Least privilege in the shipped manifests, read from the files themselves (no kustomize, so it runs
 * without the control plane; test/e2e/manifests.test.ts checks the rendered installs): knative/base
 * grants what its own features use, the optional CloudEvent form brings its TokenReview right along,
 * and with Eventing's sender identity on (the oidc component) the Broker admits each of vmpool's
 * sources with its own event types only.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { REPO_ROOT } from '../../local/controlplane/binaries.js';

interface Doc {
  kind: string;
  metadata: { name: string; namespace?: string };
  rules?: { apiGroups?: string[]; resources?: string[]; verbs: string[] }[];
  roleRef?: { name: string };
  subjects?: { kind: string; name: string; namespace?: string }[];
  spec?: Record<string, unknown>;
}

function docs(dir: string): Doc[] {
  return readdirSync(join(REPO_ROOT, dir))
    .filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml')
    .flatMap((f) => parseAllDocuments(readFileSync(join(REPO_ROOT, dir, f), 'utf8')))
    .map((d) => d.toJSON() as Doc | null)
    .filter((d): d is Doc => d !== null);
}

/** The ClusterRoles of `objects` that grant `create` on TokenReviews. */
const reviewers = (objects: Doc[]): string[] =>
  objects
    .filter((o) => o.kind === 'ClusterRole' || o.kind === 'Role')
    .filter((o) =>
      (o.rules ?? []).some(
        (r) =>
          (r.apiGroups ?? []).includes('authentication.k8s.io') &&
          (r.resources ?? []).includes('tokenreviews'),
      ),
    )
    .map((o) => o.metadata.name);

describe('grants only for the enabled features', () => {
  it('knative/base grants no TokenReview: the CloudEvent form is off there', () => {
    expect(reviewers(docs('knative/base'))).toEqual([]);
  });

  it('the scaledownwith-events component grants it, to scale-down-with alone', () => {
    const events = docs('knative/overlays/scaledownwith-events');
    const roles = reviewers(events);
    expect(roles).toEqual(['vmpool-scale-down-with-tokenreview']);
    const bindings = events.filter(
      (o) => o.kind === 'ClusterRoleBinding' && roles.includes(o.roleRef?.name ?? ''),
    );
    expect(bindings.flatMap((b) => b.subjects ?? [])).toEqual([
      { kind: 'ServiceAccount', name: 'scale-down-with', namespace: 'vmpool-system' },
    ]);
  });
});

describe("the Broker's EventPolicies", () => {
  const base = docs('knative/base');
  const policies = docs('knative/overlays/oidc').filter((o) => o.kind === 'EventPolicy');

  it('knative/base ships none: with authentication-oidc off Knative marks one not Ready, and the Broker with it', () => {
    expect(base.filter((o) => o.kind === 'EventPolicy')).toEqual([]);
  });

  it('the oidc component admits each source of knative/base, each with its own event types', () => {
    const admitted = policies.flatMap((p) =>
      (p.spec?.from as { ref: { kind: string; name: string } }[]).map(
        (f) => `${f.ref.kind}/${f.ref.name}`,
      ),
    );
    const sources = base
      .filter((o) => o.kind === 'PingSource' || o.kind === 'ApiServerSource')
      .map((o) => `${o.kind}/${o.metadata.name}`);
    expect(admitted.sort()).toEqual(sources.sort());
    expect(sources).toHaveLength(3);
    for (const p of policies) expect(p.spec?.filters).toHaveLength(1);
  });

  it('the events component admits its senders with scaledownwith events only, no source', () => {
    const policy = docs('knative/overlays/scaledownwith-events').find(
      (o) => o.kind === 'EventPolicy',
    );
    const from = policy?.spec?.from as { ref?: unknown; sub?: string }[];
    expect(from.every((f) => f.ref === undefined && typeof f.sub === 'string')).toBe(true);
    expect(policy?.spec?.filters).toEqual([
      { exact: { type: 'io.deckhouse.virtualization.vmpool.scaledownwith' } },
    ]);
  });
});

describe('namespace vmpool-system', () => {
  const base = docs('knative/base');
  const ns = base.find((o) => o.kind === 'Namespace');
  const labels = (ns?.metadata as { labels?: Record<string, string> } | undefined)?.labels ?? {};

  it('enforces the restricted Pod Security profile and keeps Istio sidecars out', () => {
    expect(labels['pod-security.kubernetes.io/enforce']).toBe('restricted');
    expect(labels['istio-injection']).toBe('disabled');
  });

  it("every pod template of knative/base meets the restricted profile's container rules", () => {
    interface Sc {
      runAsNonRoot?: boolean;
      allowPrivilegeEscalation?: boolean;
      capabilities?: { drop?: string[]; add?: string[] };
      seccompProfile?: { type: string };
    }
    interface Pod {
      securityContext?: Sc;
      containers: { name: string; securityContext?: Sc }[];
    }
    const pods = base
      .filter((o) => o.kind === 'Deployment' || o.kind === 'Service')
      .map(
        (o) => [o.metadata.name, (o.spec?.template as { spec?: Pod } | undefined)?.spec] as const,
      )
      .filter((e): e is readonly [string, Pod] => e[1] !== undefined);
    // The two Deployments and the three Knative Services.
    expect(pods).toHaveLength(5);
    for (const [name, pod] of pods)
      for (const c of pod.containers) {
        const sc = c.securityContext ?? {};
        const where = `${name}/${c.name}`;
        expect(sc.allowPrivilegeEscalation, where).toBe(false);
        expect(sc.capabilities?.drop, where).toEqual(['ALL']);
        expect(sc.capabilities?.add ?? [], where).toEqual([]);
        expect(sc.runAsNonRoot ?? pod.securityContext?.runAsNonRoot, where).toBe(true);
        expect((sc.seccompProfile ?? pod.securityContext?.seccompProfile)?.type, where).toBe(
          'RuntimeDefault',
        );
      }
  });
});
