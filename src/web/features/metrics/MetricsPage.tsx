import { PageHeader } from '../../components/PageHeader';

export default function MetricsPage() {
  return <PageHeader title="Metrics" />;
}
