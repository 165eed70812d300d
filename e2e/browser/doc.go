// Package browser is the end-to-end test of the web pages in a real
// browser: it builds groundcrew, starts `groundcrew serve` (console chat,
// simulated Concourse, web: with signed links), runs a runbook through the
// console, and opens the run's page in headless Chromium (chromedp): the
// DOM shows the steps, the gate with its votes and the changes, the live
// page shows a step that finished after it was opened, and screenshots at
// desktop and phone width are saved in the test's directory. run.sh
// installs Debian's chromium when it is missing.
package browser
