/**
 * kubectl against the test control plane. The harness applies manifests through the real kubectl so
 * server-side apply, waits and `scale` behave exactly as an operator would see them.
 * @module
 */
import { execFile } from 'node:child_process';
import { stringify } from 'yaml';

/** Runs kubectl with a kubeconfig; rejects with stderr on a non-zero exit. */
export async function runKubectl(
  kubectl: string,
  kubeconfig: string,
  args: string[],
  input?: string,
): Promise<string> {
  return (await runKubectlFull(kubectl, kubeconfig, args, input)).stdout;
}

/** {@link runKubectl}, keeping what kubectl printed on stderr of a success (its warnings). */
export function runKubectlFull(
  kubectl: string,
  kubeconfig: string,
  args: string[],
  input?: string,
): Promise<{ stdout: string; stderr: string }> {
  return new Promise((ok, fail) => {
    const child = execFile(
      kubectl,
      ['--kubeconfig', kubeconfig, ...args],
      { maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        if (err) fail(new Error(`kubectl ${args.join(' ')}: ${stderr || err.message}`));
        else ok({ stdout, stderr });
      },
    );
    if (input !== undefined) child.stdin?.end(input);
  });
}

/** Objects (or a YAML string) as one multi-document YAML stream. */
export function toYaml(objects: readonly object[] | string): string {
  if (typeof objects === 'string') return objects;
  return objects.map((o) => stringify(o)).join('---\n');
}
