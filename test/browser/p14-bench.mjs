// P14's console half for test/bench (not a test): the time from a
// navigation to the console's page of a plan to the page rendered with its
// last change, in Debian's Chromium (playwright-core, no browser download).
// Signed in once; then reps navigations, each to the plan's deep link,
// timed from the start of the navigation to the last change's key on the
// page and the loading status gone. Prints {"runs_ms": […],
// "plan_requests_ms": […]} on stdout: the second is the time of the page's
// requests of the plan in each run (Resource Timing).
//
//	node test/browser/p14-bench.mjs BASE_URL PLAN_ID LAST_KEY REPS   (the key in $P14_KEY)
import { chromium } from 'playwright-core';

const [base, planID, lastKey, repsArg] = process.argv.slice(2);
const key = process.env.P14_KEY;
if (!base || !planID || !lastKey || !key) throw new Error('usage: p14-bench.mjs BASE_URL PLAN_ID LAST_KEY REPS, with P14_KEY');
const reps = Number(repsArg || 5);

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
});
try {
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  const errors = [];
  page.on('pageerror', (err) => errors.push(err.message));
  await page.goto(base + '/console/');
  await page.locator('#api-key').fill(key);
  await page.locator('#api-key').press('Enter');
  await page.locator('#sign-out').waitFor();
  const runs = [];
  const apiRuns = [];
  for (let i = 0; i <= reps; i++) {
    await page.goto('about:blank');
    const start = performance.now();
    await page.goto(base + '/console/plans/' + planID);
    await page.getByText(lastKey, { exact: false }).first().waitFor({ state: 'attached', timeout: 60000 });
    await page.locator('main [role=status]', { hasText: 'Loading' }).waitFor({ state: 'detached', timeout: 60000 });
    const took = performance.now() - start;
    // The page's own requests of the plan (its JSON from the API): how
    // much of the time is the answer's, the rest the page's work.
    const api = await page.evaluate((id) => performance.getEntriesByType('resource')
      .filter((e) => e.name.includes('/v1/config-plans/' + id))
      .reduce((sum, e) => sum + e.duration, 0), planID);
    if (i > 0) { // the first warms Chromium's caches
      runs.push(Math.round(took * 100) / 100);
      apiRuns.push(Math.round(api * 100) / 100);
    }
  }
  if (errors.length) throw new Error('page errors: ' + errors.join('; '));
  process.stdout.write(JSON.stringify({ runs_ms: runs, plan_requests_ms: apiRuns }) + '\n');
} finally {
  await browser.close();
}
