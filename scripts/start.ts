/**
 * `npm start`: vmpool working in one command. Starts the project's local control plane (or attaches
 * to a cluster with --kubeconfig), runs the four functions in this process, feeds reconcile-pool from
 * the real ApiServerSource adapter (or a watch bridge), ticks resync and disk GC, simulates the
 * platform, creates the user guide's sample pool and prints what to try.
 *
 *   npm start [-- --kubeconfig FILE] [--simulate-platform] [--no-sample] [--take-over]
 *             [--scaledownwith-group GROUP] [--scaledownwith-user USER]
 *             [simulator flags: local/simulator/flags.ts]
 *   npm start -- --kubeconfig FILE --uninstall
 *
 * Any stop stops everything: SIGINT or SIGTERM to npm, tsx or this node process, the end of npm or
 * tsx however they end (this process watches them), and SIGKILL of this process (the children's
 * watchdogs kill them and remove their data). Registrations go first. `--uninstall` removes the
 * registrations a dead run left (local/registrations.ts) and nothing else.
 *
 * Where the API server calls this process (a local plane), each function acts as a ServiceAccount
 * name of its own, `system:serviceaccount:vmpool-local:<function>` (local/identities.ts), and the
 * webhook lets only scale-down-with's add scaledownwith targets (--scaledownwith-user changes that,
 * `*` lets anyone).
 *
 * Attached to a cluster it shares, it writes only what it owns (local/install.ts,
 * docs/operations.md "Attach mode"): an object of its names that is somebody else's is left alone
 * unless --take-over says so.
 */
import { pingInit } from '../local/events.js';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import { buildGcApp } from '../functions/disk-gc-tick/app.js';
import { buildReconcileApp } from '../functions/reconcile-pool/app.js';
import { buildScaleDownApp } from '../functions/scale-down-with/app.js';
import { buildValidateApp } from '../functions/scale-validate/app.js';
import { SUBRESOURCES_GROUP, describeRef, refOf, scaleDownWithPath } from '../shared/api/index.js';
import type { Malformed, ObjectRef, StoredObject } from '../shared/api/index.js';
import {
  caFile,
  createFunctionMetrics,
  createLogger,
  logMalformed,
  serveApp,
} from '../shared/http/index.js';
import type { ServedApp } from '../shared/http/index.js';
import { createKube, createManifests } from '../shared/kube/index.js';
import type { Kube } from '../shared/kube/index.js';
import { ANY_RECORDER } from '../shared/domain/index.js';
import { impersonatedGroups, impersonating, serviceAccountUser } from '../local/identities.js';
import { startPoolSources } from '../local/controlplane/adapter.js';
import { WATCH_TRIGGER } from '../local/controlplane/trigger.js';
import { onLaunchersGone, removeWhenGone } from '../local/controlplane/process.js';
import { recordRun } from '../local/controlplane/runs.js';
import type { RunRecord } from '../local/controlplane/runs.js';
import { removeRunRegistrations } from '../local/registrations.js';
import {
  REPO_ROOT,
  buildSeconds,
  cachedBinaries,
  ensureBinaries,
} from '../local/controlplane/binaries.js';
import { DEFAULT_SECONDS, createBuildProgress } from '../local/controlplane/progress.js';
import { WEBHOOK_CLIENT_CN } from '../local/controlplane/admission-config.js';
import { mintCa, mintLeaf } from '../local/controlplane/certs.js';
import { startControlPlane } from '../local/controlplane/cluster.js';
import type { ControlPlane } from '../local/controlplane/cluster.js';
import { platformCrds } from '../local/controlplane/crds.js';
import { startSimulator } from '../local/simulator/simulator.js';
import { SIMULATOR_USAGE, simulatorFlags, simulatorOptions } from '../local/simulator/flags.js';
import type { Simulator } from '../local/simulator/simulator.js';
import type { Installed } from '../local/install.js';
import {
  installIfMissing,
  installOwned,
  installClaimCrd,
  installPoolCrd,
  removeOwned,
  restoreTakenOver,
} from '../local/install.js';
import { FIELD_MANAGER, provenance } from '../local/ownership.js';
import { startBridge } from '../local/bridge.js';
import { SAMPLE_NAMESPACE, sample } from '../local/sample.js';
import { SCALE_DOWN_SERVICE, apiServiceName, chooseGroup, wiring } from '../local/wiring.js';

