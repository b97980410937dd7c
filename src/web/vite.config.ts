import { gzipSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig, type Plugin } from 'vite';

/** The most JavaScript (gzipped) that opening /issues may load: the entry, its imports and the issue list's chunk. */
const ISSUES_BUDGET_BYTES = 250_000;

/**
 * Fails the build when the scripts /issues loads up to network idle outgrow the budget: the entry chunk,
 * every chunk it imports statically, and the issue list's route chunk with its own static imports.
 */
function issuesBudget(): Plugin {
  return {
    name: 'sluice-issues-budget',
    apply: 'build',
    generateBundle(_options, bundle) {
      const chunks = Object.values(bundle).filter((output) => output.type === 'chunk');
      const byFile = new Map(chunks.map((chunk) => [chunk.fileName, chunk]));
      const loaded = new Set<string>();
      const visit = (file: string) => {
        if (loaded.has(file)) return;
        loaded.add(file);
        for (const imported of byFile.get(file)?.imports ?? []) visit(imported);
      };
      for (const chunk of chunks) {
        if (chunk.isEntry || chunk.facadeModuleId?.endsWith('/features/issues/IssueListPage.tsx')) visit(chunk.fileName);
      }
      const bytes = [...loaded].reduce((sum, file) => sum + gzipSync(byFile.get(file)!.code).length, 0);
      const line = `/issues loads ${loaded.size} script chunks, ${bytes.toLocaleString('en')} bytes gzipped (budget ${ISSUES_BUDGET_BYTES.toLocaleString('en')})`;
      if (bytes > ISSUES_BUDGET_BYTES) this.error(line);
      this.info(line);
    },
  };
}

/** `npm run dev:web`: the config document the API process serves in production, pointing at a running API. */
function devConfigDocument(): Plugin {
  const apiUrl = (process.env.API_PUBLIC_URL || `http://localhost:${process.env.PORT || 8080}`).replace(/\/+$/, '');
  const ingestUrl = process.env.INGEST_PUBLIC_URL || `http://localhost:${process.env.INGEST_PORT || 8081}`;
  return {
    name: 'sluice-dev-config',
    apply: 'serve',
    configureServer(server) {
      server.middlewares.use('/config.json', (_req, res) => {
        res.setHeader('Content-Type', 'application/json');
        // the same flags the API process derives from these variables
        const ai = Boolean(process.env.OLLAMA_HOST || process.env.OLLAMA_API_KEY);
        res.end(JSON.stringify({ api_url: apiUrl, sso: Boolean(process.env.API_PUBLIC_URL), ai, checkout: Boolean(process.env.PAYMENT_API_KEY), ingest_url: ingestUrl }));
      });
    },
  };
}

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  publicDir: 'public',
  plugins: [react(), issuesBudget(), devConfigDocument()],
  build: {
    outDir: fileURLToPath(new URL('../../dist/web', import.meta.url)),
    // the test setup rebuilds while other test files' pages may still load the previous build's assets
    emptyOutDir: process.env.WEB_BUILD_KEEP_ASSETS !== '1',
    sourcemap: true,
    target: 'es2022',
  },
  server: {
    port: Number(process.env.WEB_PORT) || 3000,
    strictPort: true,
    host: 'localhost',
  },
  preview: { port: Number(process.env.WEB_PORT) || 3000 },
});
