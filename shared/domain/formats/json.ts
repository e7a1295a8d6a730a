/**
 * JSON data copied without recursion: pass-through template fields have no schema to bound their
 * depth, and `structuredClone` overflows the call stack at about 2,000 levels.
 * @module
 */

/** A deep copy of JSON data (objects, arrays, primitives); depth costs memory, never the stack. */
export function cloneJson<T>(value: T): T {
  if (typeof value !== 'object' || value === null) return value;
  const root: object = Array.isArray(value) ? [] : {};
  const stack: [object, object][] = [[value, root]];
  for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
    const [from, to] = top;
    for (const [key, v] of Object.entries(from) as [string, unknown][]) {
      let copy = v;
      if (typeof v === 'object' && v !== null) {
        const into: object = Array.isArray(v) ? [] : {};
        stack.push([v, into]);
        copy = into;
      }
      // Defined, not assigned: a `__proto__` key stays data, as JSON.parse and structuredClone keep it.
      Object.defineProperty(to, key, {
        value: copy,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
  }
  return root as T;
}
