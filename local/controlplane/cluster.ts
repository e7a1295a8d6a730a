/**
 * A real Kubernetes control plane for tests: etcd, kube-apiserver and kube-controller-manager (garbage
 * collector and namespace controller only) as separate processes on free ports, PKI in a temp dir.
 * @module
 */
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeAdmissionConfig } from './admission-config.js';
import { ensureBinaries } from './binaries.js';
import type { Answer } from './http.js';
import { requestText } from './http.js';
import type { ControlPlaneCerts, KeyPair } from './certs.js';
import { kubeconfigYaml, mintControlPlaneCerts, mintServingCert } from './certs.js';
import { testCrds, type KubeObject } from './crds.js';
import { runKubectl, toYaml } from './kubectl.js';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  killNow,
  onFreePorts,
  startProcess,
  stopPid,
  tail,
  waitFor,
  type Proc,
  type StartOptions,
} from './process.js';

/** Options of {@link startControlPlane}. */
export interface ControlPlaneOptions {
  /** Working directory (certs, etcd data, logs); a fresh temp dir by default. */
  dir?: string;
  /** Directory with etcd, kube-apiserver, kube-controller-manager, kubectl; built via build.sh if unset. */
  binDir?: string;
  /** CRDs to install before the controller manager starts; testCrds() by default. */
  crds?: KubeObject[];
  /** Leave the processes running when this Node process exits (the `cluster up` CLI). */
  detached?: boolean;
  /** Keep the working directory on stop(), for post-mortems. */
  keepDir?: boolean;
  /** Per-component readiness timeout. */
  timeoutMs?: number;
  /** Progress output; silent by default. */
  log?: (line: string) => void;
  /** Picks each port a component listens on; `freePort` by default (tests hand out taken ones). */
  port?: () => Promise<number>;
}

/** What a running control plane offers to tests. */
export interface ControlPlane {
  dir: string;
  binDir: string;
  kubeconfigPath: string;
  /** `https://127.0.0.1:<port>` of kube-apiserver. */
  server: string;
  /** `http://127.0.0.1:<port>`: etcd's client URL, where its /metrics are too. */
  etcdUrl: string;
  certs: ControlPlaneCerts;
  /** PIDs by component (also their process-group ids). */
  pids: Record<string, number>;
  /** Runs kubectl against this plane. */
  kubectl(args: string[], input?: string): Promise<string>;
  /** Server-side applies objects or a YAML stream. */
  applyManifest(objects: readonly object[] | string): Promise<string>;
  /** A serving cert for `<service>.<namespace>.svc`, 127.0.0.1 and localhost (CA: certs.webhookCa). */
  mintServingCert(service: string, namespace: string): KeyPair;
  /** Resident memory (MiB) per component, now and peak, from /proc (Linux only). */
  memory(): Record<string, { rssMiB: number; peakMiB: number }>;
  /**
   * Stops one component (SIGKILL by default: a crash) and starts it again on the same ports with the
   * same data directory, waiting until it is ready; resolves with how long it was down.
   */
  restart(component: Restartable, opts?: RestartOptions): Promise<{ downMs: number }>;
  /**
   * Stops every component (reverse order) and removes the working directory. Idempotent.
   * `graceMs`: how long each may take to exit on SIGTERM before SIGKILL (default 5 s); 0 kills at
   * once, for a plane whose data is thrown away (a graceful kube-apiserver exit takes seconds).
   */
  stop(opts?: { graceMs?: number }): Promise<void>;
}

/** The components {@link ControlPlane.restart} can restart in place. */
export type Restartable = 'etcd' | 'kube-apiserver';

/** How a component is restarted. */
export interface RestartOptions {
  /** SIGKILL (a crash, the default) or SIGTERM (a graceful stop). */
  readonly signal?: 'SIGKILL' | 'SIGTERM';
  /** Extra time the component stays down before it is started again. */
  readonly downMs?: number;
}

