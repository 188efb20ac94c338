/**
 * The console's first-load budget: JS + CSS + HTML, gzipped (checked by test/unit/console-api.test.ts,
 * printed by the bench). 60 KB is about a second on a slow phone link (~50 KB/s) before the person
 * can sign in or answer an approval, the console's reason to exist. What only one view needs stays
 * out of it: the changes review (diff views, lowlight and its grammars) is a chunk of its own,
 * console-review.js, fetched the first time changes are shown.
 */
export const firstLoadBudgetBytes = 60 * 1024;
