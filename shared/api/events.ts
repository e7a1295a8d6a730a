/**
 * CloudEvents vmpool consumes: Knative ApiServerSource (Reference and Resource mode) and PingSource.
 * @module
 */
import { z } from 'zod';
import { ObjectMeta } from './meta.js';
import { Targets } from './messages.js';

/** `type` prefixes of ApiServerSource events. */
export const APISERVER_REF = 'dev.knative.apiserver.ref.';
export const APISERVER_RESOURCE = 'dev.knative.apiserver.resource.';
/** `type` of PingSource ticks. */
export const PING = 'dev.knative.sources.ping';

const verb = z.enum(['add', 'update', 'delete']);

/** Reference-mode data: only kind, namespace, name and apiVersion. */
export const ObjectReference = z.looseObject({
  apiVersion: z.string(),
  kind: z.string(),
  name: z.string().min(1),
  namespace: z.string().optional(),
});
export type ObjectReference = z.infer<typeof ObjectReference>;

/** Resource-mode data: the whole object as the watch delivered it. */
export const WatchedObject = z.looseObject({
  apiVersion: z.string(),
  kind: z.string(),
  metadata: ObjectMeta.extend({ name: z.string().min(1) }),
});
export type WatchedObject = z.infer<typeof WatchedObject>;

/** Attributes every CloudEvent carries after parsing. */
const Attributes = z.looseObject({
  specversion: z.literal('1.0'),
  id: z.string().min(1),
  source: z.string().min(1),
  type: z.string().min(1),
  subject: z.string().optional(),
});

/** An ApiServerSource event in Reference mode. */
export const RefEvent = Attributes.extend({
  type: z.templateLiteral([APISERVER_REF, verb]),
  data: ObjectReference,
});
/** An ApiServerSource event in Resource mode. */
export const ResourceEvent = Attributes.extend({
  type: z.templateLiteral([APISERVER_RESOURCE, verb]),
  data: WatchedObject,
});
/** A PingSource tick; its optional JSON data may name what to do (`{"scope": "..."}`) but need not. */
export const PingEvent = Attributes.extend({
  type: z.literal(PING),
  data: z.unknown().optional(),
});

/** Any event vmpool's reconcile and GC functions accept. */
export const SourceEvent = z.union([RefEvent, ResourceEvent, PingEvent]);
export type SourceEvent = z.infer<typeof SourceEvent>;

/**
 * The member of {@link SourceEvent} an event's `type` selects, or the whole union when it selects
 * none (so the refusal lists every shape). Parsing the union tried Reference mode first and built
 * its failure for every Resource-mode event, the commonest kind.
 */
export function sourceEventModel(type: unknown): z.ZodType<SourceEvent> {
  if (typeof type !== 'string') return SourceEvent;
  if (type.startsWith(APISERVER_RESOURCE)) return ResourceEvent;
  if (type.startsWith(APISERVER_REF)) return RefEvent;
  return type === PING ? PingEvent : SourceEvent;
}
export type RefEvent = z.infer<typeof RefEvent>;
export type ResourceEvent = z.infer<typeof ResourceEvent>;
export type PingEvent = z.infer<typeof PingEvent>;

/** The CloudEvent type of a scaledownwith request; data is {@link ScaleDownWithEvent}. */
export const SCALE_DOWN_WITH_EVENT = 'io.deckhouse.virtualization.vmpool.scaledownwith';

/** Data of a {@link SCALE_DOWN_WITH_EVENT}: the aggregated API's request, addressed in the data. */
export const ScaleDownWithEvent = z.looseObject({
  namespace: z.string().min(1),
  pool: z.string().min(1),
  targets: Targets,
  dryRun: z.array(z.string()).optional(),
});
export type ScaleDownWithEvent = z.infer<typeof ScaleDownWithEvent>;
