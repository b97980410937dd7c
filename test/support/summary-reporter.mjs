// Ends the run with a plain "N passed, N failed, N skipped" line, the form CI and other tools read.
export default class SummaryReporter {
  onRunComplete(_contexts, results) {
    process.stdout.write(`Tests: ${results.numPassedTests} passed, ${results.numFailedTests} failed, ${results.numPendingTests} skipped\n`);
  }
}
