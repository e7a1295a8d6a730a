/**
 * The VirtualMachineClaim CustomResourceDefinition, generated from the zod models like the pool's.
 * @module
 */
import { PART_OF_LABEL, VMPOOL } from './meta.js';
import { CLAIM_API_VERSION, CLAIM_GROUP, CLAIM_VERSION, ClaimSpec, ClaimStatus } from './claim.js';
import type { Schema } from './crd-schema.js';
import { AGE_COLUMN, objectSchema, schemaOf } from './crd-schema.js';
import { CLAIM_LEFT_TO_ADMISSION, withoutKeywords } from './schema-edits.js';

/** The VirtualMachineClaim CRD as a plain object (apply it as JSON or YAML). */
export function claimCrd(): Schema {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `virtualmachineclaims.${CLAIM_GROUP}`,
      labels: { [PART_OF_LABEL]: VMPOOL },
    },
    spec: {
      group: CLAIM_GROUP,
      names: {
        kind: 'VirtualMachineClaim',
        listKind: 'VirtualMachineClaimList',
        plural: 'virtualmachineclaims',
        singular: 'virtualmachineclaim',
        shortNames: ['vmclaim', 'vmclaims'],
        categories: ['virtualization'],
      },
      scope: 'Namespaced',
      versions: [
        {
          name: CLAIM_VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: [
            { name: 'Pool', type: 'string', jsonPath: '.spec.poolName', description: 'The pool.' },
            {
              name: 'Phase',
              type: 'string',
              jsonPath: '.status.phase',
              description: 'Pending, Bound, Expired or Lost.',
            },
            {
              name: 'VM',
              type: 'string',
              jsonPath: '.status.virtualMachineName',
              description: 'The member bound to the claim.',
            },
            {
              name: 'Holder',
              type: 'string',
              jsonPath: '.spec.holder',
              description: 'Who holds the member.',
            },
            AGE_COLUMN,
          ],
          schema: {
            openAPIV3Schema: objectSchema({
              kind: 'VirtualMachineClaim',
              apiVersion: CLAIM_API_VERSION,
              description: `VirtualMachineClaim (${CLAIM_API_VERSION}) takes one idle member of a VirtualMachinePool and keeps it until the claim is deleted or expires. Own it by the Job or Pod that uses the member, and Kubernetes' garbage collector releases it when they are gone.`,
              spec: {
                ...withoutKeywords(schemaOf(ClaimSpec), CLAIM_LEFT_TO_ADMISSION),
                description: 'Which pool to take a member of, for whom, for how long.',
              },
              status: {
                ...schemaOf(ClaimStatus),
                description: 'Where the claim stands, maintained by vmpool.',
              },
            }),
          },
        },
      ],
    },
  };
}
