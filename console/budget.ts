/** The console's first-load budget on a phone: JS + CSS + HTML, gzipped (checked by test/unit/console-api.test.ts, printed by the bench). */
export const firstLoadBudgetBytes = 60 * 1024;
