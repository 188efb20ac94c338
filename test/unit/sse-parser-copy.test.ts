import { readFileSync } from "node:fs";
import { expect, it } from "vitest";
import { parserCopy, parserCopyText } from "../../scripts/sse-parser-copy.ts";

// The ACP bridge's parser is the client's, copied (scripts/sse-parser-copy.ts says why).
it("src/acp/sse-parser.ts is clients/typescript/sse.ts", () => {
	expect(readFileSync(parserCopy, "utf8") === parserCopyText(), "run `node scripts/sse-parser-copy.ts`").toBe(true);
});
