import { PageHeader } from '../../components/PageHeader';

export default function TraceListPage() {
  return <PageHeader title="Trace List" />;
}
