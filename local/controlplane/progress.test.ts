import { describe, expect, it } from 'vitest';
import { createBuildProgress, leftText, parseBuildLine } from './progress.js';

const compile = (n: number, name: string) =>
  `[build 15:36:11] k8s: [${String(n)}/4] compiling ${name} (cold builds take minutes on 2 cores)`;

describe('build progress', () => {
  it("parses build.sh's lines and ignores everything else", () => {
    expect(parseBuildLine('[build 15:36:05] k8s: cached in /x')).toEqual({
      kind: 'cached',
      part: 'k8s',
    });
    expect(parseBuildLine(compile(2, 'kube-apiserver'))).toEqual({
      kind: 'compile',
      part: 'k8s',
      n: 2,
      total: 4,
      name: 'kube-apiserver',
    });
    expect(parseBuildLine('[build 15:37:22] k8s: [1/4] etcd done in 56s (26M)')).toEqual({
      kind: 'done',
      part: 'k8s',
      name: 'etcd',
      seconds: 56,
    });
    expect(parseBuildLine('[build 15:42:47] k8s: built in 381s into /c')).toEqual({
      kind: 'built',
      part: 'k8s',
      seconds: 381,
    });
    expect(parseBuildLine('go: downloading k8s.io/api v0.33.0')).toBeUndefined();
  });

  it('says the step and what is left from the estimates, as plain lines off a terminal', () => {
    const written: string[] = [];
    let now = 0;
    const p = createBuildProgress(
      { isTTY: false, write: (t) => written.push(t) },
      { etcd: 60, 'kube-apiserver': 200, 'kube-controller-manager': 60, kubectl: 40 },
      () => now,
    );
    p.line(compile(1, 'etcd'));
    now = 30_000;
    p.line(compile(2, 'kube-apiserver'));
    p.line('[build 15:42:47] k8s: built in 381s into /c');
    p.end();
    expect(written).toEqual([
      'building the control plane (once, then cached): k8s [1/4] etcd, about 6 min left\n',
      'building the control plane (once, then cached): k8s [2/4] kube-apiserver, about 5 min left\n',
      'built k8s in 381 s\n',
    ]);
  });

  it('rewrites one line on a terminal and clears it at the end', () => {
    const written: string[] = [];
    const p = createBuildProgress({ isTTY: true, write: (t) => written.push(t) }, {}, () => 0);
    p.line(compile(4, 'kubectl'));
    p.end();
    expect(written[0]).toBe(
      '\r\x1b[2Kbuilding the control plane (once, then cached): k8s [4/4] kubectl, about 45 s left',
    );
    expect(written.at(-1)).toBe('\r\x1b[2K');
    expect(written.join('')).not.toContain('\n');
  });

  it('words the time left', () => {
    expect([leftText(2), leftText(42), leftText(600)]).toEqual([
      'almost done',
      'about 40 s left',
      'about 10 min left',
    ]);
  });
});
