// The live dashboard (GET /dashboard of tern serve or tern route) in headless Chromium, while the caller sends load
// to the server: every chart gets data and the recent-requests table rows, then the playground streams an answer
// with the model its select chose (the first /v1/models lists). Screenshots go to OUT_DIR (dashboard.png,
// playground.png) for a person to look at; one JSON line on stdout says what the page showed:
//   {"charts": {"ttft": N, ...}, "recent_rows": N, "model": "...", "answer": "...", "error": null,
//    "console_errors": [...]}
// The charts are the mode's: ttft, tpot, tokens, requests, cache on tern serve; ttft, e2e, requests, replicas, cache
// on tern route. The caller judges it (the answer against a non-streamed request for that model, no console
// errors). Exit 1 when the page never got that far, with the reason on stderr.
//   node dashboard.mjs BASE_URL OUT_DIR [API_KEY [MIN_POINTS]]
// MIN_POINTS (default 1): the points each chart must show, over all its series, before the screenshot is taken, so
// that it shows lines rather than the first samples.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';

const [baseURL, outDir, apiKey = '', minPointsArg] = process.argv.slice(2);
const minPoints = Number(minPointsArg || 1);
if (!baseURL || !outDir) {
  console.error('usage: node dashboard.mjs BASE_URL OUT_DIR [API_KEY [MIN_POINTS]]');
  process.exit(1);
}
mkdirSync(outDir, { recursive: true });

// The charts' data-points and the table's rows, read in the page.
const pageState = () => ({
  charts: Object.fromEntries([...document.querySelectorAll('[data-chart]')]
    .map((chart) => [chart.dataset.chart, Number(chart.dataset.points || 0)])),
  recent_rows: document.querySelectorAll('#recent tbody tr').length,
});

const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
let exitCode = 1;
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  // The page keeps the key in localStorage; seeding it as a returning user's makes the page's first /v1/models call
  // carry it, so a keyed server's 401 (which Chromium logs as a console error) does not count against the page.
  if (apiKey) await context.addInitScript((key) => localStorage.setItem('tern.dashboard.apiKey', key), apiKey);
  const page = await context.newPage();
  const consoleErrors = [];
  page.on('console', (message) => { if (message.type() === 'error') consoleErrors.push(message.text()); });
  page.on('pageerror', (error) => consoleErrors.push(`uncaught: ${error.message}`));

  await page.goto(`${baseURL}/dashboard`);
  try {
    await page.waitForFunction((least) => {
      const charts = [...document.querySelectorAll('[data-chart]')];
      return charts.length > 0 && charts.every((chart) => Number(chart.dataset.points) >= least) &&
        document.querySelectorAll('#recent tbody tr').length > 0;
    }, minPoints, { timeout: 60_000, polling: 250 });
  } catch (error) {
    throw new Error(`not ${minPoints} points on every chart and rows in the table within 60 s: ${JSON.stringify(await page.evaluate(pageState))}` +
                    ` (console errors: ${JSON.stringify(consoleErrors)})`);
  }
  await page.screenshot({ path: path.join(outDir, 'dashboard.png'), fullPage: true });
  const shown = await page.evaluate(pageState);

  await page.fill('#prompt', 'Once upon a time');
  await page.fill('#max-tokens', '16');
  await page.fill('#temperature', '0');
  if (apiKey) await page.fill('#api-key', apiKey);
  await page.click('#send');
  await page.waitForSelector('#answer[data-done="true"]', { timeout: 60_000 });
  await page.screenshot({ path: path.join(outDir, 'playground.png'), fullPage: true });
  const played = await page.evaluate(() => ({ model: document.getElementById('model').value,
                                              answer: document.getElementById('answer').textContent,
                                              error: document.getElementById('answer').dataset.error ?? null }));

  console.log(JSON.stringify({ ...shown, ...played, console_errors: consoleErrors }));
  exitCode = 0;
} catch (error) {
  console.error(`dashboard.mjs: ${error.message}`);
} finally {
  await browser.close();
}
process.exit(exitCode);
