/**
 * The VirtualMachinePool CustomResourceDefinition, generated from the zod models so the schema the API
 * server enforces and the schema the functions parse with cannot drift apart.
 * @module
 */
import { z } from 'zod';
import { API_VERSION, GROUP, PART_OF_LABEL, VERSION, VMPOOL } from './meta.js';
import { PoolSpec, PoolStatus } from './pool.js';
import {
  CLAIMS_LEFT_TO_ADMISSION,
  withoutKeywords,
  withoutReplicasMinimum,
} from './schema-edits.js';

/** A JSON object of a CRD. */
export type Schema = Record<string, unknown>;

const INT32_MAX = 2147483647;
const INT32_MIN = -2147483648;

function isSchema(v: unknown): v is Schema {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Turns zod's OpenAPI 3.0 output into a structural schema the API server accepts: no
 * `additionalProperties: {}` (pruning instead, or preserve-unknown-fields where the model says so and
 * everywhere beneath), int-or-string for quantities, no synthetic integer bounds.
 */
function structural(node: Schema, preserve: boolean): Schema {
  const out: Schema = {};
  const keepUnknown = preserve || node['x-kubernetes-preserve-unknown-fields'] === true;
  for (const [k, v] of Object.entries(node)) {
    if (k === '$schema') continue;
    if (k === 'additionalProperties') {
      if (isSchema(v) && Object.keys(v).length > 0) out[k] = structural(v, false);
      continue;
    }
    if (k === 'properties' && isSchema(v)) {
      out[k] = Object.fromEntries(
        Object.entries(v).map(([name, s]) => [name, isSchema(s) ? structural(s, keepUnknown) : s]),
      );
      continue;
    }
    if (k === 'items' && isSchema(v)) {
      out[k] = structural(v, keepUnknown);
      continue;
    }
    out[k] = v;
  }
  if (out.type === 'object' && keepUnknown) out['x-kubernetes-preserve-unknown-fields'] = true;
  const anyOf = out.anyOf;
  if (Array.isArray(anyOf) && anyOf.length === 2) {
    const types = anyOf.map((s) => (isSchema(s) ? s.type : undefined)).sort();
    if (types[0] === 'integer' && types[1] === 'string') {
      out.anyOf = [{ type: 'integer' }, { type: 'string' }];
      out['x-kubernetes-int-or-string'] = true;
    }
  }
  if (out.type === 'integer') {
    if (out.maximum === INT32_MAX || out.maximum === Number.MAX_SAFE_INTEGER) delete out.maximum;
    if (out.minimum === INT32_MIN || out.minimum === Number.MIN_SAFE_INTEGER) delete out.minimum;
  }
  return out;
}

/** The structural OpenAPI schema of a zod model, as a CRD version's schema takes it. */
export function schemaOf(model: z.ZodType): Schema {
  const raw = z.toJSONSchema(model, {
    target: 'openapi-3.0',
    io: 'input',
    unrepresentable: 'any',
    cycles: 'throw',
    reused: 'inline',
  }) as Schema;
  return structural(raw, false);
}

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
            {
              name: 'Age',
              type: 'date',
              jsonPath: '.metadata.creationTimestamp',
              description: 'Time of resource creation.',
            },
          ],
          schema: {
            openAPIV3Schema: {
              type: 'object',
              description: `VirtualMachinePool (${API_VERSION}) keeps a number of identical VirtualMachines.`,
              required: ['spec'],
              properties: {
                apiVersion: {
                  type: 'string',
                  description: `Versioned schema of this object: ${API_VERSION}.`,
                },
                kind: { type: 'string', description: 'VirtualMachinePool.' },
                // The API server refuses anything but `type` here (metadata is its own schema).
                metadata: { type: 'object' },
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
              },
            },
          },
        },
      ],
    },
  };
}
