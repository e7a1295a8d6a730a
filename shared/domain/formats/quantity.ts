/**
 * Kubernetes resource quantities (`30Gi`, `100Mi`, `1G`, `1073741824`) compared by their byte value.
 * @module
 */
import type { Quantity } from '../../api/index.js';

const SUFFIX: Readonly<Record<string, number>> = {
  '': 1,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
};

const FORM =
  /^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(?:([eE][+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E))?$/;

/** The value of a quantity in base units, or undefined for a malformed one. */
export function quantityValue(q: Quantity | undefined): number | undefined {
  if (q === undefined) return undefined;
  if (typeof q === 'number') return q;
  const m = FORM.exec(q.trim());
  if (m === null) return undefined;
  const [, num = '', exp, unit = ''] = m;
  if (exp !== undefined) return Number(num + exp);
  return Number(num) * (SUFFIX[unit] ?? NaN);
}
