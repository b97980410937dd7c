import { PageHeader } from '../../components/PageHeader';

export default function IssuePage() {
  return <PageHeader title="Issue" />;
}
