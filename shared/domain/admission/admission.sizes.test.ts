import { describe, expect, it } from 'vitest';
import { pool } from '../../../test/unit/builders.js';
import { decidePoolWrite } from './admission.js';

describe('disk template sizes only grow', () => {
  const sized = (size: string) => {
    const p = pool();
    p.spec.virtualDiskTemplates[1]!.spec.persistentVolumeClaim = { size };
    return p;
  };

  it('refuses lowering a size, naming the template and both sizes; allows raising it', () => {
    expect(decidePoolWrite(sized('40Gi'), sized('50Gi'))).toEqual({
      allowed: false,
      message:
        'virtualDiskTemplates "cache": persistentVolumeClaim.size cannot be lowered from 50Gi to 40Gi; disks only grow',
    });
    expect(decidePoolWrite(sized('60Gi'), sized('50Gi'))).toEqual({ allowed: true });
    expect(decidePoolWrite(sized('51200Mi'), sized('50Gi'))).toEqual({ allowed: true });
    expect(decidePoolWrite(sized('40Gi'), undefined)).toEqual({ allowed: true });
  });
});
