export { buildViewData, messageText, type ViewData, type ViewMeta, type ViewCategory, type ViewPoints, type ViewCompaction, type ViewEdit, type MessageRecord, type ViewDataOptions } from './view-data.js';
export { renderViewPage } from './view-page.js';
