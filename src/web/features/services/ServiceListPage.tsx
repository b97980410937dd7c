import { Link } from 'react-router';
import { PageHeader } from '../../components/PageHeader';
import { EmptyState, QueryView } from '../../components/states';
import { Table, type Column } from '../../components/Table';
import { formatCount, formatDuration, formatNumber, formatPercent } from '../../lib/format';
import { useScope, useTimeWindow, useCarriedSearch } from '../../lib/url-state';
import { servicePath, useServices, type Service } from './api';
import { HealthSummary } from './health';
import './services.css';

export default function ServiceListPage() {
  const { project } = useScope();
  const window = useTimeWindow();
  const services = useServices(project, window);
  const search = useCarriedSearch();

  const columns: Column<Service>[] = [
    {
      header: 'Service',
      cell: (service) => (
        <Link className="service-name wrap-anywhere" to={servicePath(service.name, search)}>
          {service.name}
        </Link>
      ),
    },
    { header: 'Health', cell: (service) => <HealthSummary health={service.health} /> },
    { header: 'Requests', numeric: true, cell: (service) => formatCount(service.requests) },
    { header: 'Throughput', numeric: true, cell: (service) => `${formatNumber(service.throughput_per_min)} /min` },
    { header: 'Errors', numeric: true, cell: (service) => `${formatCount(service.errors)} (${formatPercent(service.error_rate)})` },
    { header: 'p50', numeric: true, cell: (service) => formatDuration(service.p50_ms) },
    { header: 'p95', numeric: true, cell: (service) => formatDuration(service.p95_ms) },
    { header: 'p99', numeric: true, cell: (service) => formatDuration(service.p99_ms) },
  ];

  return (
    <>
      <PageHeader
        title="Services"
        description="Every service that served requests in the window, busiest first, with its health and the rule behind it."
        actions={
          <Link className="button" to={`/services/map${search}`}>
            Service map
          </Link>
        }
      />
      <QueryView
        query={services}
        loadingLabel="Loading services…"
        isEmpty={(answer) => answer.data.length === 0}
        empty={
          <EmptyState title="No service served requests in this window">
            <p>Services appear when their traces arrive: send spans with an OpenTelemetry exporter or a Sentry SDK, or widen the time range.</p>
            <Link to="/onboarding">Set up tracing</Link>
          </EmptyState>
        }
      >
        {(answer) => <Table caption={`${formatCount(answer.data.length)} services`} columns={columns} rows={answer.data} rowKey={(service) => service.name} />}
      </QueryView>
    </>
  );
}
