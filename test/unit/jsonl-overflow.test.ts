import { describe, expect, it } from "vitest";
import { JsonlDecoder } from "../../src/pi/jsonl.ts";

function decode(max: number, chunks: string[]) {
	const lines: string[] = [];
	const overflows: [number, string][] = [];
	const decoder = new JsonlDecoder(max, {
		onLine: (line) => lines.push(line.toString("utf8")),
		onOverflow: (chars, head) => overflows.push([chars, head]),
	});
	for (const chunk of chunks) decoder.push(Buffer.from(chunk));
	decoder.end();
	return { lines, overflows };
}

describe("JsonlDecoder line cap", () => {
	const long = `{"id":"gw_7","type":"response","data":"${"x".repeat(1000)}"}`;

	it("drops a line over the cap whole, reports its length and head, and goes on with the next", () => {
		const { lines, overflows } = decode(300, [`${long}\n{"type":"a"}\n`]);
		expect(lines).toEqual(['{"type":"a"}']);
		expect(overflows).toEqual([[long.length, long.slice(0, 256)]]);
	});

	it("does the same when the long line arrives in many chunks, without buffering past the cap", () => {
		const chunks = [`{"type":"b"}\n`, ...(long.match(/.{1,64}/g) as string[]), `\n{"type":"c"}`];
		const { lines, overflows } = decode(300, chunks);
		expect(lines).toEqual(['{"type":"b"}', '{"type":"c"}']);
		expect(overflows).toEqual([[long.length, long.slice(0, 256)]]);
	});

	it("reports a long last line that ends without LF", () => {
		const { lines, overflows } = decode(300, [`{"type":"d"}\n`, long]);
		expect(lines).toEqual(['{"type":"d"}']);
		expect(overflows).toEqual([[long.length, long.slice(0, 256)]]);
	});

	it("a line of exactly the cap passes", () => {
		const line = `"${"y".repeat(298)}"`;
		expect(decode(300, [`${line}\n`]).lines).toEqual([line]);
	});
});
