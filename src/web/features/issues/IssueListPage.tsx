import { PageHeader } from '../../components/PageHeader';

export default function IssueListPage() {
  return <PageHeader title="Issue List" />;
}
