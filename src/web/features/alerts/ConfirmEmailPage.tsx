import { Link, useParams } from 'react-router';
import { ErrorNotice } from '../../components/states';
import { AuthCard } from '../auth/AuthCard';
import { useConfirmAddress } from './api';

/**
 * The page an alert or digest address's confirmation mail links to. It confirms only when the person
 * presses the button: a mail scanner that opens links, even one that runs scripts, confirms nothing.
 */
export default function ConfirmEmailPage() {
  const { token = '' } = useParams();
  const confirm = useConfirmAddress(token);
  if (confirm.isSuccess) {
    return (
      <AuthCard title="Address confirmed">
        <div className="notice ok" role="status">
          <strong className="wrap-anywhere">{confirm.data.email}</strong> is confirmed. Sluice alerts and digests sent to it will now arrive. You can close this page.
        </div>
        <p className="small muted">
          To stop them, ask an admin of the organisation to remove the address from its destinations or digest. <Link to="/alerts">Open the alerts</Link> if you have an account.
        </p>
      </AuthCard>
    );
  }
  return (
    <AuthCard title="Confirm your address" description="Someone asked Sluice to send alert and digest mail to this address. Nothing is sent to it until you confirm.">
      <form
        onSubmit={(event) => {
          event.preventDefault();
          confirm.mutate();
        }}
      >
        {confirm.isError && (
          <>
            <ErrorNotice error={confirm.error} title="The address was not confirmed" />
            <p className="small">
              A link works once, for 7 days. If you used it already, the address is confirmed and there is nothing more to do. If it is older, ask the admin who added the address to save the destination or digest again: a new link is mailed.
            </p>
          </>
        )}
        <button type="submit" className="primary" disabled={confirm.isPending}>
          {confirm.isPending ? 'Confirming…' : 'Confirm this address'}
        </button>
        <p className="small muted">If you did not expect this, close this page: no mail will come.</p>
      </form>
    </AuthCard>
  );
}
