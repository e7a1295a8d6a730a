/**
 * The VirtualMachinePool CustomResourceDefinition, generated from the zod models so the schema the API
 * server enforces and the schema the functions parse with cannot drift apart.
 * @module
 */
import { API_VERSION, GROUP, PART_OF_LABEL, VERSION, VMPOOL } from './meta.js';
import { PoolSpec, PoolStatus } from './pool.js';
import type { Schema } from './crd-schema.js';
import { AGE_COLUMN, objectSchema, schemaOf } from './crd-schema.js';
import {
  CLAIMS_LEFT_TO_ADMISSION,
  withoutKeywords,
  withoutReplicasMinimum,
} from './schema-edits.js';

/** The VirtualMachinePool CRD as a plain object (apply it as JSON or YAML). */
export function poolCrd(): Schema {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `virtualmachinepools.${GROUP}`,
      // The platform's labels (tools select on them) plus vmpool's: the mark that this CRD is vmpool's
      // and not the platform's own VirtualMachinePool CRD, which carries the same name.
      labels: { heritage: 'deckhouse', module: 'virtualization', [PART_OF_LABEL]: VMPOOL },
    },
    spec: {
      group: GROUP,
      names: {
        kind: 'VirtualMachinePool',
        listKind: 'VirtualMachinePoolList',
        plural: 'virtualmachinepools',
        singular: 'virtualmachinepool',
        shortNames: ['vmpool', 'vmpools'],
        categories: ['virtualization'],
      },
      scope: 'Namespaced',
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources: {
            status: {},
            scale: {
              specReplicasPath: '.spec.replicas',
              statusReplicasPath: '.status.replicas',
              labelSelectorPath: '.status.selector',
            },
          },
          additionalPrinterColumns: [
            {
              name: 'Replicas',
              type: 'integer',
              jsonPath: '.status.replicas',
              description: 'Current number of pool members (including Terminating).',
            },
            {
              name: 'Ready',
              type: 'integer',
              jsonPath: '.status.readyReplicas',
              description: 'Number of members ready to serve.',
            },
            {
              name: 'Updated',
              type: 'integer',
              jsonPath: '.status.updatedReplicas',
              description: 'Members on the current virtualMachineTemplate.',
              priority: 1,
            },
            {
              name: 'Available',
              type: 'integer',
              jsonPath: '.status.availableReplicas',
              description: 'Members Running for at least minReadySeconds.',
              priority: 1,
            },
            {
              name: 'Standby',
              type: 'integer',
              jsonPath: '.status.standbyReplicas',
              description: 'Warm standby members (not counted in Replicas).',
              priority: 1,
            },
            {
              name: 'Ready-Standby',
              type: 'integer',
              jsonPath: '.status.readyStandbyReplicas',
              description: 'Standby members ready to be promoted.',
              priority: 1,
            },
            {
              name: 'Unhealthy',
              type: 'integer',
              jsonPath: '.status.unhealthyReplicas',
              description: 'Members that did not reach Running within healing.startupTimeout.',
              priority: 1,
            },
            {
              name: 'Draining',
              type: 'integer',
              jsonPath: '.status.drainingReplicas',
              description: 'Members draining before removal.',
              priority: 1,
            },
            {
              name: 'Protected',
              type: 'integer',
              jsonPath: '.status.protectedReplicas',
              description: 'Live members annotated protected (scale-in protection).',
              priority: 1,
            },
            {
              name: 'Held',
              type: 'integer',
              jsonPath: '.status.heldReplicas',
              description:
                'Surplus replicas a scale-down keeps because only protected members could leave.',
              priority: 1,
            },
            {
              name: 'Claimed',
              type: 'integer',
              jsonPath: '.status.claimedReplicas',
              description: 'Members bound to a VirtualMachineClaim.',
              priority: 1,
            },
            {
              name: 'Idle',
              type: 'integer',
              jsonPath: '.status.idleReplicas',
              description: 'Members a claim could take now.',
              priority: 1,
            },
            {
              name: 'Policy',
              type: 'string',
              jsonPath: '.spec.scaleDownPolicy',
              description: 'Which replicas leave on an unaddressed scale-down.',
              priority: 1,
            },
            AGE_COLUMN,
          ],
          schema: {
            openAPIV3Schema: objectSchema({
              kind: 'VirtualMachinePool',
              apiVersion: API_VERSION,
              description: `VirtualMachinePool (${API_VERSION}) keeps a number of identical VirtualMachines.`,
              spec: {
                ...withoutKeywords(
                  withoutReplicasMinimum(schemaOf(PoolSpec)),
                  CLAIMS_LEFT_TO_ADMISSION,
                ),
                description: 'The desired pool: how many replicas, of what, with which disks.',
              },
              status: {
                ...schemaOf(PoolStatus),
                description: 'The observed pool, computed by vmpool from its members.',
              },
            }),
          },
        },
      ],
    },
  };
}
