/**
 * `npm ci` stays quiet on npm 11, which skips a dependency's install scripts unless package.json's
 * `allowScripts` names it and warns about each one it skipped: every package of the lockfile with
 * an install script has an entry, approved or denied on purpose.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../local/controlplane/binaries.js';

interface Lock {
  readonly packages: Record<string, { readonly hasInstallScript?: boolean }>;
}

const read = (file: string): unknown => JSON.parse(readFileSync(join(REPO_ROOT, file), 'utf8'));

describe('install scripts', () => {
  it('package.json decides on every dependency with an install script', () => {
    const lock = read('package-lock.json') as Lock;
    const allow =
      (read('package.json') as { allowScripts?: Record<string, boolean> }).allowScripts ?? {};
    const withScripts = Object.entries(lock.packages)
      .filter(([path, p]) => path !== '' && p.hasInstallScript === true)
      .map(([path]) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length));
    // esbuild's postinstall checks its platform binary; a lockfile without one would test nothing.
    expect(withScripts).toContain('esbuild');
    const undecided = withScripts.filter(
      (name) => !Object.keys(allow).some((k) => k === name || k.startsWith(`${name}@`)),
    );
    expect(undecided).toEqual([]);
  });
});