/** VmRSS and VmHWM of a PID in MiB; zeros when /proc is unavailable or the process is gone. */
function procMemory(pid: number): { rssMiB: number; peakMiB: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (key: string) =>
      Number(new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
    return { rssMiB: Math.round(kib('VmRSS') / 1024), peakMiB: Math.round(kib('VmHWM') / 1024) };
  } catch {
    return { rssMiB: 0, peakMiB: 0 };
  }
}

function get(url: string, certs?: ControlPlaneCerts): Promise<Answer> {
  return requestText({
    url,
    timeoutMs: 5000,
    ...(certs ? { ca: certs.servingCa.certPem, client: certs.admin } : {}),
  });
}

/**
 * Stops PIDs all at once (a throwaway plane needs no orderly shutdown, and one after another took
 * seconds); used by stop() and by the CLI from a state file.
 */
export async function stopPids(
  pids: readonly number[],
  binDir?: string,
  graceMs?: number,
): Promise<void> {
  // PIDs recorded by an earlier run may have been reused (pid_max is small here): only signal a
  // process that still runs one of our binaries.
  const ours = pids.filter((pid) => binDir === undefined || runsFrom(pid, binDir));
  await Promise.all(ours.map((pid) => stopPid(pid, graceMs)));
}

/** True when the process's executable lives in `dir` (false when it is gone or unreadable). */
export function runsFrom(pid: number, dir: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0]?.startsWith(dir) ?? false;
  } catch {
    return false;
  }
}

/** Applies the CRDs and waits until the API server serves every one of them. */
async function installCrds(kubectl: ControlPlane['kubectl'], crds: KubeObject[]): Promise<void> {
  if (crds.length === 0) return;
  await kubectl(['apply', '--server-side', '--force-conflicts', '-f', '-'], toYaml(crds));
  const names = crds.map((c) => `crd/${c.metadata.name}`);
  // kubectl wait gives up at once on a CRD created a moment ago whose status has no conditions yet
  // ("accessor error: <nil>"): that answer means "not yet", so it is asked again.
  for (let attempt = 1; ; attempt++) {
    try {
      await kubectl(['wait', '--for=condition=Established', '--timeout=60s', ...names]);
      return;
    } catch (err) {
      if (attempt >= 50 || !String(err).includes('.status.conditions accessor error')) throw err;
      await sleep(100);
    }
  }
}

/**
 * Starts etcd → kube-apiserver → CRDs → kube-controller-manager. On any failure everything already
 * started is stopped before the error (with the failing component's log) is thrown.
 */
