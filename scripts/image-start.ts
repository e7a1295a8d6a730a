/**
 * The image's start command, in one place: the Containerfile's ENTRYPOINT and CMD, the commands and
 * args of knative/base and the cold-start benchmark all follow it, and test/unit/image-start.test.ts
 * fails when one of them drifts from it (what is measured is what ships).
 * @module
 */
import type { FunctionName } from './build.js';

/** The node binary of the image (the build stage's own, copied into the runtime stage). */
export const IMAGE_NODE = '/usr/local/bin/node';

/**
 * The flags every function runs with; a snapshot is built with them too (a blob only loads with
 * the V8 flags that built it). A small young generation keeps a function's memory low. The old
 * space is capped at half the pods' 256 Mi limit: in a 256 MiB memory cgroup Node sizes its heap
 * limit to 259 MB, the whole limit, so V8 let garbage pile up until the kernel, not V8, would act
 * (a resync tick peaked at 130 MiB unconstrained, 99 MiB with the old space capped at 96 or 64).
 * `--use-openssl-ca` skips building Node's bundled root store at the first TLS connection: the
 * functions trust the API server's CA they are given (kubeconfig, service account), not public
 * roots; a kubeconfig without a CA needs `SSL_CERT_FILE` (knative/README.md).
 */
export const RUNTIME_FLAGS = [
  '--max-semi-space-size=1',
  '--max-old-space-size=128',
  '--use-openssl-ca',
] as const;

/** The V8 startup snapshot of a function, next to its bundle (scripts/snapshot.ts builds it). */
export function snapshotBlob(name: FunctionName): string {
  return `dist/${name}.blob`;
}

/** How the image starts a function: `command` is the ENTRYPOINT, `args` what knative/ passes. */
export interface ImageStart {
  readonly command: readonly string[];
  readonly args: readonly string[];
}

/** The start of `name` from its snapshot, relative to the image's working directory (/app). */
export function imageStart(name: FunctionName): ImageStart {
  return { command: [IMAGE_NODE, ...RUNTIME_FLAGS], args: ['--snapshot-blob', snapshotBlob(name)] };
}
