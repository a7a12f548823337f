// The benchmark's k6 browser script, run as it is by k6 1.1.0 and by `host run`: a
// sign-in through the demo target's form (type the user and password, submit, wait for
// the survey page, read who is signed in). VUS and ITERS (per VU) from the environment.
import { browser } from 'k6/browser';
import { check } from 'k6';

export const options = {
  scenarios: {
    ui: {
      executor: 'per-vu-iterations',
      vus: Number(__ENV.VUS || 10),
      iterations: Number(__ENV.ITERS || 5),
      maxDuration: __ENV.MAX_DURATION || '10m',
      options: { browser: { type: 'chromium' } },
    },
  },
};

export default async function () {
  const page = await browser.newPage();
  try {
    await page.goto(`${__ENV.BASE}/survey/login`);
    await page.locator('input[name="user"]').type(`user${__VU}`);
    await page.locator('input[name="password"]').type('demo');
    await Promise.all([page.waitForNavigation(), page.locator('button').click()]);
    const who = await page.locator('#user').textContent();
    check(who, { 'signed in as this VU': (w) => w === `user${__VU}` });
  } finally {
    await page.close();
  }
}
