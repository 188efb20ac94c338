/**
 * One SSE parser for the client, the ACP bridge and the tests: src/client/sse.ts. The
 * bridge is compiled with the server (rootDir src/) and the client package must not import server
 * code, so the bridge gets a byte-for-byte copy, src/acp/sse-parser.ts, written here and checked
 * by test/unit/sse-parser-copy.test.ts. `node scripts/sse-parser-copy.ts` rewrites it
 * (`npm run spec` does too).
 */
import { readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";

const repo = resolve(import.meta.dirname, "..");
export const parserSource = resolve(repo, "src/client/sse.ts");
export const parserCopy = resolve(repo, "src/acp/sse-parser.ts");

export function parserCopyText(): string {
	return `// GENERATED from src/client/sse.ts by scripts/sse-parser-copy.ts: edit that file, not this one.\n${readFileSync(parserSource, "utf8")}`;
}

if (import.meta.main) writeFileSync(parserCopy, parserCopyText());
