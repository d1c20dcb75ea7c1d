/**
 * Transcript formats abridge recognizes but has no reader for yet: detecting them lets `readSession` say what the file
 * is instead of calling it unrecognized. Each detector answers 0.9 or more when it matches and 0 otherwise.
 */
import type { UnsupportedFormat } from './format.js';

export const unsupportedFormats: UnsupportedFormat[] = [];
