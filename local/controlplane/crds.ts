/**
 * CRDs the test control plane installs: the pool CRD (always ours, from poolCrd()) plus VirtualMachine,
 * VirtualDisk, VirtualImage and ClusterVirtualImage, either the project's minimal fixtures or, with
 * VMPOOL_DVP_CRDS=<dir>, the platform's real CRDs read from that directory.
 * @module
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { poolCrd } from '../../shared/api/crd.js';
import { claimCrd } from '../../shared/api/claim-crd.js';
import { REPO_ROOT } from './binaries.js';

/** A Kubernetes object as plain JSON. */
export type KubeObject = Record<string, unknown> & {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string } & Record<string, unknown>;
};

/** The platform CRD files vmpool depends on (same file names in both sources). */
export const PLATFORM_CRD_FILES = [
  'virtualmachines.yaml',
  'virtualdisks.yaml',
  'virtualimages.yaml',
  'clustervirtualimages.yaml',
] as const;

/** Directory of the minimal fixtures shipped with the repository. */
export const FIXTURE_CRD_DIR = join(REPO_ROOT, 'local', 'crds');

/** Parses every YAML document of a string into objects (empty documents dropped). */
export function parseManifests(text: string): KubeObject[] {
  return parseAllDocuments(text)
    .map((d) => d.toJS() as unknown)
    .filter((o): o is KubeObject => typeof o === 'object' && o !== null);
}

/** The event plumbing knative/ deploys: sources, Broker, Triggers. */
export const EVENTING_MANIFEST = join(REPO_ROOT, 'knative', 'base', 'eventing.yaml');

/** The objects of `file` (knative/base/eventing.yaml by default) of one kind. */
export function manifestsOfKind(kind: string, file = EVENTING_MANIFEST): KubeObject[] {
  return parseManifests(readFileSync(file, 'utf8')).filter((o) => o.kind === kind);
}

/** Where the platform CRDs come from: `VMPOOL_DVP_CRDS` if set, else the fixtures. */
export function platformCrdDir(env: NodeJS.ProcessEnv = process.env): string {
  const dir = env.VMPOOL_DVP_CRDS;
  return dir !== undefined && dir !== '' ? dir : FIXTURE_CRD_DIR;
}

/**
 * Removes Deckhouse's documentation-only schema keys (`x-doc-examples`, `x-doc-default`, ...): the
 * platform strips them when it installs its CRDs, and the API server rejects them as unknown fields.
 */
export function stripDocKeys<T>(node: T): T {
  if (Array.isArray(node)) return node.map((n: unknown) => stripDocKeys(n)) as T;
  if (typeof node !== 'object' || node === null) return node;
  return Object.fromEntries(
    Object.entries(node)
      .filter(([k]) => !k.startsWith('x-doc-'))
      .map(([k, v]) => [k, stripDocKeys(v)]),
  ) as T;
}

/** The platform's CRDs (VM, disk, images) from {@link platformCrdDir}, doc keys stripped. */
export function platformCrds(env: NodeJS.ProcessEnv = process.env): KubeObject[] {
  const dir = platformCrdDir(env);
  return PLATFORM_CRD_FILES.flatMap((f) =>
    parseManifests(readFileSync(join(dir, f), 'utf8')).map(stripDocKeys),
  );
}

/** All CRDs to install, vmpool's (pool, claim) first. */
export function testCrds(env: NodeJS.ProcessEnv = process.env): KubeObject[] {
  return [poolCrd() as KubeObject, claimCrd() as KubeObject, ...platformCrds(env)];
}
