import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

/**
 * One SSE parser in the repository (issue 43 item 4): src/client/sse.ts. The client, the ACP
 * bridge, the cluster hub, bench/ and the tests read event streams with it; a second one drifts
 * (the hub's split on LF only, bench's read only `event: ` and `data: ` with their spaces). So
 * every TypeScript and JavaScript file is searched for what reading the SSE format by hand takes:
 * splitting text into blocks at blank lines, or picking out a field's line. Writing frames
 * (`data: ${json}\n\n`) matches none of it. The Python client reads with its own parser, in its
 * own language, and the console with the browser's EventSource.
 */
const repo = resolve(import.meta.dirname, "../..");
const parser = "src/client/sse.ts";
/** This file, which names the signatures and shows the parsers they find. */
const self = "test/unit/one-sse-parser.test.ts";

const signatures: [name: string, pattern: RegExp][] = [
	["splits text at blank lines", /\b(?:indexOf|lastIndexOf|split|includes)\(\s*(["'`])\\n\\n\1/],
	["splits text at blank lines", /\bsplit\(\s*\/[^/\n]*\\n\\n[^/\n]*\//],
	["tests a line for a field", /\bstartsWith\(\s*["'`](?:data|event|id|retry):/],
	["looks for a field's line", /\b(?:indexOf|lastIndexOf|includes)\(\s*["'`]\\n(?:data|event|id|retry):/],
	// (A data: URL, `/^data:(image\/…`, is not a field's line.)
	["matches a field's line", /\/\^(?:data|event|id|retry):(?!\(?[a-z]+\\?\/)/],
	["dispatches on a field's name", /\b(?:field|name|key)\s*===\s*["'`](?:data|event|retry)["'`]/],
];

/**
 * Files that match for a reason other than reading a stream of the gateway's, each with it. The
 * test fails when one no longer matches, so the list cannot go stale.
 */
const allowed: Record<string, string> = {
	"src/sessions/relay/usage.ts":
		"the model relay's usage tap: it reads the model providers' streams (OpenAI's, Anthropic's), not the gateway's, a line at a time as bytes, and parses only the lines that carry a usage figure",
	"test/helpers/doc-blocks.ts":
		"replaces the numbers of `id:` lines in documented transcripts, to compare them; reads no stream",
};

/** Every TypeScript and JavaScript file git knows of or would add (generated and installed files aside). */
function sourceFiles(): string[] {
	const listed = execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard", "-z"], {
		cwd: repo,
		encoding: "utf8",
	});
	return [...new Set(listed.split("\0"))]
		.filter((file) => /\.(?:[cm]?[jt]s|tsx)$/.test(file))
		.filter((file) => !/(?:^|\/)(?:node_modules|dist)\//.test(file) && file !== "src/client/schema.ts")
		.filter((file) => {
			try {
				readFileSync(join(repo, file));
				return true;
			} catch {
				return false; // deleted in the working tree, not yet in the index
			}
		});
}

/** Each signature a text shows, by name. */
function parserSignatures(text: string): string[] {
	return [...new Set(signatures.filter(([, pattern]) => pattern.test(text)).map(([name]) => name))];
}

describe("one SSE parser", () => {
	it("no file but src/client/sse.ts reads the SSE format by hand", () => {
		const found: Record<string, string[]> = {};
		for (const file of sourceFiles()) {
			if (file === parser || file === self) continue;
			const hits = parserSignatures(readFileSync(join(repo, file), "utf8"));
			if (hits.length > 0) found[file] = hits;
		}
		const unexplained = Object.fromEntries(Object.entries(found).filter(([file]) => !(file in allowed)));
		expect(
			unexplained,
			"read event streams with src/client/sse.ts (parseSse, LineParser; tests: test/helpers/sse.ts)",
		).toEqual({});
		expect(
			Object.keys(allowed).filter((file) => !(file in found)),
			"stale entries of `allowed`",
		).toEqual([]);
	});

	it("the signatures find the parser itself, and each hand-written parser this repository had", () => {
		expect(parserSignatures(readFileSync(join(repo, parser), "utf8"))).toEqual(["dispatches on a field's name"]);
		// The parsers issue 43 counted, as they were (the cluster hub's, bench's two), and two tests' own.
		const removed = {
			"cluster hub": `for (let end = buffer.indexOf("\\n\\n"); end !== -1; end = buffer.indexOf("\\n\\n")) {
				yield buffer.slice(0, end);
			}
			const data = block.split("\\n").filter((line) => line.startsWith("data:"))`,
			"bench/lib.ts": `const ev = block.indexOf("event: ");
				const da = block.indexOf("\\ndata: ");`,
			"bench/peers-servers.ts": `for (const line of buffer.slice(0, end).split("\\n")) {
				if (line.startsWith("data:")) data.push(line.slice(line[5] === " " ? 6 : 5));`,
			"child-faults test": `for (const line of text.split(/\\r\\n|\\r|\\n/)) {
				if (field === "id") current.id = value;
				else if (field === "data") current.data.push(value);`,
			"docs-nginx test": `const data = /^data: (.*)$/m.exec(frame)?.[1];`,
			"raw-sse helper": `return text.split(/\\n\\n/).slice(0, -1).map(parseBlock);`,
		};
		for (const [where, text] of Object.entries(removed)) expect(parserSignatures(text), where).not.toEqual([]);
		// Writing frames is no parser.
		const writers = [
			'return head + "\\ndata: " + data + "\\n\\n";',
			'out.push(": heartbeat\\n\\n");',
			'res.end("data: [DONE]\\n\\n");',
			'const typeLines = Buffer.from("\\nevent: message_update\\ndata: ");',
		];
		for (const text of writers) expect(parserSignatures(text), text).toEqual([]);
	});
});
