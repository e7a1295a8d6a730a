import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { withoutManagedFields } from './lean.js';

/** `v` with every array-valued `managedFields` member removed, at any depth (the model answer). */
function dropped(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(dropped);
  if (v === null || typeof v !== 'object') return v;
  return Object.fromEntries(
    Object.entries(v)
      .filter(([k, x]) => !(k === 'managedFields' && Array.isArray(x)))
      .map(([k, x]) => [k, dropped(x)]),
  );
}

/** Text that tries to look like structure: quotes, escapes, brackets and the key itself. */
const tricky = fc.oneof(
  fc.string(),
  fc.constantFrom(
    '"managedFields":[',
    '\\',
    '\\"',
    '"managedFields"',
    'a"managedFields',
    'a\\"managedFields',
    ']}',
    '{"a":[',
    'k:{"name":"cache"}',
    ',',
  ),
);

/** JSON values whose objects often hold `managedFields`, as an array or not, first, last or alone. */
const { value } = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    tricky,
    fc.integer(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    tie('object'),
  ),
  object: fc
    .tuple(
      fc.array(fc.tuple(fc.oneof(tricky, fc.constant('managedFields')), tie('value')), {
        maxLength: 4,
      }),
      fc.option(fc.array(tie('value'), { maxLength: 3 })),
      fc.nat(4),
    )
    .map(([entries, fields, at]) => {
      const all = [...entries];
      if (fields !== null) all.splice(Math.min(at, all.length), 0, ['managedFields', fields]);
      return Object.fromEntries(all);
    }),
}));

describe('withoutManagedFields', () => {
  it('drops every array-valued managedFields member and nothing else, whatever the strings hold', () => {
    fc.assert(
      fc.property(value, (v) => {
        const text = JSON.stringify(v);
        expect(JSON.parse(withoutManagedFields(text))).toEqual(dropped(v));
      }),
      { numRuns: 2000 },
    );
  });

  it('drops it first, last, alone and between members of a list item as the API server writes it', () => {
    const item = (meta: string) => `{"metadata":{${meta}},"spec":{"a":1}}`;
    const mf =
      '"managedFields":[{"manager":"m","fieldsV1":{"f:spec":{"k:{\\"name\\":\\"x\\"}":{}}}}]';
    const text = `{"items":[${item(`"name":"a",${mf}`)},${item(`${mf},"name":"b"`)},${item(mf)},${item(`"name":"c",${mf},"uid":"u"`)}],"metadata":{"continue":"t"}}`;
    expect(withoutManagedFields(text)).toBe(
      `{"items":[${item('"name":"a"')},${item('"name":"b"')},${item('')},${item('"name":"c","uid":"u"')}],"metadata":{"continue":"t"}}`,
    );
  });

  it('leaves a body without one, a string that names it and a value that is not an array as they are', () => {
    const texts = [
      '{"items":[]}',
      '{"a":"\\"managedFields\\":[1]"}',
      '{"managedFields":null,"b":1}',
      '{"a\\\\":"x","b":"\\"managedFields\\":[]"}',
    ];
    for (const t of texts) expect(withoutManagedFields(t)).toBe(t);
  });

  it('leaves members written with whitespace around them: valid JSON in, the same JSON out', () => {
    fc.assert(
      fc.property(value, (v) => {
        const pretty = JSON.stringify(v, null, 1);
        expect(JSON.parse(withoutManagedFields(pretty))).toEqual(JSON.parse(pretty));
      }),
      { numRuns: 500 },
    );
    const spaced = [
      '{"a":1, "managedFields":[]}',
      '{"managedFields":[] ,"a":1}',
      '{"a":1,"managedFields":[] }',
    ];
    for (const t of spaced) expect(withoutManagedFields(t)).toBe(t);
  });

  it('a key given twice: one member goes, the text stays valid', () => {
    const twice = '{"managedFields":[],"managedFields":[1],"x":1}';
    expect(JSON.parse(withoutManagedFields(twice))).toEqual({ managedFields: [1], x: 1 });
    expect(withoutManagedFields('{"a":0,"managedFields":[],"managedFields":[]}')).toBe('{"a":0}');
  });

  it('gives text that ends inside the array back unchanged, for the parse to refuse', () => {
    const cut = '{"metadata":{"name":"a","managedFields":[{"manager":"m"';
    expect(withoutManagedFields(cut)).toBe(cut);
    expect(() => JSON.parse(withoutManagedFields(cut)) as unknown).toThrow();
  });
});
