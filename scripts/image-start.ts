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
 * the V8 flags that built it). The young generation is small, to keep a function's memory low, but
 * not 1 MiB: with 16 creates in flight, reconcile-pool under a 1 MiB one spent 1.1 s of a 0→1000
 * scale-up's 6.0 s of CPU collecting garbage (the raw loop 85 ms), and 4 MiB took about a quarter
 * off its CPU for at most 6 MiB more heap (docs/performance.md, "The functions' young
 * generation"). The old space is capped at half the pods' 256 Mi limit: in a 256 MiB memory cgroup Node sizes its heap
 * limit to 259 MB, the whole limit, so V8 let garbage pile up until the kernel, not V8, would act
 * (a resync tick peaked at 130 MiB unconstrained, 99 MiB with the old space capped at 96 or 64).
 * `--use-openssl-ca` skips building Node's bundled root store at the first TLS connection: the
 * functions trust the API server's CA they are given (kubeconfig, service account), not public
 * roots; a kubeconfig without a CA needs `SSL_CERT_FILE` (knative/README.md).
 */
export const RUNTIME_FLAGS = [
  '--max-semi-space-size=4',
  '--max-old-space-size=128',
  '--use-openssl-ca',
] as const;

/**
 * The environment every function runs with (the Containerfile's ENV). glibc gives each thread that
 * allocates its own arena (up to 8 per core) and gives little of it back; V8's background threads
 * (concurrent marking, the compilers) allocate beside the main thread. A resync tick started from
 * the snapshot grew 20 MiB above the same code started from its bundle with its JS heap at 25–31 MB
 * at every mark-compact (`--trace-gc`): the growth was arenas, not the heap. With one arena a
 * 3,000-pool tick peaked at 100 MiB against 116 MiB, in the same time.
 */
export const RUNTIME_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '1' };

/** The V8 startup snapshot of a function, next to its bundle (scripts/snapshot.ts builds it). */
export function snapshotBlob(name: FunctionName): string {
  return `dist/${name}.blob`;
}

/**
 * How the image starts a function: `command` is the ENTRYPOINT, `args` what knative/ passes, `env`
 * what the image's ENV sets for it.
 */
export interface ImageStart {
  readonly command: readonly string[];
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
}

/** The start of `name` from its snapshot, relative to the image's working directory (/app). */
export function imageStart(name: FunctionName): ImageStart {
  return {
    command: [IMAGE_NODE, ...RUNTIME_FLAGS],
    args: ['--snapshot-blob', snapshotBlob(name)],
    env: RUNTIME_ENV,
  };
}
