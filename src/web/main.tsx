import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { QueryCache, QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { RouterProvider } from 'react-router';
import { ApiError, loadRuntimeConfig } from './api/client';
import { createRouter, isPublicPath } from './app/router';
import './styles.css';

const root = createRoot(document.getElementById('root')!);

async function start() {
  await loadRuntimeConfig();
  const router = createRouter();
  const queryClient = new QueryClient({
    // a session that ended (logged out elsewhere, expired) sends the person to the login page, then back
    queryCache: new QueryCache({
      onError: (error) => {
        const { pathname, search } = router.state.location;
        if (error instanceof ApiError && error.status === 401 && !isPublicPath(pathname)) {
          void router.navigate(`/login?next=${encodeURIComponent(pathname + search)}`, { replace: true });
        }
      },
    }),
    defaultOptions: {
      queries: {
        staleTime: 10_000,
        // a refused request (4xx) is not retried: its message is shown at once
        retry: (failures, error) => !(error instanceof ApiError && error.status >= 400 && error.status < 500) && failures < 2,
      },
    },
  });
  root.render(
    <StrictMode>
      <QueryClientProvider client={queryClient}>
        <RouterProvider router={router} />
      </QueryClientProvider>
    </StrictMode>,
  );
}

start().catch((error: unknown) => {
  root.render(
    <main className="content">
      <h1>Sluice could not start</h1>
      <p role="alert">{error instanceof Error ? error.message : String(error)}</p>
    </main>,
  );
});
