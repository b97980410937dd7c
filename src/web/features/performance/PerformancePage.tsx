import { PageHeader } from '../../components/PageHeader';

export default function PerformancePage() {
  return <PageHeader title="Performance" />;
}
