import { PageHeader } from '../../components/PageHeader';

export default function ServicePage() {
  return <PageHeader title="Service" />;
}
