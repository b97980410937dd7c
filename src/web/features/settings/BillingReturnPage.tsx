import { Navigate, useLocation } from 'react-router';

/** Where the hosted checkout sends the browser back (`/settings/billing?checkout=…`): the usage page, which says how it went. */
export default function BillingReturnPage() {
  const { search } = useLocation();
  return <Navigate to={{ pathname: '/settings/usage', search }} replace />;
}
