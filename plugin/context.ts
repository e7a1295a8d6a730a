/**
 * What every command of the plugin shares: the cluster as kubectl's flags pick it, the funnel to
 * it, and kubectl's ways of printing objects and errors.
 * @module
 */
import { KubeConfig } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import type { Kube, Manifests, Outcome } from '../shared/kube/index.js';
import { createKube, createManifests } from '../shared/kube/index.js';
import { statusReason } from '../shared/api/index.js';

/** kubectl's global flags the plugin honours. */
export interface GlobalFlags {
  readonly kubeconfig?: string;
  readonly context?: string;
  readonly namespace?: string;
  readonly output?: string;
}

/** A command's view of the cluster. */
export interface Ctx {
  readonly kube: Kube;
  readonly raw: Manifests;
  readonly namespace: string;
  /** `name` only where the command takes it (see {@link contextOf}'s `formats`). */
  readonly output: 'table' | 'json' | 'yaml' | 'name';
  readonly out: (line: string) => void;
  /** Progress for a person (stderr), kept out of what a script reads. */
  readonly err: (line: string) => void;
}

/** A failure the plugin reports as kubectl does, and the exit code that goes with it. */
export class CliError extends Error {}

/** The `-o` formats of a command besides its table. */
export type Formats = readonly ('json' | 'yaml' | 'name')[];

/**
 * The cluster, credentials and namespace as kubectl would choose them from the same flags.
 * `formats`: the `-o` values the command takes.
 */
export function contextOf(
  flags: GlobalFlags,
  out: (line: string) => void,
  err: (line: string) => void = () => undefined,
  formats: Formats = ['json', 'yaml'],
): Ctx {
  const kc = new KubeConfig();
  if (flags.kubeconfig !== undefined) loadFile(kc, flags.kubeconfig);
  else kc.loadFromDefault();
  // client-node's stand-in when no kubeconfig was found; kubectl tries it and is refused.
  const server = kc.getCurrentCluster()?.server ?? '';
  if (server === NO_CONFIG_SERVER) throw new CliError(refused('localhost:8080'));
  if (flags.context !== undefined) {
    if (kc.getContextObject(flags.context) === null)
      throw new CliError(`error: context "${flags.context}" does not exist`);
    kc.setCurrentContext(flags.context);
  }
  const namespace =
    flags.namespace ?? kc.getContextObject(kc.getCurrentContext())?.namespace ?? 'default';
  const output = flags.output ?? 'table';
  const format = formats.find((f) => f === output);
  if (output !== 'table' && format === undefined)
    throw new CliError(
      `error: unable to match a printer suitable for the output format "${output}", allowed formats are: ${formats.toSorted().join(',')}`,
    );
  return {
    kube: createKube(kc, { retry: { attempts: 2 } }),
    raw: createManifests(kc),
    namespace,
    output: format ?? 'table',
    out,
    err,
  };
}

/** The server client-node falls back to when there is no kubeconfig at all. */
const NO_CONFIG_SERVER = 'http://localhost:8080';

/** kubectl's words for a server nobody answers at. */
function refused(server: string): string {
  return `The connection to the server ${server} was refused - did you specify the right host or port?`;
}

/** Loads `path` as kubectl would, and fails in kubectl's words (`stat …: no such file or directory`). */
function loadFile(kc: KubeConfig, path: string): void {
  try {
    kc.loadFromFile(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new CliError(`error: stat ${path}: no such file or directory`);
    if (code === 'EACCES') throw new CliError(`error: open ${path}: permission denied`);
    if (code === 'EISDIR') throw new CliError(`error: read ${path}: is a directory`);
    throw new CliError(`error: error loading config file "${path}": ${(e as Error).message}`);
  }
}

/** The value, or the API server's refusal in its own words (`Error from server (NotFound): …`). */
export function must<T>(o: Outcome<T>): T {
  if (o.ok) return o.value;
  const gone = /ECONNREFUSED ([^\s,)]+)/.exec(o.message);
  if (o.code === 0 && gone !== null) throw new CliError(refused(gone[1] ?? ''));
  // kubectl names a 409 by its Status reason: AlreadyExists apart from other conflicts.
  const reason =
    o.reason === 'alreadyExists' ? 'AlreadyExists' : (statusReason(o.code) ?? o.reason);
  throw new CliError(
    o.code === 0 ? `error: ${o.message}` : `Error from server (${reason}): ${o.message}`,
  );
}

/** Prints an object as -o json or -o yaml asked; false when a table is wanted instead. */
export function printObject(ctx: Ctx, obj: unknown): boolean {
  if (ctx.output === 'json') ctx.out(JSON.stringify(obj, null, 2));
  else if (ctx.output === 'yaml') ctx.out(stringify(obj).trimEnd());
  else return false;
  return true;
}

/** Rows as kubectl prints them: columns padded to the widest cell, three spaces apart. */
export function table(rows: readonly (readonly string[])[]): string[] {
  const widths: number[] = [];
  for (const r of rows) r.forEach((c, i) => (widths[i] = Math.max(widths[i] ?? 0, c.length)));
  return rows.map((r) =>
    r
      .map((c, i) => (i === r.length - 1 ? c : c.padEnd((widths[i] ?? 0) + 3)))
      .join('')
      .trimEnd(),
  );
}

/** An age as kubectl shows it: 42s, 7m, 3h, 5d. */
export function age(since: string | undefined, now: Date): string {
  const t = since === undefined ? NaN : Date.parse(since);
  if (Number.isNaN(t)) return '<unknown>';
  const s = Math.max(0, Math.floor((now.getTime() - t) / 1000));
  if (s < 120) return `${String(s)}s`;
  if (s < 120 * 60) return `${String(Math.floor(s / 60))}m`;
  if (s < 48 * 3600) return `${String(Math.floor(s / 3600))}h`;
  return `${String(Math.floor(s / 86400))}d`;
}
