/**
 * Shared fixtures of the function tests: a real Kube over client-node pointed at nock's
 * `https://k8s.test`, a silent logger, CloudEvent requests in both modes, a recorder of requests nock
 * could not match, and a converged `runners` pool.
 * @module
 */
import nock from 'nock';
import { afterEach, beforeAll, beforeEach } from 'vitest';
import type {
  VirtualDisk,
  VirtualMachine,
  VirtualMachinePool,
  PoolStatus,
} from '../../shared/api/index.js';
import { keys } from '../../shared/api/index.js';
import {
  asStandby,
  newDisk,
  newMember,
  plan,
  resolveRefs,
  templateHash,
} from '../../shared/domain/index.js';
import type { Kube } from '../../shared/kube/index.js';
import { createKube } from '../../shared/kube/index.js';
import { kubeConfigFor } from '../../shared/kube/config.js';
import { NOW, at, HOUR } from '../unit/builders.js';

/** The API server nock stands in for. */
export const API = 'https://k8s.test';
/** Path prefix of pools, VMs and disks. */
export const BASE = '/apis/virtualization.deckhouse.io/v1alpha2';
/** Path of events.k8s.io Events of a namespace. */
export const eventsPath = (ns: string): string => `/apis/events.k8s.io/v1/namespaces/${ns}/events`;

/** The real Kube funnel with instant retries and fixed jitter. */
export function testKube(): Kube {
  return createKube(kubeConfigFor(), {
    sleep: () => Promise.resolve(),
    random: () => 0,
    reportingInstance: 'vmpool-test',
  });
}

/** A Kubernetes list document. */
export function list<T>(items: readonly T[]): { metadata: Record<string, never>; items: T[] } {
  return { metadata: {}, items: [...items] };
}

/** A metav1.Status failure body. */
export function statusBody(code: number, reason: string, message = reason): object {
  return { apiVersion: 'v1', kind: 'Status', status: 'Failure', code, reason, message };
}

let ids = 0;

/** A list that answers 500 to each of the funnel's three attempts. */
export function failingList(
  path: string,
  query: Parameters<nock.Interceptor['query']>[0],
  message = 'InternalError',
): nock.Scope {
  return nock(API)
    .get(path)
    .query(query)
    .times(3)
    .reply(500, statusBody(500, 'InternalError', message));
}

/** Request init of a binary-mode CloudEvent (ce-* headers, JSON body), as ApiServerSource sends. */
export function binaryEvent(
  type: string,
  data?: unknown,
  headers: Record<string, string> = {},
): RequestInit {
  ids += 1;
  return {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'ce-specversion': '1.0',
      'ce-id': `id-${ids}`,
      'ce-source': 'https://10.96.0.1:443',
      'ce-type': type,
      ...headers,
    },
    body: data === undefined ? '' : JSON.stringify(data),
  };
}

/** Request init of a structured-mode CloudEvent (application/cloudevents+json). */
export function structuredEvent(type: string, data?: unknown): RequestInit {
  ids += 1;
  return {
    method: 'POST',
    headers: { 'content-type': 'application/cloudevents+json' },
    body: JSON.stringify({
      specversion: '1.0',
      id: `id-${ids}`,
      source: '/apis/v1/namespaces/vmpool/pingsources/resync',
      type,
      datacontenttype: 'application/json',
      ...(data === undefined ? {} : { data }),
    }),
  };
}

/** Reference-mode data of an ApiServerSource event. */
export function ref(kind: string, namespace: string, name: string, apiVersion = 'v1'): object {
  return { kind, namespace, name, apiVersion };
}

/** One request nock saw but had no interceptor for. */
export interface Unmatched {
  readonly method: string;
  readonly path: string;
}

/**
 * Records requests nock could not match (with disableNetConnect they also fail), so a test can say
 * "these calls and no other" — a write that was not mocked shows up here.
 */
export function recordUnmatched(): { readonly seen: Unmatched[]; stop(): void } {
  const seen: Unmatched[] = [];
  const onNoMatch = (a: unknown, b?: unknown): void => {
    const o = (b ?? a) as { method?: string; path?: string };
    seen.push({ method: o.method ?? '?', path: o.path ?? '?' });
  };
  nock.emitter.on('no match', onNoMatch);
  return {
    seen,
    stop: () => {
      nock.emitter.removeListener('no match', onNoMatch);
    },
  };
}

/**
 * Registers the per-file nock lifecycle of a function test: no real network, unmatched requests
 * recorded per test, interceptors cleared after each. `seen` is the current test's list.
 */
export function guardNock(): { readonly seen: Unmatched[] } {
  let current: { seen: Unmatched[]; stop(): void } = { seen: [], stop: () => undefined };
  beforeAll(() => {
    nock.disableNetConnect();
  });
  beforeEach(() => {
    current = recordUnmatched();
  });
  afterEach(() => {
    current.stop();
    nock.cleanAll();
  });
  return {
    get seen() {
      return current.seen;
    },
  };
}

