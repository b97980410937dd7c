import { SeverityNumber } from '@opentelemetry/api-logs';
import { SpanKind, SpanStatusCode, context, trace } from '@opentelemetry/api';
import { OTLPLogExporter as OTLPLogExporterJson } from '@opentelemetry/exporter-logs-otlp-http';
import { OTLPLogExporter as OTLPLogExporterProto } from '@opentelemetry/exporter-logs-otlp-proto';
import { OTLPMetricExporter as OTLPMetricExporterJson } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPMetricExporter as OTLPMetricExporterProto } from '@opentelemetry/exporter-metrics-otlp-proto';
import { OTLPTraceExporter as OTLPTraceExporterJson } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OTLPTraceExporterProto } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { LoggerProvider, SimpleLogRecordProcessor } from '@opentelemetry/sdk-logs';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { Queue } from 'bullmq';
import { telemetryJobRecords } from '../../src/shared/queues.js';
import type { Harness } from '../support/harness.js';
import { useQueueProject, type ProjectWithDsn } from '../support/factories/telemetry.js';
import { eventually } from '../support/wait.js';

let h: Harness;
let project: ProjectWithDsn;
let queue: Queue;
// No workers: the batches stay in Redis, where this test reads what ingest made of each export.
useQueueProject((started, telemetry, made) => {
  [h, queue, project] = [started, telemetry, made];
});

const resource = (service: string) => resourceFromAttributes({ 'service.name': service, 'service.version': '3.1.0', 'deployment.environment.name': 'production' });
const exporterOptions = (signal: string) => ({ url: `${h.ingest.baseUrl}/v1/${signal}`, headers: { Authorization: `Bearer ${project.publicKey}` } });

/** Records of one kind that ingest batched for `service`, once at least `count` have arrived. */
async function batched(kind: string, service: string, count: number): Promise<any[]> {
  return eventually(async () => {
    const jobs = await queue.getJobs(['waiting', 'prioritized', 'delayed']);
    const records = jobs
      .flatMap((job) => {
        // a job's records as the workers read them: OTLP exports travel as they came and are decoded there
        const records = telemetryJobRecords(job.name, job.data);
        if (typeof records === 'string') throw new Error(records);
        return ((records as Record<string, unknown[]>)[kind] ?? []) as { projectId: string; record: any }[];
      })
      .filter((item) => item.projectId === project.id && item.record.service === service)
      .map((item) => item.record);
    return records.length >= count ? records : undefined;
  }, `${count} ${kind} from ${service}`);
}

describe.each([
  ['protobuf', OTLPTraceExporterProto, OTLPLogExporterProto, OTLPMetricExporterProto],
  ['json', OTLPTraceExporterJson, OTLPLogExporterJson, OTLPMetricExporterJson],
] as const)('OpenTelemetry JS exporters over OTLP/HTTP %s', (encoding, TraceExporter, LogExporter, MetricExporter) => {
  test('traces: a server span with a database child arrive with hex ids, service and semantic conventions', async () => {
    const service = `checkout-${encoding}`;
    const provider = new BasicTracerProvider({ resource: resource(service), spanProcessors: [new SimpleSpanProcessor(new TraceExporter(exporterOptions('traces')))] });
    const tracer = provider.getTracer('orders');
    const server = tracer.startSpan('GET /orders/:id', { kind: SpanKind.SERVER, attributes: { 'http.request.method': 'GET', 'http.route': '/orders/:id', 'http.response.status_code': 500 } });
    const child = tracer.startSpan('SELECT orders', { kind: SpanKind.CLIENT, attributes: { 'db.system': 'postgresql', 'db.statement': 'SELECT * FROM orders WHERE id = $1' } }, trace.setSpan(context.active(), server));
    child.end();
    server.setStatus({ code: SpanStatusCode.UNSET });
    server.end();
    await provider.forceFlush();
    await provider.shutdown();

    const spans = await batched('spans', service, 2);
    const root = spans.find((s) => s.name === 'GET /orders/:id');
    const db = spans.find((s) => s.name === 'SELECT orders');
    expect(root).toMatchObject({
      traceId: server.spanContext().traceId,
      spanId: server.spanContext().spanId,
      parentSpanId: null,
      kind: 'server',
      status: 'error',
      environment: 'production',
      http: { method: 'GET', route: '/orders/:id', statusCode: 500 },
      category: 'http',
      source: 'otlp',
    });
    expect(db).toMatchObject({ parentSpanId: server.spanContext().spanId, kind: 'client', category: 'db', db: { system: 'postgresql', statement: 'SELECT * FROM orders WHERE id = $1' } });
  });

  test('logs: severity, body, attributes and trace context arrive', async () => {
    const service = `billing-${encoding}`;
    const provider = new LoggerProvider({ resource: resource(service), processors: [new SimpleLogRecordProcessor(new LogExporter(exporterOptions('logs')))] });
    provider.getLogger('billing').emit({ severityNumber: SeverityNumber.ERROR, severityText: 'ERROR', body: 'invoice 981 failed to render', attributes: { 'invoice.id': 981 } });
    await provider.forceFlush();
    await provider.shutdown();
    const [log] = await batched('logs', service, 1);
    expect(log).toMatchObject({ level: 'error', severityNumber: 17, body: 'invoice 981 failed to render', attributes: { 'invoice.id': 981 }, source: 'otlp' });
  });

  test('NUL characters, which the store cannot hold, arrive as U+FFFD in a log body, attribute key and value', async () => {
    const service = `printer-${encoding}`;
    const provider = new LoggerProvider({ resource: resource(service), processors: [new SimpleLogRecordProcessor(new LogExporter(exporterOptions('logs')))] });
    provider.getLogger('printer').emit({ severityNumber: SeverityNumber.WARN, body: 'tray\u00002 empty', attributes: { 'tray\u0000id': 'a\u0000' } });
    await provider.forceFlush();
    await provider.shutdown();
    const [log] = await batched('logs', service, 1);
    expect(log).toMatchObject({ body: 'tray\uFFFD2 empty', attributes: { 'tray\uFFFDid': 'a\uFFFD' } });
  });

  test('metrics: a counter arrives as a monotonic sum', async () => {
    const service = `cart-${encoding}`;
    const reader = new PeriodicExportingMetricReader({ exporter: new MetricExporter(exporterOptions('metrics')), exportIntervalMillis: 60_000 });
    const provider = new MeterProvider({ resource: resource(service), readers: [reader] });
    provider.getMeter('cart').createCounter('cart.items_added', { unit: '{item}' }).add(3, { 'cart.kind': 'guest' });
    await provider.forceFlush();
    await provider.shutdown();
    const [point] = await batched('metrics', service, 1);
    expect(point).toMatchObject({ name: 'cart.items_added', unit: '{item}', type: 'sum', isMonotonic: true, value: 3, attributes: { 'cart.kind': 'guest' } });
  });
});