export async function startControlPlane(opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const log = opts.log ?? (() => undefined);
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const binDir = opts.binDir ?? (await ensureBinaries('k8s'));
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'vmpool-cp-'));
  mkdirSync(dir, { recursive: true });
  const procs: Proc[] = [];
  // A forced stop (this process killed) removes a throwaway plane's data too: the watchdogs do it.
  const forced = opts.detached !== true && opts.keepDir !== true ? { cleanup: dir } : {};
  /** How a component of the plane is started: its binary, its log in the plane's directory. */
  const component = (name: string) => ({
    watchdog: opts.detached !== true,
    ...forced,
    name,
    bin: join(binDir, name),
    logPath: join(dir, `${name}.log`),
  });
  /** How each restartable component was started and how its readiness is told. */
  const specs = new Map<string, { start: StartOptions; ready: (p: Proc) => Promise<void> }>();
  const launch = async (start: StartOptions, ready: (p: Proc) => Promise<void>): Promise<Proc> => {
    const p = startProcess(start);
    procs.push(p);
    specs.set(start.name, { start, ready });
    await ready(p);
    return p;
  };
  const exitHook = () => {
    for (const p of procs) killNow(p.pid);
  };
  if (opts.detached !== true) process.on('exit', exitHook);
  // A port is found free and then bound by the child: another process may bind it in between. The
  // child that failed is the last one launched, and it exited: forgotten, nothing of it to stop.
  const freshPorts = {
    ...(opts.port === undefined ? {} : { port: opts.port }),
    retried: (ports: readonly number[]) => {
      procs.pop();
      log(`a port of ${ports.join(', ')} was taken before use: starting again on fresh ports`);
    },
  };
  let stopped = false;
  const stop = async (removeDir = opts.keepDir !== true, graceMs?: number) => {
    if (stopped) return;
    stopped = true;
    await stopPids(procs.map((p) => p.pid).reverse(), undefined, graceMs);
    process.off('exit', exitHook);
    if (removeDir) rmSync(dir, { recursive: true, force: true });
  };

  try {
    const t0 = Date.now();
    const pki = join(dir, 'pki');
    mkdirSync(pki, { recursive: true });
    const certs = mintControlPlaneCerts(pki);
    log(`certificates minted in ${Date.now() - t0} ms`);

    const etcdUrl = await onFreePorts(
      2,
      async ([etcdPort, peerPort]) => {
        const etcdUrl = `http://127.0.0.1:${String(etcdPort)}`;
        const peerUrl = `http://127.0.0.1:${String(peerPort)}`;
        // A failed attempt may have left a member whose peer URL is not this one.
        rmSync(join(dir, 'etcd'), { recursive: true, force: true });
        await launch(
          {
            ...component('etcd'),
            args: [
              `--data-dir=${join(dir, 'etcd')}`,
              `--listen-client-urls=${etcdUrl}`,
              `--advertise-client-urls=${etcdUrl}`,
              `--listen-peer-urls=${peerUrl}`,
              // Otherwise it advertises the default localhost:2380, a port another etcd on the host may own.
              `--initial-advertise-peer-urls=${peerUrl}`,
              `--initial-cluster=default=${peerUrl}`,
              '--unsafe-no-fsync=true',
              '--log-level=warn',
            ],
          },
          (proc) =>
            waitFor('etcd /health', async () => (await get(`${etcdUrl}/health`)).status === 200, {
              timeoutMs,
              proc,
            }),
        );
        return etcdUrl;
      },
      freshPorts,
    );
    log(`etcd ready at ${etcdUrl} (${Date.now() - t0} ms)`);

    const server = await onFreePorts(
      1,
      async ([apiPort]) => {
        const server = `https://127.0.0.1:${String(apiPort)}`;
        await launch(
          {
            ...component('kube-apiserver'),
            args: [
              `--etcd-servers=${etcdUrl}`,
              '--bind-address=127.0.0.1',
              '--advertise-address=127.0.0.1',
              `--secure-port=${apiPort}`,
              `--cert-dir=${pki}`,
              `--tls-cert-file=${certs.apiserver.certPath}`,
              `--tls-private-key-file=${certs.apiserver.keyPath}`,
              `--client-ca-file=${certs.clientCa.certPath}`,
              `--service-account-issuer=${server}`,
              `--service-account-key-file=${certs.serviceAccount.pubPath}`,
              `--service-account-signing-key-file=${certs.serviceAccount.keyPath}`,
              '--service-cluster-ip-range=10.0.0.0/24',
              '--authorization-mode=RBAC',
              '--allow-privileged=true',
              '--disable-admission-plugins=ServiceAccount',
              // As on hardened (and OpenShift-style) clusters: an ownerReference with blockOwnerDeletion
              // needs `update` on the owner's finalizers, so the shipped RBAC must grant it.
              '--enable-admission-plugins=OwnerReferencesPermissionEnforcement',
              '--endpoint-reconciler-type=none',
              `--requestheader-client-ca-file=${certs.frontProxyCa.certPath}`,
              '--requestheader-allowed-names=front-proxy-client',
              '--requestheader-username-headers=X-Remote-User',
              // Published in extension-apiserver-authentication, so aggregated APIs may trust the uid.
              '--requestheader-uid-headers=X-Remote-Uid',
              '--requestheader-group-headers=X-Remote-Group',
              '--requestheader-extra-headers-prefix=X-Remote-Extra-',
              `--proxy-client-cert-file=${certs.frontProxyClient.certPath}`,
              `--proxy-client-key-file=${certs.frontProxyClient.keyPath}`,
              // A client certificate for webhooks, so scale-validate can accept the API server alone.
              `--admission-control-config-file=${writeAdmissionConfig(pki, certs.webhookClient)}`,
            ],
          },
          (proc) =>
            waitFor(
              'kube-apiserver /readyz',
              async () => (await get(`${server}/readyz`, certs)).status === 200,
              { timeoutMs, proc, intervalMs: 200 },
            ),
        );
        return server;
      },
      freshPorts,
    );
    log(`kube-apiserver ready at ${server} (${Date.now() - t0} ms)`);

    const kubeconfigPath = join(dir, 'kubeconfig');
    writeFileSync(kubeconfigPath, kubeconfigYaml(server, certs.servingCa, certs.admin), {
      mode: 0o600,
    });
    const kubectl = (args: string[], input?: string) =>
      runKubectl(join(binDir, 'kubectl'), kubeconfigPath, args, input);

    // CRDs before the controller manager: its garbage collector only re-discovers resources every 30 s.
    await installCrds(kubectl, opts.crds ?? testCrds());
    log(`CRDs established (${Date.now() - t0} ms)`);

    const kcm = startProcess({
      ...component('kube-controller-manager'),
      args: [
        `--kubeconfig=${kubeconfigPath}`,
        '--controllers=garbage-collector-controller,namespace-controller',
        '--leader-elect=false',
        // No serving port: the default binds 0.0.0.0:10257, so two planes on one host would collide.
        // No SA key or root CA flags: only the token controllers need them, and they are not started.
        '--secure-port=0',
        '--use-service-account-credentials=false',
      ],
    });
    procs.push(kcm);
    await waitFor(
      'kube-controller-manager to start its garbage collector',
      () =>
        Promise.resolve(
          /Started controller.*garbage-collector|garbagecollector.*[Ss]ynced|Started garbage collector/.test(
            tail(kcm.logPath, 400, kcm.logFrom),
          ),
        ),
      { timeoutMs, proc: kcm, intervalMs: 100 },
    );
    log(`kube-controller-manager running (${Date.now() - t0} ms)`);

    const plane: ControlPlane = {
      dir,
      binDir,
      kubeconfigPath,
      server,
      etcdUrl,
      certs,
      pids: Object.fromEntries(procs.map((p) => [p.name, p.pid])),
      kubectl,
      applyManifest: (objects) =>
        kubectl(['apply', '--server-side', '--force-conflicts', '-f', '-'], toYaml(objects)),
      mintServingCert: (service, namespace) => mintServingCert(certs, service, namespace),
      memory: () => Object.fromEntries(procs.map((p) => [p.name, procMemory(p.pid)])),
      async restart(component, { signal = 'SIGKILL', downMs = 0 } = {}) {
        const spec = specs.get(component);
        const at = procs.findIndex((p) => p.name === component);
        const old = procs[at];
        if (spec === undefined || old === undefined) throw new Error(`no ${component} to restart`);
        const t0 = performance.now();
        if (signal === 'SIGKILL') killNow(old.pid);
        else await stopPid(old.pid);
        await old.exited;
        if (downMs > 0) await sleep(downMs);
        const next = startProcess(spec.start);
        procs[at] = next;
        plane.pids[component] = next.pid;
        await spec.ready(next);
        return { downMs: Math.round(performance.now() - t0) };
      },
      stop: (o) => stop(undefined, o?.graceMs),
    };
    return plane;
  } catch (err) {
    // Keep the directory: the component logs in it are the only explanation of a failed start.
    await stop(false).catch(() => undefined);
    const msg = err instanceof Error ? err.message : String(err);
    throw new Error(`control plane failed to start (logs kept in ${dir}): ${msg}`, { cause: err });
  }
}
