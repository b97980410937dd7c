import { PageHeader } from '../../components/PageHeader';

export default function AnomaliesPage() {
  return <PageHeader title="Anomalies" />;
}
