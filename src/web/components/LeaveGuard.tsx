import { useEffect, type ReactNode } from 'react';
import { useBlocker } from 'react-router';
import { ConfirmDialog } from './ConfirmButton';

/**
 * While `when` holds (unsaved changes), leaving the page asks first: a link to another page opens a dialog
 * that says what will be lost, and closing or reloading the tab gets the browser's own question. Changing
 * the page's filters (its query string) is not leaving it.
 */
export function LeaveGuard({ when, consequence }: { when: boolean; consequence: ReactNode }) {
  const blocker = useBlocker(({ currentLocation, nextLocation }) => when && currentLocation.pathname !== nextLocation.pathname);
  useEffect(() => {
    if (!when) return;
    const warn = (event: BeforeUnloadEvent) => event.preventDefault();
    window.addEventListener('beforeunload', warn);
    return () => window.removeEventListener('beforeunload', warn);
  }, [when]);
  if (blocker.state !== 'blocked') return null;
  return <ConfirmDialog title="Leave without saving?" consequence={consequence} confirmLabel="Leave" cancelLabel="Stay" onConfirm={() => blocker.proceed()} onCancel={() => blocker.reset()} />;
}
