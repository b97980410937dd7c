import { PageHeader } from '../../components/PageHeader';

export default function TracePage() {
  return <PageHeader title="Trace" />;
}
