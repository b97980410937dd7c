/** `npm run test:chaos`: the project's jest setup, for the chaos suite only (the main config leaves it out of `npm test`). */
import base from '../../jest.config.js';

export default {
  ...base,
  rootDir: '../..',
  testMatch: ['<rootDir>/test/chaos/**/*.test.ts'],
  testPathIgnorePatterns: ['/node_modules/'],
  // each file stops and restarts the servers the others would be using: one at a time
  maxWorkers: 1,
};
