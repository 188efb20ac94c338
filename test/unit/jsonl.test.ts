import { describe, expect, it } from "vitest";
import { encodeLine, JsonlDecoder } from "../../src/pi/jsonl.ts";

function decode(chunks: (Buffer | string)[], max = 1024) {
	const lines: string[] = [];
	const overflows: number[] = [];
	const decoder = new JsonlDecoder(max, { onLine: (l) => lines.push(l), onOverflow: (n) => overflows.push(n) });
	for (const chunk of chunks) decoder.push(chunk);
	const end = () => {
		decoder.end();
		return { lines, overflows };
	};
	return { lines, overflows, end };
}

describe("JsonlDecoder", () => {
	it("splits on LF only: U+2028 and U+2029 stay inside the record", () => {
		const record = encodeLine({ text: "a\u2028b\u2029c" });
		expect(record).toContain("\u2028");
		const { lines } = decode([Buffer.from(record + record)]);
		expect(lines).toHaveLength(2);
		expect(JSON.parse(lines[0] as string).text).toBe("a\u2028b\u2029c");
	});

	it("strips one trailing CR (CRLF input), and only one", () => {
		const { lines } = decode([Buffer.from('{"a":1}\r\n{"b":2}\r\r\n')]);
		expect(lines).toEqual(['{"a":1}', '{"b":2}\r']);
	});

	it("keeps a multi-byte character split across chunks", () => {
		const bytes = Buffer.from('{"t":"héllo 🚀 漢字"}\n');
		const emoji = bytes.indexOf(0xf0);
		const chunks = [
			bytes.subarray(0, 8),
			bytes.subarray(8, emoji + 2),
			bytes.subarray(emoji + 2, emoji + 3),
			bytes.subarray(emoji + 3),
		];
		const { lines } = decode(chunks);
		expect(lines).toEqual(['{"t":"héllo 🚀 漢字"}']);
	});

	it("delivers a final line without LF at end of stream", () => {
		const run = decode([Buffer.from('{"a":1}\n{"b":'), Buffer.from("2}")]);
		expect(run.lines).toEqual(['{"a":1}']);
		expect(run.end().lines).toEqual(['{"a":1}', '{"b":2}']);
	});

	it("joins a record split over many chunks", () => {
		const record = encodeLine({ long: "x".repeat(500) });
		const chunks = [...record].map((ch) => Buffer.from(ch));
		expect(decode(chunks).lines).toEqual([record.slice(0, -1)]);
	});

	it("drops a line over the cap, reports it, and goes on with the next", () => {
		const big = `{"big":"${"y".repeat(2000)}"}`;
		const { lines, overflows } = decode(
			[Buffer.from(`${big.slice(0, 1500)}`), Buffer.from(`${big.slice(1500)}\n{"ok":1}\n`)],
			1024,
		);
		expect(lines).toEqual(['{"ok":1}']);
		expect(overflows).toEqual([big.length]);
	});

	it("drops an over-cap line that arrives in one chunk", () => {
		const { lines, overflows } = decode([Buffer.from(`${"z".repeat(2048)}\n{"ok":2}\n`)], 1024);
		expect(lines).toEqual(['{"ok":2}']);
		expect(overflows).toEqual([2048]);
	});

	it("ignores nothing else: empty lines come through as empty records", () => {
		expect(decode([Buffer.from('\n{"a":1}\n\n')]).lines).toEqual(["", '{"a":1}', ""]);
	});
});

describe("typeOf (the hot path's type sniffing)", () => {
	it("reads the type of pi's own layout and refuses anything else", async () => {
		const { typeOf } = await import("../../src/sessions/lines.ts");
		expect(typeOf('{"type":"message_update","x":1}')).toBe("message_update");
		expect(typeOf('{"id":"gw_1","type":"response"}')).toBeUndefined();
		expect(typeOf('{"type":"message_update","x":1')).toBeUndefined();
		expect(typeOf('{"type":"Bad Type","x":1}')).toBeUndefined();
		expect(typeOf("not json")).toBeUndefined();
		expect(typeOf('{ "type": "agent_start" }')).toBeUndefined();
	});
});
