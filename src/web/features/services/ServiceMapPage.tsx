import { PageHeader } from '../../components/PageHeader';

export default function ServiceMapPage() {
  return <PageHeader title="Service Map" />;
}
