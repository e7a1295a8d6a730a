/**
 * A list's body without its `managedFields`, before it is parsed. The API server writes each
 * object's field-ownership records (server-side apply's bookkeeping, a map per field written) into
 * its metadata: about 40 % of a pool's or disk's bytes and most of its small objects. A reader that
 * keeps facts of what it lists never reads them, yet parsing allocated them, and under the image's
 * 1 MiB young generation collecting them was most of a disk-GC pass's CPU (docs/performance.md).
 * @module
 */

const KEY = '"managedFields":';
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_ARRAY = 0x5b;
const OPEN_OBJECT = 0x7b;
const CLOSE_ARRAY = 0x5d;
const CLOSE_OBJECT = 0x7d;

/** Where the array or object that opens at `start` ends (exclusive), or -1 if it does not. */
function endOfValue(text: string, start: number): number {
  let depth = 0;
  for (let i = start; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      // A string: skipped whole, escapes included (its brackets are text, not structure).
      for (i++; ; i++) {
        if (i >= text.length) return -1;
        const d = text.charCodeAt(i);
        if (d === BACKSLASH) i++;
        else if (d === QUOTE) break;
      }
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) depth++;
    else if ((c === CLOSE_ARRAY || c === CLOSE_OBJECT) && --depth === 0) return i + 1;
  }
  return -1;
}

/**
 * `text`, a JSON document, with the array-valued `managedFields` members of its objects removed, at
 * any depth. A member is removed only when written compactly between `{` or `,` and `,` or `}` (as
 * the API server writes), otherwise left: the result is valid JSON whenever `text` is, and parses
 * as `text` does but for the members removed. A member that does not end in the text is left too.
 *
 * A match is a key, never a string's content: inside a JSON string every quote is escaped, so a
 * quote after `{` or `,` followed by `managedFields":` can only open a key. Only for readers that
 * keep facts of what they list and write none of it back: a nested `managedFields` (a template's
 * metadata) goes too.
 */
export function withoutManagedFields(text: string): string {
  let out = '';
  let from = 0;
  for (let at = text.indexOf(KEY); at !== -1;) {
    const value = at + KEY.length;
    // Before the key, a character not removed already (a key given twice); an escaped quote, one
    // inside a string, has a backslash there.
    const before = at - 1 >= from ? text.charCodeAt(at - 1) : -1;
    const opens = before === COMMA || before === OPEN_OBJECT;
    const end = opens && text.charCodeAt(value) === OPEN_ARRAY ? endOfValue(text, value) : -1;
    const after = end === -1 ? -1 : text.charCodeAt(end);
    if (after !== COMMA && after !== CLOSE_OBJECT) {
      at = text.indexOf(KEY, value);
      continue;
    }
    // The member and one comma beside it: the one before it, or after it when it comes first.
    if (before === COMMA) {
      out += text.slice(from, at - 1);
      from = end;
    } else {
      out += text.slice(from, at);
      from = after === COMMA ? end + 1 : end;
    }
    at = text.indexOf(KEY, from);
  }
  return from === 0 ? text : out + text.slice(from);
}
