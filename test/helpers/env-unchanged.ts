import { afterAll, beforeAll, expect } from "vitest";

/**
 * setupFiles of the files that share their worker (vitest.config.ts): a file leaves process.env as
 * it found it, since the files after it in the same process run with it, and src/ looks some of
 * it up once (PATH for ripgrep, XDG_CACHE_HOME for the sealed node). One that must change it for
 * good belongs in the `isolated` list. Runs after the file's own afterAll (hooks unwind in order).
 */
let before: Record<string, string | undefined>;
beforeAll(() => {
	before = { ...process.env };
});
afterAll(() => {
	expect({ ...process.env }, "a test file changed process.env and left it so").toEqual(before);
});
