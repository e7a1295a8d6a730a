import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { run } from './main.js';

/** Runs the plugin; its exit code and what it printed on stderr. */
async function plugin(args: string[]): Promise<{ code: number; err: string }> {
  const err: string[] = [];
  const code = await run(
    args,
    () => undefined,
    (l) => err.push(l),
  );
  return { code, err: err.join('\n') };
}

/** A kubeconfig with one context `here` for `server`. */
function kubeconfig(server: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'vmpool-plugin-'));
  const path = join(dir, 'config');
  writeFileSync(
    path,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server, 'insecure-skip-tls-verify': true } }],
      users: [{ name: 'u', user: { token: 't' } }],
      contexts: [{ name: 'here', context: { cluster: 'c', user: 'u', namespace: 'ci' } }],
      'current-context': 'here',
    }),
  );
  return path;
}

describe('the plugin fails in kubectl’s own words', () => {
  it('a --kubeconfig that does not exist', async () => {
    expect(await plugin(['status', 'runners', '--kubeconfig', './missing'])).toEqual({
      code: 1,
      err: 'error: stat ./missing: no such file or directory',
    });
  });

  it('a --kubeconfig that is a directory', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vmpool-plugin-'));
    expect((await plugin(['status', 'runners', '--kubeconfig', dir])).err).toBe(
      `error: read ${dir}: is a directory`,
    );
  });

  it('no kubeconfig anywhere: localhost:8080 refused, as kubectl says', async () => {
    vi.stubEnv('KUBECONFIG', '');
    vi.stubEnv('HOME', mkdtempSync(join(tmpdir(), 'vmpool-home-')));
    vi.stubEnv('KUBERNETES_SERVICE_HOST', '');
    expect(await plugin(['status', 'runners'])).toEqual({
      code: 1,
      err: 'The connection to the server localhost:8080 was refused - did you specify the right host or port?',
    });
  });

  it('an unknown --context', async () => {
    const path = kubeconfig('https://127.0.0.1:1');
    expect(await plugin(['status', 'runners', '--kubeconfig', path, '--context', 'nope'])).toEqual({
      code: 1,
      err: 'error: context "nope" does not exist',
    });
  });

  it('a server nobody answers at', async () => {
    const path = kubeconfig('https://127.0.0.1:1');
    expect(await plugin(['status', 'runners', '--kubeconfig', path])).toEqual({
      code: 1,
      err: 'The connection to the server 127.0.0.1:1 was refused - did you specify the right host or port?',
    });
  }, 30_000);
});
