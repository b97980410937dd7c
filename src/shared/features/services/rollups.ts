import type { Types } from 'mongoose';
import { durationIncrement, RollupBatch } from '../../telemetry/rollups.js';
import { type EdgeKind, type NodeType } from './model.js';


/** One node of the service map: what a span calls, or where a consumed message came from. */
export interface MapNode {
  name: string;
  type: NodeType;
}

/** A request a service served, or a call from one node to another; `sign` -1 takes back one counted before. */
export interface Observation {
  orgId: Types.ObjectId;
  projectId: Types.ObjectId;
  atMs: number;
  /** The service that served the request; for an edge, the caller. */
  service: string;
  callerType?: NodeType;
  edge?: { callee: MapNode; kind: EdgeKind };
  durationMs: number;
  failed: boolean;
  sign?: 1 | -1;
}

/** What the service map needs to know of a stored span. */
export interface SpanFacts {
  orgId: Types.ObjectId;
  projectId: Types.ObjectId;
  spanId: string;
  parentSpanId: string | null;
  service: string;
  kind: string;
  category: string;
  status: string;
  startAt: Date;
  durationMs: number;
  isSegment: boolean;
  http: { statusCode?: number | null } | null;
  db: { system?: string | null; namespace?: string | null } | null;
  messaging: { system?: string | null; destination?: string | null } | null;
  peerService: string | null;
  attributes: { key: string; value: unknown }[];
}

const text = (span: SpanFacts, ...keys: string[]) => {
  for (const key of keys) {
    const value = span.attributes.find((pair) => pair.key === key)?.value;
    if (typeof value === 'string' && value !== '') return value;
  }
  return undefined;
};

/** A request failed when its span says so, or when it answered with a server error. */
const failed = (span: SpanFacts) => span.status === 'error' || (span.kind === 'server' && (span.http?.statusCode ?? 0) >= 500);

const callKind = (span: SpanFacts): EdgeKind => (text(span, 'rpc.system') ? 'rpc' : span.category === 'http' ? 'http' : 'other');

/** Where an outgoing call went when no span of the callee says: the host it named, as an external node. */
function addressOf(span: SpanFacts): string {
  const named = text(span, 'server.address', 'net.peer.name', 'rpc.service');
  if (named) return named;
  const url = text(span, 'url.full', 'http.url');
  if (url && URL.canParse(url)) return new URL(url).host;
  return 'unknown';
}

const observation = (span: SpanFacts, extra: Partial<Observation> = {}): Observation => ({
  orgId: span.orgId,
  projectId: span.projectId,
  atMs: span.startAt.getTime(),
  service: span.service,
  durationMs: span.durationMs,
  failed: failed(span),
  ...extra,
});

/** An outgoing HTTP or RPC call that names no peer: its callee is the service whose entry span is its child. */
export interface PendingCall {
  spanId: string;
  service: string;
  address: string;
  kind: EdgeKind;
  atMs: number;
  durationMs: number;
  failed: boolean;
}

/** An entry span whose parent is in another process: the child of some service's call, maybe. */
export interface RemoteEntry {
  spanId: string;
  parentSpanId: string;
  service: string;
}

const isCall = (span: SpanFacts) => span.kind === 'client' && span.category !== 'db' && span.category !== 'messaging';

/**
 * What new spans tell the map and the service list at once: the requests each service served (its
 * entry spans), calls to databases and through queues, and calls to a peer a span names. Calls to
 * other services that name no peer are paired with their callee's entry span (pendingCalls).
 */
export function directObservations(spans: SpanFacts[]): Observation[] {
  const observations: Observation[] = [];
  for (const span of spans) {
    if (span.isSegment) observations.push(observation(span));
    if (span.category === 'db' && span.kind !== 'server') {
      const name = span.peerService ?? span.db?.system ?? 'database';
      observations.push(observation(span, { edge: { callee: { name, type: 'database' }, kind: 'db' } }));
    } else if (span.category === 'messaging' && (span.kind === 'producer' || span.kind === 'consumer')) {
      const queue = { name: span.messaging?.destination ?? span.messaging?.system ?? 'queue', type: 'messaging' as const };
      // a consumer's edge comes from the queue: producer → queue → consumer
      if (span.kind === 'producer') observations.push(observation(span, { edge: { callee: queue, kind: 'messaging' } }));
      else observations.push(observation(span, { service: queue.name, callerType: 'messaging', edge: { callee: { name: span.service, type: 'service' }, kind: 'messaging' } }));
    } else if (isCall(span) && span.peerService) {
      observations.push(observation(span, { edge: { callee: { name: span.peerService, type: 'service' }, kind: callKind(span) } }));
    }
  }
  return observations;
}