/**
 * Every claims list (of a namespace or the cluster) answers empty in each test: a cluster where
 * nobody claims. Registered per test, after {@link guardNock}'s cleanup of the previous one.
 */
export function noClaims(): void {
  beforeEach(() => {
    nock(API)
      .persist()
      .get(
        /^\/apis\/vmpool\.virtualization\.deckhouse\.io\/v1alpha1\/(namespaces\/[^/]+\/)?virtualmachineclaims/,
      )
      .query(true)
      .reply(200, { apiVersion: 'v1', kind: 'List', metadata: {}, items: [] });
  });
}

/** A pool as the API server returns it: the builder's `runners` with a given status. */
export function withStatus(
  p: VirtualMachinePool,
  status: PoolStatus | undefined,
): VirtualMachinePool {
  const out = structuredClone(p);
  if (status === undefined) delete out.status;
  else out.status = status;
  return out;
}

/** A pool together with members and disks that need nothing done at {@link NOW}. */
export interface Converged {
  readonly pool: VirtualMachinePool;
  readonly vms: VirtualMachine[];
  readonly disks: VirtualDisk[];
}

/**
 * `p` with `names` as running members on the current template, each with its `<vm>-<tpl>` Delete
 * disks and one Retain disk per Retain template, and the status a reconcile would store: planning it
 * at {@link NOW} gives no actions and no status write (checked here, so a test never starts from a
 * state that is not converged).
 */
export function converged(
  p: VirtualMachinePool,
  names: readonly string[],
  standby: ReadonlySet<string> = new Set(),
): Converged {
  const hash = templateHash(p.spec.virtualMachineTemplate);
  const vms: VirtualMachine[] = [];
  const disks: VirtualDisk[] = [];
  names.forEach((name, i) => {
    const bound = new Map<string, string>();
    for (const t of p.spec.virtualDiskTemplates) {
      const retain = t.reclaim?.onScaleDown === 'Retain';
      const diskName = retain
        ? `${p.metadata.name ?? ''}-${t.name}-bcdfg${'hjklm'[i] ?? 'n'}`
        : `${name}-${t.name}`;
      bound.set(t.name, diskName);
      const owner = retain
        ? {
            kind: 'VirtualMachinePool' as const,
            name: p.metadata.name ?? '',
            uid: p.metadata.uid ?? '',
          }
        : { kind: 'VirtualMachine' as const, name, uid: `uid-${name}` };
      const d = newDisk(p, t, diskName, owner);
      d.metadata.uid = `uid-${diskName}`;
      d.metadata.resourceVersion = '7';
      d.metadata.creationTimestamp = at(-2 * HOUR);
      d.status = { phase: 'Ready' };
      disks.push(d);
    }
    const refs = resolveRefs(p.spec.virtualMachineTemplate.spec?.blockDeviceRefs ?? [], bound);
    const m = standby.has(name)
      ? asStandby(p, newMember(p, name, hash, refs))
      : newMember(p, name, hash, refs);
    m.metadata.uid = `uid-${name}`;
    m.metadata.resourceVersion = '9';
    m.metadata.generation = 1;
    m.metadata.creationTimestamp = at(-HOUR);
    const phase = m.spec.runPolicy === 'AlwaysOff' ? 'Stopped' : 'Running';
    m.status = { phase, observedGeneration: 1, conditions: [] };
    vms.push(m);
  });
  const first = plan({ pool: p, vms, disks }, NOW, () => 0);
  const pool = withStatus(p, first.status);
  const again = plan({ pool, vms, disks }, NOW, () => 0);
  if (again.actions.length > 0 || again.writeStatus)
    throw new Error(
      `fixture is not converged: ${JSON.stringify(again.actions.map((a) => a.kind))} writeStatus=${String(again.writeStatus)}`,
    );
  return { pool, vms, disks };
}

/** The label that names a pool on its children. */
export const POOL_LABEL = keys.pool;

/** The body of a SubjectAccessReview the functions send. */
export interface ReviewOfRights {
  spec: {
    user: string;
    uid?: string;
    groups: string[];
    extra?: Record<string, string[]>;
    resourceAttributes: Record<string, string>;
  };
}

/** The API server's answer to one SubjectAccessReview; the request body lands in `seen`. */
export function reviewOfRights(allowed: boolean, seen: ReviewOfRights[] = []): nock.Scope {
  return nock(API)
    .post('/apis/authorization.k8s.io/v1/subjectaccessreviews', (body: ReviewOfRights) => {
      seen.push(body);
      return true;
    })
    .query(true)
    .reply(201, (_uri, body) => ({
      ...(body as object),
      status: allowed ? { allowed: true } : { allowed: false, reason: 'no RBAC policy matched' },
    }));
}
