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
  reporters: ['default', '<rootDir>/test/support/summary-reporter.mjs'],
};
