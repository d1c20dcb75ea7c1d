import type { UnsupportedFormat } from './format.js';

export const unsupportedFormats: UnsupportedFormat[] = [];