/** The new spans' calls that wait for their callee, and their entry spans that may be such a callee. */
export function pairingFacts(spans: SpanFacts[]): { calls: PendingCall[]; entries: RemoteEntry[] } {
  return {
    calls: spans
      .filter((span) => isCall(span) && !span.peerService)
      .map((span) => ({ spanId: span.spanId, service: span.service, address: addressOf(span), kind: callKind(span), atMs: span.startAt.getTime(), durationMs: span.durationMs, failed: failed(span) })),
    entries: spans
      .filter((span) => span.isSegment && span.parentSpanId)
      .map((span) => ({ spanId: span.spanId, parentSpanId: span.parentSpanId!, service: span.service })),
  };
}

/**
 * Pairs calls with their callees within one trace, given the trace's calls and entries after this
 * batch's were added (`all`) and which of them this batch added (`added`). A call is counted when it
 * arrives: to the service of its child entry span if that is already there, else to the external
 * host it named. An entry span arriving after its parent call moves that call from the host to its
 * own service. Whichever of the two arrives second sees both, so each call is counted once, with
 * updates of one trace applied one after the other.
 */
export function pairedObservations(
  trace: { orgId: Types.ObjectId; projectId: Types.ObjectId },
  all: { calls: PendingCall[]; entries: RemoteEntry[] },
  added: { calls: PendingCall[]; entries: RemoteEntry[] },
): Observation[] {
  const childOf = (call: PendingCall) => all.entries.find((entry) => entry.parentSpanId === call.spanId);
  const base = (call: PendingCall) => ({ orgId: trace.orgId, projectId: trace.projectId, atMs: call.atMs, service: call.service, durationMs: call.durationMs, failed: call.failed });
  const toService = (call: PendingCall, entry: RemoteEntry, sign: 1 | -1 = 1): Observation => ({ ...base(call), sign, edge: { callee: { name: entry.service, type: 'service' }, kind: call.kind } });
  const toHost = (call: PendingCall, sign: 1 | -1 = 1): Observation => ({ ...base(call), sign, edge: { callee: { name: call.address, type: 'external' }, kind: call.kind } });

  const observations: Observation[] = [];
  for (const call of added.calls) {
    const child = childOf(call);
    observations.push(child ? toService(call, child) : toHost(call));
  }
  const addedCalls = new Set(added.calls.map((call) => call.spanId));
  for (const entry of added.entries) {
    const call = all.calls.find((candidate) => candidate.spanId === entry.parentSpanId);
    // The call was counted on an earlier write, to its host; only its first child entry moves it.
    if (!call || addedCalls.has(call.spanId) || childOf(call)?.spanId !== entry.spanId) continue;
    observations.push(toHost(call, -1), toService(call, entry));
  }
  return observations;
}

/** What observations add to the service and edge rollups, one `$inc` per rollup document (written into SpanRollup and SpanRollupHourly). */
export function observationRollups(observations: Observation[]): RollupBatch {
  const batch = new RollupBatch('span-rollup');
  for (const observation of observations) {
    const sign = observation.sign ?? 1;
    const key = observation.edge
      ? { kind: 'edge', service: observation.service, callerType: observation.callerType ?? 'service', callee: observation.edge.callee.name, calleeType: observation.edge.callee.type, edgeKind: observation.edge.kind }
      : { kind: 'service', service: observation.service };
    batch.add(observation, key, {
      count: sign,
      failed: observation.failed ? sign : 0,
      totalMs: sign * observation.durationMs,
      ...durationIncrement('latency', observation.durationMs, sign),
    });
  }
  return batch;
}
