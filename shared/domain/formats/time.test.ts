import { describe, expect, it } from 'vitest';
import { rfc3339 } from './time.js';

describe('rfc3339', () => {
  it('rfc3339 has second precision in UTC', () => {
    expect(rfc3339(new Date('2025-01-01T12:00:00.123Z'))).toBe('2025-01-01T12:00:00Z');
  });
});
