import { availableParallelism } from 'node:os';

/** Tests run as ES modules (the service is ESM); Babel only strips types, `npm run typecheck` checks them. */
export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  transform: {
    '^.+\\.ts$': ['babel-jest', { presets: [['@babel/preset-typescript', { onlyRemoveTypeImports: true }]], babelrc: false, configFile: false }],
  },
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  testMatch: ['<rootDir>/test/**/*.test.ts'],
  // the chaos suite stops and restarts servers for minutes: `npm run test:chaos` runs it on its own
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/chaos/'],
  globalSetup: '<rootDir>/test/support/global-setup.mjs',
  testTimeout: 30000,
  // most of a test file's time is spent waiting on the services it spawns and the browser, so two files at
  // once keep two cores busy (jest's default would run one at a time there): 766 s instead of 1,289 s
  maxWorkers: Math.max(2, availableParallelism() - 1),
  reporters: ['default', '<rootDir>/test/support/summary-reporter.mjs'],
};
