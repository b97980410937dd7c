import type { ReactNode } from 'react';
import { PageHeader } from '../../components/PageHeader';

/** The frame of the pages a person sees before signing in: the brand, the page's heading, its form. */
export function AuthCard({ title, description, children }: { title: string; description?: string; children: ReactNode }) {
  return (
    <main className="auth-page">
      <div className="auth-card">
        <span className="brand">
          <img src="/favicon.svg" alt="" width="28" height="28" /> Sluice
        </span>
        <PageHeader title={title} description={description} />
        {children}
      </div>
    </main>
  );
}
