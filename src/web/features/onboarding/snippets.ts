/** Ready-to-paste setup for each SDK a project's telemetry can come from, filled with its DSN. */
export interface Snippet {
  id: string;
  label: string;
  code: string;
}

export function snippetsFor(dsn: string, otlp: { endpoint: string; headers: Record<string, string> }): Snippet[] {
  const headers = Object.entries(otlp.headers)
    .map(([name, value]) => `${name}=${encodeURIComponent(value)}`)
    .join(',');
  return [
    {
      id: 'node',
      label: 'Node.js (@sentry/node)',
      code: `// npm install @sentry/node\nimport * as Sentry from '@sentry/node';\n\nSentry.init({\n  dsn: '${dsn}',\n  tracesSampleRate: 1.0,\n});\n\nSentry.captureException(new Error('Hello from Sluice'));`,
    },
    {
      id: 'browser',
      label: 'Browser (@sentry/browser)',
      code: `// npm install @sentry/browser\nimport * as Sentry from '@sentry/browser';\n\nSentry.init({\n  dsn: '${dsn}',\n  integrations: [Sentry.browserTracingIntegration()],\n  tracesSampleRate: 1.0,\n});`,
    },
    {
      id: 'python',
      label: 'Python (sentry_sdk)',
      code: `# pip install sentry-sdk\nimport sentry_sdk\n\nsentry_sdk.init(\n    dsn="${dsn}",\n    traces_sample_rate=1.0,\n)\n\ndivision_by_zero = 1 / 0`,
    },
    {
      id: 'go',
      label: 'Go (sentry-go)',
      code: `// go get github.com/getsentry/sentry-go\nerr := sentry.Init(sentry.ClientOptions{\n\tDsn:              "${dsn}",\n\tTracesSampleRate: 1.0,\n})\nif err != nil {\n\tlog.Fatalf("sentry.Init: %s", err)\n}\ndefer sentry.Flush(2 * time.Second)\n\nsentry.CaptureException(errors.New("hello from Sluice"))`,
    },
    {
      id: 'otel',
      label: 'OpenTelemetry exporter',
      code: `# any OpenTelemetry SDK's OTLP/HTTP exporter (traces, logs and metrics)\nexport OTEL_EXPORTER_OTLP_ENDPOINT="${otlp.endpoint}"\nexport OTEL_EXPORTER_OTLP_HEADERS="${headers}"\nexport OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf"\nexport OTEL_SERVICE_NAME="my-service"`,
    },
  ];
}
