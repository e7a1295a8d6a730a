/**
 * Progress of the first run's build (build.sh compiles etcd, kube-apiserver, … from Go modules, minutes
 * on two cores): the step and an estimate of what is left, on one updating line on a terminal and as
 * plain lines otherwise.
 * @module
 */

/** What one line of build.sh says. */
export type BuildEvent =
  | { readonly kind: 'cached'; readonly part: string }
  | { readonly kind: 'download'; readonly part: string }
  | {
      readonly kind: 'compile';
      readonly part: string;
      readonly n: number;
      readonly total: number;
      readonly name: string;
    }
  | {
      readonly kind: 'done';
      readonly part: string;
      readonly name: string;
      readonly seconds: number;
    }
  | { readonly kind: 'built'; readonly part: string; readonly seconds: number };

/** Seconds each binary took on a 2-core machine (go build, cold cache): estimates for a first build. */
export const DEFAULT_SECONDS: Readonly<Record<string, number>> = {
  etcd: 56,
  'kube-apiserver': 212,
  'kube-controller-manager': 68,
  kubectl: 45,
  apiserver_receive_adapter: 141,
};

/** The binaries of each part, in build order (what is left after a step). */
export const PART_BINARIES: Readonly<Record<string, readonly string[]>> = {
  k8s: ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kubectl'],
  knative: ['apiserver_receive_adapter'],
};

const LINE = /^\[build [\d:]+\] (\w+): (.*)$/;

/** Parses a line build.sh writes to stderr; undefined for any other line. */
export function parseBuildLine(line: string): BuildEvent | undefined {
  const m = LINE.exec(line);
  if (m === null) return undefined;
  const part = m[1] ?? '';
  const text = m[2] ?? '';
  if (text.startsWith('cached in ')) return { kind: 'cached', part };
  if (text.startsWith('downloading modules')) return { kind: 'download', part };
  let x = /^\[(\d+)\/(\d+)\] compiling (\S+)/.exec(text);
  if (x !== null)
    return { kind: 'compile', part, n: Number(x[1]), total: Number(x[2]), name: x[3] ?? '' };
  x = /^\[\d+\/\d+\] (\S+) done in (\d+)s/.exec(text);
  if (x !== null) return { kind: 'done', part, name: x[1] ?? '', seconds: Number(x[2]) };
  x = /^built in (\d+)s/.exec(text);
  if (x !== null) return { kind: 'built', part, seconds: Number(x[1]) };
  return undefined;
}

/** "about 5 min left", "about 40 s left", "almost done". */
export function leftText(seconds: number): string {
  if (seconds < 5) return 'almost done';
  if (seconds < 90) return `about ${String(Math.round(seconds / 5) * 5)} s left`;
  return `about ${String(Math.round(seconds / 60))} min left`;
}

/** Where progress goes: stderr, or a test's recorder. */
export interface ProgressOut {
  readonly isTTY?: boolean;
  write(text: string): unknown;
}

/** A progress display fed with build.sh's lines. */
export interface BuildProgress {
  line(text: string): void;
  /** Clears the updating line (the build ended, for good or not). */
  end(): void;
}

/**
 * Shows build progress on `out`. `seconds` are per-binary estimates (a previous build's, else
 * {@link DEFAULT_SECONDS}); `now` is injectable for tests.
 */
export function createBuildProgress(
  out: ProgressOut,
  seconds: Readonly<Record<string, number>> = DEFAULT_SECONDS,
  now: () => number = Date.now,
): BuildProgress {
  const tty = out.isTTY === true;
  let current: { part: string; n: number; total: number; name: string; since: number } | undefined;
  let timer: ReturnType<typeof setInterval> | undefined;
  const estimate = (name: string): number => seconds[name] ?? DEFAULT_SECONDS[name] ?? 60;

  const status = (): string => {
    if (current === undefined) return '';
    const all = PART_BINARIES[current.part] ?? [];
    const later = all.slice(all.indexOf(current.name) + 1);
    const spent = (now() - current.since) / 1000;
    const left =
      Math.max(0, estimate(current.name) - spent) + later.reduce((a, b) => a + estimate(b), 0);
    return `building the control plane (once, then cached): ${current.part} [${String(current.n)}/${String(current.total)}] ${current.name}, ${leftText(left)}`;
  };
  const show = (): void => {
    if (tty) out.write(`\r\x1b[2K${status()}`);
    else out.write(`${status()}\n`);
  };

  return {
    line(text) {
      const e = parseBuildLine(text);
      if (e === undefined) {
        // Anything else build.sh or go prints (an error, say) is shown as it is.
        if (tty && current !== undefined) out.write('\r\x1b[2K');
        out.write(`${text}\n`);
        if (tty && current !== undefined) show();
        return;
      }
      if (e.kind === 'compile') {
        current = { part: e.part, n: e.n, total: e.total, name: e.name, since: now() };
        show();
        if (tty && timer === undefined) timer = setInterval(show, 1000);
      } else if (e.kind === 'download') {
        out.write(
          `${tty ? '\r\x1b[2K' : ''}building the control plane: downloading Go modules (first run only)${tty ? '' : '\n'}`,
        );
      } else if (e.kind === 'built') {
        if (tty) out.write('\r\x1b[2K');
        out.write(`built ${e.part} in ${String(e.seconds)} s\n`);
        current = undefined;
      }
    },
    end() {
      if (timer !== undefined) clearInterval(timer);
      timer = undefined;
      if (tty && current !== undefined) out.write('\r\x1b[2K');
    },
  };
}
