import { PageHeader } from '../../components/PageHeader';

export default function ServiceListPage() {
  return <PageHeader title="Service List" />;
}
