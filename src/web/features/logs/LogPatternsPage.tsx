import { PageHeader } from '../../components/PageHeader';

export default function LogPatternsPage() {
  return <PageHeader title="Log Patterns" />;
}
