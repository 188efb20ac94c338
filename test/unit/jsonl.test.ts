import { describe, expect, it } from "vitest";
import { typeOf } from "../../src/pi/event-type.ts";
import { encodeLine, JsonlDecoder } from "../../src/pi/jsonl.ts";

/** Lines come out as bytes; `lines` holds them as UTF-8 text, `raw` as they came. */
function decode(chunks: (Buffer | string)[], max = 1024) {
	const lines: string[] = [];
	const raw: Buffer[] = [];
	const overflows: number[] = [];
	const decoder = new JsonlDecoder(max, {
		onLine: (l) => {
			raw.push(Buffer.from(l));
			lines.push(l.toString("utf8"));
		},
		onOverflow: (n) => overflows.push(n),
	});
	for (const chunk of chunks) decoder.push(chunk);
	const end = () => {
		decoder.end();
		return { lines, raw, overflows };
	};
	return { lines, raw, overflows, end };
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
		const { lines, raw } = decode(chunks);
		expect(lines).toEqual(['{"t":"héllo 🚀 漢字"}']);
		expect(raw[0]?.equals(bytes.subarray(0, -1))).toBe(true);
	});

	it("passes every byte through untouched, also bytes that are no valid UTF-8", () => {
		const line = Buffer.from([0x7b, 0xff, 0xe6, 0xbc, 0x22, 0x7d]);
		const { raw } = decode([line.subarray(0, 3), Buffer.concat([line.subarray(3), Buffer.from("\n")])]);
		expect(raw).toHaveLength(1);
		expect(raw[0]?.equals(line)).toBe(true);
	});

	it("hands out a line that fits in one chunk as a view of it (no copy)", () => {
		const chunk = Buffer.from('{"a":1}\n{"b":2}\n');
		const seen: Buffer[] = [];
		const decoder = new JsonlDecoder(1024, { onLine: (l) => seen.push(l), onOverflow: () => {} });
		decoder.push(chunk);
		expect(seen.map((l) => l.buffer === chunk.buffer)).toEqual([true, true]);
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

	it("counts the cap in characters (UTF-16 code units), not bytes, whatever the chunks", () => {
		// 10 characters of 3 bytes each and an emoji (2 units, 4 bytes): 12 units, 34 bytes.
		const line = `${"漢".repeat(10)}😀`;
		const bytes = Buffer.from(`${line}\n`);
		expect(decode([bytes], 12).lines).toEqual([line]);
		const cuts = [bytes.subarray(0, 5), bytes.subarray(5, 31), bytes.subarray(31)];
		expect(decode(cuts, 12).lines).toEqual([line]);
		expect(decode([bytes], 11).overflows).toEqual([12]);
		expect(decode(cuts, 11).overflows).toEqual([12]);
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

describe("typeOf (the hot path's type sniffing, on bytes)", () => {
	it("reads the type of pi's own layout and refuses anything else", () => {
		const type = (line: string) => typeOf(Buffer.from(line));
		expect(type('{"type":"message_update","x":1}')).toBe("message_update");
		expect(type('{"id":"gw_1","type":"response"}')).toBeUndefined();
		expect(type('{"type":"message_update","x":1')).toBeUndefined();
		expect(type('{"type":"Bad Type","x":1}')).toBeUndefined();
		expect(type('{"type":"agent_end\revent: x","x":1}')).toBeUndefined();
		expect(type(`{"type":"${"a".repeat(65)}"}`)).toBeUndefined();
		expect(type('{"type":"é"}')).toBeUndefined();
		expect(type("not json")).toBeUndefined();
		expect(type('{"type":"}')).toBeUndefined();
		expect(type('{ "type": "agent_start" }')).toBeUndefined();
	});

	it("answers the same after a run of one type (the type read last is compared in place)", () => {
		const type = (line: string | Buffer) => typeOf(Buffer.isBuffer(line) ? line : Buffer.from(line));
		expect(type('{"type":"message_update","x":1}')).toBe("message_update");
		expect(type('{"type":"message_update","x":2}')).toBe("message_update");
		// Same length, other bytes: read again, not taken for the last type.
		expect(type('{"type":"message_updatf","x":3}')).toBe("message_updatf");
		expect(type('{"type":"message_updatE","x":3}')).toBeUndefined();
		expect(type('{"type":"message updatf","x":3}')).toBeUndefined();
		// A byte that differs from the last type only above ASCII (0xe6 vs "f", 0x66).
		const high = Buffer.from('{"type":"message_updatf","x":4}');
		high[high.indexOf("updatf") + 5] = 0xe6;
		expect(type(high)).toBeUndefined();
		expect(type('{"type":"message_upd","x":5}')).toBe("message_upd");
		expect(type('{"type":"message_updatf","x":6}')).toBe("message_updatf");
	});
});