const { values: flags } = parseArgs({
  options: {
    kubeconfig: { type: 'string' },
    'simulate-platform': { type: 'boolean', default: false },
    ...simulatorFlags,
    'no-sample': { type: 'boolean', default: false },
    'take-over': { type: 'boolean', default: false },
    uninstall: { type: 'boolean', default: false },
    'scaledownwith-group': { type: 'string' },
    'scaledownwith-user': { type: 'string' },
    'resync-seconds': { type: 'string', default: '30' },
    'gc-seconds': { type: 'string', default: '60' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});

if (flags.help) {
  console.log(
    `usage: npm start [-- --kubeconfig FILE] [--simulate-platform] [--no-sample] [--take-over] [--scaledownwith-group GROUP] [--scaledownwith-user USER] ${SIMULATOR_USAGE}\n       npm start -- --kubeconfig FILE --uninstall`,
  );
  process.exit(0);
}

const log = createLogger('vmpool');
/**
 * How long Ctrl-C waits for in-flight requests before closing connections: the kube-apiserver keeps
 * connections to the webhook and the aggregated API open, and nothing here needs a long drain.
 */
const SHUTDOWN_MS = 300;
const say = (line: string): void => {
  log.info(line);
};
/**
 * What Ctrl-C undoes. Everything but the control plane stops at once, in parallel (each step is
 * independent: registrations are removed while the API server still runs); the plane goes last.
 */
const stoppers: Array<{
  readonly name: string;
  /** Runs last: the control plane. */
  readonly plane?: true;
  /** Runs first, alone: the registrations that point the API server at this process. */
  readonly first?: true;
  readonly run: () => unknown;
}> = [];
/**
 * A stop's budget: past it, whatever is left is killed and the process exits anyway (npm and tsx
 * exit right after, within the 3 s a stop is promised).
 */
const STOP_BUDGET_MS = 2200;

async function main(): Promise<void> {
  const t0 = Date.now();
  const attach = flags.kubeconfig !== undefined;
  // SIGTERM to npm alone ends npm and leaves tsx and this process; so do SIGKILLs of either.
  onLaunchersGone((pid) => {
    say(`the process that started this one (pid ${String(pid)}) is gone: stopping`);
    void stop(0);
  });
  if (flags.uninstall) {
    await uninstall();
    return;
  }
  let kubeconfigPath: string;
  let cp: ControlPlane | undefined;
  if (attach) {
    kubeconfigPath = flags.kubeconfig ?? '';
    if (!existsSync(kubeconfigPath))
      throw new Error(`--kubeconfig ${kubeconfigPath}: no such file`);
  } else {
    say('starting the local control plane (the first run builds it from Go modules: minutes)');
    const progress = createBuildProgress(process.stderr, { ...DEFAULT_SECONDS, ...buildSeconds() });
    const binDir = await ensureBinaries('k8s', (l) => {
      progress.line(l);
    }).finally(() => {
      progress.end();
    });
    cp = await startControlPlane({
      binDir,
      log: (l) => {
        say(`control plane: ${l}`);
      },
    });
    // Recorded so a later `npm run cluster -- down` finds it should this run die without its stop.
    const plane = cp;
    run = {
      owner: process.pid,
      server: cp.server,
      startedAt: new Date().toISOString(),
      processes: Object.entries(cp.pids).map(([name, pid]) => ({
        name,
        pid,
        binDir: plane.binDir,
      })),
      dirs: [cp.dir],
    };
    const record = recordRun(run);
    removeWhenGone([record]);
    // The embedded plane's data is removed on stop: killing it at once saves its graceful exit.
    stoppers.push({
      name: 'control plane',
      plane: true,
      run: async () => {
        await cp?.stop({ graceMs: 0 });
        rmSync(record, { force: true });
      },
    });
    kubeconfigPath = cp.kubeconfigPath;
  }
  process.env.KUBECONFIG = kubeconfigPath;
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  const server = kc.getCurrentCluster()?.server ?? '';
  const manifests = createManifests(kc, { fieldManager: FIELD_MANAGER });
  const install = { manifests, takeOver: flags['take-over'] };
  if (attach) {
    const crd = must(await installPoolCrd(install));
    say(`${describeRef(refOf(crd.object))}: ${crd.action}; the served schema is vmpool's`);
    const claims = must(await installClaimCrd(install));
    say(`${describeRef(refOf(claims.object))}: ${claims.action}; the served schema is vmpool's`);
    // The platform's CRDs are the platform's: created only where missing, never updated.
    if (flags['simulate-platform'])
      for (const c of platformCrds()) {
        const r = must(await installIfMissing(install, c));
        say(
          r.action === 'present'
            ? `${describeRef(refOf(c))} exists (${provenance(r.object)}): used as it is`
            : `${describeRef(refOf(c))}: created (the simulator's stand-in for the platform's)`,
        );
      }
  }
  // The API server can call us when it runs on this machine (the local plane, `npm run cluster`).
  const local = /^https:\/\/(127\.0\.0\.1|localhost)(:|\/|$)/.test(server);
  const registered = await manifests.get({
    apiVersion: 'apiregistration.k8s.io/v1',
    kind: 'APIService',
    name: apiServiceName(SUBRESOURCES_GROUP),
  });
  if (!registered.ok && registered.reason !== 'notFound')
    throw new Error(`cannot read the APIService of ${SUBRESOURCES_GROUP}: ${registered.message}`);
  const choice = chooseGroup(
    flags['scaledownwith-group'] ?? process.env.SCALEDOWNWITH_GROUP,
    registered.ok ? registered.value : undefined,
  );
  const group = choice.group;

  const metrics = createFunctionMetrics();
  const kubeOptions = {
    onRequest: (verb: string, outcome: string, seconds: number): void => {
      metrics.onApiRequest(verb, outcome, seconds);
    },
    onMalformed: (m: Malformed): void => {
      logMalformed(log, m);
    },
  };
  const kube = createKube(kc, kubeOptions);
  const fnLog = (name: string) => log.child({ function: name });
  // Identities of their own where the API server calls us (the webhook judges who writes), when the
  // kubeconfig's user may impersonate them; otherwise every function acts as that user.
  const asItself = local && (await mayImpersonate(kc));
  const kubeOf = (fn: string): Kube =>
    asItself
      ? createKube(
          impersonating(
            kc,
            serviceAccountUser(LOCAL_NAMESPACE, fn),
            impersonatedGroups(LOCAL_NAMESPACE),
          ),
          kubeOptions,
        )
      : kube;
  const recorder =
    flags['scaledownwith-user'] ??
    (asItself ? serviceAccountUser(LOCAL_NAMESPACE, 'scale-down-with') : ANY_RECORDER);
  if (local)
    say(
      asItself
        ? `functions act as system:serviceaccount:${LOCAL_NAMESPACE}:<function> (impersonated); scaledownwith targets may be added by ${recorder === ANY_RECORDER ? 'anyone' : recorder}`
        : `the kubeconfig's user cannot impersonate: every function acts as that user, and scaledownwith targets may be added by ${recorder === ANY_RECORDER ? 'anyone (members are still checked)' : recorder}`,
    );

  // HTTPS for the two endpoints the kube-apiserver calls: a CA of our own for this run.
  const pki = mkdtempSync(join(tmpdir(), 'vmpool-start-'));
  removeWhenGone([pki]);
  remember({ dirs: [pki] });
  stoppers.push({
    name: 'certificates',
    run: () => {
      rmSync(pki, { recursive: true, force: true });
    },
  });
  const ca = mintCa(pki, 'local-ca', 'vmpool-local-ca');
  const host = `${SCALE_DOWN_SERVICE}.vmpool-local.svc`;
  const leaf = mintLeaf(pki, 'serving', ca, {
    cn: host,
    sans: ['127.0.0.1', 'localhost', host],
    usage: 'server',
  });
  const tls = { certFile: leaf.certPath, keyFile: leaf.keyPath };

  const served: Array<[string, ServedApp]> = [
    [
      'reconcile-pool',
      serveApp(
        buildReconcileApp({
          kube: kubeOf('reconcile-pool'),
          log: fnLog('reconcile-pool'),
          metrics,
        }),
        {
          port: 0,
          hostname: '127.0.0.1',
          handleSignals: false,
          shutdownTimeoutMs: SHUTDOWN_MS,
        },
      ),
    ],
    [
      'disk-gc-tick',
      serveApp(buildGcApp({ kube: kubeOf('disk-gc-tick'), log: fnLog('disk-gc-tick'), metrics }), {
        port: 0,
        hostname: '127.0.0.1',
        handleSignals: false,
        shutdownTimeoutMs: SHUTDOWN_MS,
      }),
    ],
    [
      'scale-validate',
      // On the embedded plane the API server presents a client certificate to webhooks, so the
      // webhook takes reviews from it alone, as WEBHOOK_CLIENT_CA_FILE makes it in a cluster.
      serveApp(
        buildValidateApp({
          kube: kubeOf('scale-validate'),
          log: fnLog('scale-validate'),
          metrics,
          recorder,
          ...(cp === undefined
            ? {}
            : {
                clientCa: caFile(cp.certs.webhookClientCa.certPath),
                clientNames: [WEBHOOK_CLIENT_CN],
              }),
        }),
        {
          port: 0,
          hostname: '127.0.0.1',
          handleSignals: false,
          shutdownTimeoutMs: SHUTDOWN_MS,
          tls: { ...tls, requestCert: cp !== undefined },
        },
      ),
    ],
    [
      'scale-down-with',
      serveApp(
        buildScaleDownApp({
          kube: kubeOf('scale-down-with'),
          log: fnLog('scale-down-with'),
          metrics,
          group,
        }),
        {
          port: 0,
          hostname: '127.0.0.1',
          handleSignals: false,
          shutdownTimeoutMs: SHUTDOWN_MS,
          tls: { ...tls, requestCert: true },
        },
      ),
    ],
  ];
  stoppers.push({ name: 'functions', run: () => Promise.all(served.map(([, s]) => s.close())) });
  const ports = Object.fromEntries(
    await Promise.all(served.map(async ([n, s]) => [n, (await s.listening).port] as const)),
  );
  for (const [n, p] of Object.entries(ports)) say(`${n} listening on 127.0.0.1:${p}`);
  const reconcileUrl = `http://127.0.0.1:${ports['reconcile-pool'] ?? 0}/`;
  const gcUrl = `http://127.0.0.1:${ports['disk-gc-tick'] ?? 0}/`;

  if (local) {
    const objects = wiring({
      validatePort: ports['scale-validate'] ?? 0,
      scaleDownPort: ports['scale-down-with'] ?? 0,
      caPem: readFileSync(ca.certPath, 'utf8'),
      namespace: LOCAL_NAMESPACE,
      group,
    });
    // What a run that died without its stop left points at a dead process: removed first.
    for (const line of await removeRunRegistrations(manifests, LOCAL_NAMESPACE))
      say(`left by an earlier run: ${line}`);
    const applied: Array<{ readonly ref: ObjectRef; readonly previous?: StoredObject }> = [];
    // Undone on stop, only while still vmpool's: removed, or what a take-over replaced put back.
    stoppers.push({
      name: 'webhook and APIService',
      first: true,
      run: async () => {
        // All at once: they are independent, and a slow API server must not spend the stop's
        // budget on one while the others still point at this process.
        const problems = await Promise.all(
          applied.map(({ ref, previous }) =>
            previous === undefined
              ? removeOwned(manifests, ref)
              : restoreTakenOver(manifests, previous),
          ),
        );
        for (const problem of problems) if (problem !== undefined) log.warn(problem);
      },
    });
    for (const o of objects) {
      const ref = refOf(o);
      if (ref.kind === 'Namespace') {
        must(await installIfMissing(install, o));
        continue;
      }
      const done = must(await installOwned(install, o, ADVICE_WHEN_TAKEN[ref.kind] ?? ''));
      applied.push(done.previous === undefined ? { ref } : { ref, previous: done.previous });
      if (done.action === 'tookOver')
        say(`${describeRef(ref)}: taken over; what was there is put back on Ctrl-C`);
    }
    say('registered the admission webhook and the scaledownwith APIService');
    say(`scaledownwith group: ${choice.why}`);
    say(`scaledownwith path: POST ${scaleDownWithPath(group, '<namespace>', '<pool>')}`);
  } else {
    say(`${server} cannot reach this process: webhook and APIService not registered`);
  }

  const simulate = !attach || flags['simulate-platform'];
  let sim: Simulator | undefined;
  if (simulate) {
    sim = startSimulator({ kubeconfigPath, seed: 1, ...simulatorOptions(flags) });
    stoppers.push({ name: 'simulator', run: () => sim?.stop() });
    say('platform simulator running (VMs become Running, disks Ready)');
  }

  // Warm the API server's watch cache of pools first. For a CRD installed moments ago the adapters'
  // initial list would wait for that cache, and pools created meanwhile arrive inside that list,
  // which an ApiServerSource does not turn into events: they would wait for the next resync tick.
  const warm = await kube.listPools();
  if (!warm.ok) log.warn({ err: warm.message }, 'cannot list pools yet');

  // The real adapter when it is built; otherwise a bridge that sends the same events, so a first
  // run does not wait minutes for a second build (npm test builds the adapter).
  const adapterBin = cachedBinaries('knative');
  if (adapterBin !== undefined) {
    const adapters = await startPoolSources({
      kubeconfigPath,
      binDir: adapterBin,
      sink: reconcileUrl,
      name: 'vmpool',
      trigger: WATCH_TRIGGER,
    });
    stoppers.push({ name: 'adapters', run: () => Promise.all(adapters.map((a) => a.stop())) });
    remember({
      processes: adapters.map((a) => ({ name: 'adapter', pid: a.pid, binDir: adapterBin })),
      dirs: adapters.map((a) => dirname(a.logPath)),
    });
    say('Knative ApiServerSource adapters feeding reconcile-pool');
  } else {
    const bridge = startBridge(kc, reconcileUrl, say);
    stoppers.push({
      name: 'watch bridge',
      run: () => {
        bridge.stop();
      },
    });
    say(
      'the Knative adapter is not built (local/controlplane/build.sh knative): a built-in watch bridge sends the same CloudEvents',
    );
  }

  const tick = (url: string) => () =>
    void fetch(url, pingInit({}, '/apis/v1/namespaces/vmpool-local/pingsources/local')).catch(
      () => undefined,
    );
  const timers = [
    setInterval(tick(reconcileUrl), Number(flags['resync-seconds']) * 1000),
    setInterval(tick(gcUrl), Number(flags['gc-seconds']) * 1000),
  ];
  stoppers.push({
    name: 'ticks',
    run: () => {
      for (const t of timers) clearInterval(t);
    },
  });
  // Pools that already exist (attaching to a cluster, or taking over the platform's) are in the
  // adapters' initial list, which sends no events: one resync now instead of after the first period.
  tick(reconcileUrl)();

  if (!flags['no-sample']) {
    for (const o of sample()) {
      const r = await manifests.apply(o);
      if (!r.ok) throw new Error(`apply ${describeRef(refOf(o))}: ${r.message}`);
    }
    say(`created the sample pool ${SAMPLE_NAMESPACE}/runners (3 replicas)`);
    const ready = await waitReady(kube, Date.now() + 120_000);
    say(
      ready
        ? `sample pool ready: 3/3 replicas Running after ${Date.now() - t0} ms`
        : 'sample pool not ready after 2 minutes; see the logs',
    );
  }
  const version = await manifests.request('GET', '/version');
  const gitVersion = version.ok
    ? (version.value as { gitVersion?: unknown }).gitVersion
    : undefined;
  printTryThis({
    kubeconfig: kubeconfigPath,
    ...(typeof gitVersion === 'string' ? { serverVersion: gitVersion } : {}),
    ...(cp === undefined ? {} : { binDir: cp.binDir }),
    ...(local ? { group } : {}),
    sample: !flags['no-sample'],
  });
}

/**
 * `--uninstall`: removes the registrations a run left (webhook configuration, APIService, Service),
 * only those vmpool made, never a pool, a VM or a disk; then exits.
 */
async function uninstall(): Promise<void> {
  const path = flags.kubeconfig;
  if (path === undefined) throw new Error('--uninstall needs --kubeconfig FILE');
  if (!existsSync(path)) throw new Error(`--kubeconfig ${path}: no such file`);
  const kc = new KubeConfig();
  kc.loadFromFile(path);
  const lines = await removeRunRegistrations(
    createManifests(kc, { fieldManager: FIELD_MANAGER }),
    LOCAL_NAMESPACE,
  );
  for (const line of lines) say(line);
  say(lines.length === 0 ? 'uninstall: no registration of vmpool found' : 'uninstall: done');
  process.exit(lines.some((l) => !l.startsWith('removed ')) ? 1 : 0);
}

/** What the operator can do when an object of vmpool's name is somebody else's, by kind. */
const ADVICE_WHEN_TAKEN: Readonly<Record<string, string>> = {
  ValidatingWebhookConfiguration:
    'Delete it if nothing uses it, or run again with --take-over to replace it.',
  APIService:
    "Choose another group with --scaledownwith-group, or run again with --take-over to replace it (on the virtualization platform never for subresources.virtualization.deckhouse.io: it serves every VM's console, VNC and hot-plug).",
  Service: 'Delete it if nothing uses it, or run again with --take-over to replace it.',
};

/** The installed object, or the refusal as the error that stops `npm start`. */
function must(r: Installed): Extract<Installed, { ok: true }> {
  if (!r.ok) throw new Error(r.message);
  return r;
}

/** What this run started, as recorded for `npm run cluster -- down` (embedded plane only). */
let run: RunRecord | undefined;

/** Adds processes or directories to the run's record. */
function remember(more: { processes?: RunRecord['processes']; dirs?: string[] }): void {
  if (run === undefined) return;
  run = {
    ...run,
    processes: [...run.processes, ...(more.processes ?? [])],
    dirs: [...run.dirs, ...(more.dirs ?? [])],
  };
  recordRun(run);
}

/** The namespace of npm start's own objects (wiring.ts) and of its functions' identities. */
const LOCAL_NAMESPACE = 'vmpool-local';

/**
 * Whether the kubeconfig's user may impersonate the functions' identities: one read as
 * scale-down-with answers anything but 403.
 */
async function mayImpersonate(kc: KubeConfig): Promise<boolean> {
  const probe = createKube(
    impersonating(
      kc,
      serviceAccountUser(LOCAL_NAMESPACE, 'scale-down-with'),
      impersonatedGroups(LOCAL_NAMESPACE),
    ),
  );
  const got = await probe.listPools(LOCAL_NAMESPACE);
  return got.ok || got.reason !== 'forbidden';
}

async function waitReady(kube: ReturnType<typeof createKube>, deadline: number): Promise<boolean> {
  while (Date.now() < deadline) {
    const p = await kube.getPool(SAMPLE_NAMESPACE, 'runners');
    if (p.ok && p.value.status?.readyReplicas === 3 && p.value.status.replicas === 3) return true;
    await new Promise((r) => setTimeout(r, 500));
  }
  return false;
}

/** What the closing hints are about: only what this run actually started. */
interface Started {
  readonly kubeconfig: string;
  /** The control plane's own kubectl (embedded plane), else the one on PATH. */
  readonly binDir?: string;
  /** The scaledownwith group, when the API server can reach this process. */
  readonly group?: string;
  /** The sample pool was created. */
  readonly sample: boolean;
  /** The API server's version (`/version`), for the word on version skew. */
  readonly serverVersion?: string;
}

/**
 * The closing hints, written as the README writes them: plain `kubectl …`, with `PATH` set once at
 * the top of the block (the plane's own kubectl, the plugin), then a word on version skew.
 */
function printTryThis(run: Started): void {
  const ns = SAMPLE_NAMESPACE;
  const pluginBuilt = existsSync(join(REPO_ROOT, 'dist', 'kubectl-vmpool.mjs'));
  const path = [
    ...(run.binDir === undefined ? [] : [run.binDir]),
    ...(pluginBuilt ? [join(REPO_ROOT, 'dist', 'bin')] : []),
  ];
  const why = [
    ...(run.binDir === undefined ? [] : ["the plane's own kubectl"]),
    ...(pluginBuilt ? ['the kubectl plugin'] : []),
  ];
  const server = run.serverVersion ?? 'the API server';
  const lines = [
    '',
    'vmpool is running. In another shell:',
    `  export KUBECONFIG=${run.kubeconfig}`,
    ...(path.length === 0
      ? []
      : [`  export PATH=${path.join(':')}:$PATH      # ${why.join(', ')}`]),
    ...(run.sample
      ? [
          `  kubectl get vmpool,vm,vd -n ${ns}`,
          `  kubectl scale virtualmachinepool/runners -n ${ns} --replicas=5`,
          `  kubectl delete vm -n ${ns} <one of the VMs>      # replaced under a fresh name`,
          ...(run.group === undefined
            ? []
            : [
                `  echo '{"targets": ["<a VM name>"]}' | kubectl create --raw ${scaleDownWithPath(run.group, ns, 'runners')} -f -`,
              ]),
        ]
      : [
          '  kubectl get vmpool,vm,vd -A',
          "  kubectl apply -f <a pool manifest>      # the user guide's examples work as they are",
        ]),
    ...(pluginBuilt
      ? [
          run.sample
            ? `  kubectl vmpool status runners -n ${ns}; kubectl vmpool victims runners -n ${ns} --count 2`
            : '  kubectl vmpool status <pool> -n <namespace>',
        ]
      : [
          '  (npm run build also makes the kubectl plugin: kubectl vmpool status|victims|scale-down-with)',
        ]),
    run.binDir === undefined
      ? `The API server is ${server}: a kubectl within one minor version of it is supported (Kubernetes' version skew policy); \`kubectl version\` shows both.`
      : `The plane's kubectl is ${server}, as its API server. A kubectl of your own (without the PATH line) works within one minor version of it (Kubernetes' version skew policy); \`kubectl version\` shows both.`,
    'Ctrl-C stops everything.',
    '',
  ];
  console.log(lines.join('\n'));
}

let stopping = false;
async function stop(code: number): Promise<void> {
  if (stopping) return;
  stopping = true;
  const t0 = performance.now();
  say('stopping');
  // Past the budget nothing is waited for: the plane's processes are in groups of their own that a
  // SIGKILL ends, and the exit hook of the plane kills them too.
  setTimeout(() => {
    log.warn(`stop took longer than ${STOP_BUDGET_MS} ms: exiting anyway`);
    process.exit(code);
  }, STOP_BUDGET_MS).unref();
  const timed = async (step: (typeof stoppers)[number]): Promise<void> => {
    const t = performance.now();
    try {
      await step.run();
    } catch (err) {
      log.warn({ err: String(err) }, `stopping the ${step.name} failed`);
    }
    say(`stopped the ${step.name} in ${String(Math.round(performance.now() - t))} ms`);
  };
  // The registrations first: while they point at this process, a stopped backend stalls the
  // cluster's garbage collector and namespace deletion (APIService) and refuses pool writes (webhook).
  await Promise.all(stoppers.filter((s) => s.first === true).map(timed));
  await Promise.all(stoppers.filter((s) => s.plane !== true && s.first !== true).map(timed));
  for (const s of stoppers.filter((x) => x.plane === true)) await timed(s);
  say(`stopped in ${String(Math.round(performance.now() - t0))} ms`);
  process.exit(code);
}
process.on('SIGINT', () => void stop(0));
process.on('SIGTERM', () => void stop(0));

main().catch((err: unknown) => {
  log.error({ err: err instanceof Error ? err.message : String(err) }, 'npm start failed');
  void stop(1);
});
