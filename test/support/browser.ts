/**
 * Headless Chromium for the tests: the same launcher the viewer's benchmark and screenshot script use (one copy, in
 * plain JS so that those run without a build of the tests).
 */
export { CHROMIUM_FLAGS, findChromium, launchChromium } from '../../scripts/chromium.js';
