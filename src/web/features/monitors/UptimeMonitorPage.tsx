import { PageHeader } from '../../components/PageHeader';

// placeholder until the page is built (issue 20)
export default function Page() {
  return <PageHeader title="Uptime monitor" />;
}
