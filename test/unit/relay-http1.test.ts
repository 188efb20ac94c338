import { describe, expect, it } from "vitest";
import { BodyReader, FramingError, framingOf, readHead } from "../../src/sessions/relay/http1.ts";

// The relay reads a provider's answer with its own HTTP/1.1 framing (http1.ts): every split of the
// bytes across reads must give the same data, and what node:http refuses is refused here too.

const bytes = (text: string) => Buffer.from(text, "latin1");

/** The data a reader takes out of `wire` when it comes in reads of `size` bytes, and whether it ended. */
function readAll(reader: BodyReader, wire: Buffer, size: number): { data: string; done: boolean; extra: number } {
	let data = "";
	for (let at = 0; at < wire.length; at += size) data += reader.take(wire.subarray(at, at + size)).toString("latin1");
	return { data, done: reader.done, extra: reader.extra };
}

describe("an answer's head", () => {
	it("is read once its empty line came, with repeated fields kept apart and names in lower case", () => {
		const wire = bytes(
			"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nSet-Cookie: a=1\r\nset-cookie: b=2\r\n\r\nbody",
		);
		expect(readHead(wire.subarray(0, 30))).toBeUndefined();
		const head = readHead(wire);
		expect(head).toEqual({
			status: 200,
			minor: 1,
			headers: { "content-type": "text/event-stream", "set-cookie": ["a=1", "b=2"] },
			length: wire.length - 4,
		});
	});

	it("takes bare LF line ends and an HTTP/1.0 status line without a reason", () => {
		expect(readHead(bytes("HTTP/1.0 204\nX-A:  b \n\n"))).toMatchObject({
			status: 204,
			minor: 0,
			headers: { "x-a": "b" },
		});
	});

	it("refuses a head that is not HTTP/1.x, folds a line, holds a control character or passes 64 KiB", () => {
		expect(() => readHead(bytes("HTTP/2 200\r\n\r\n"))).toThrow(FramingError);
		expect(() => readHead(bytes("HTTP/1.1 200 OK\r\nA: b\r\n c\r\n\r\n"))).toThrow(FramingError);
		expect(() => readHead(bytes("HTTP/1.1 200 OK\r\nA: b\0c\r\n\r\n"))).toThrow(FramingError);
		expect(() => readHead(bytes("HTTP/1.1 200 OK\r\nBad Name: b\r\n\r\n"))).toThrow(FramingError);
		expect(() => readHead(Buffer.alloc(70_000, "a"))).toThrow(FramingError);
	});
});

describe("an answer's framing", () => {
	const head = (status: number, headers: Record<string, string | string[]>) => ({
		status,
		minor: 1,
		headers,
		length: 0,
	});

	it("follows RFC 9112: no body for HEAD, 204 and 304; chunked last wins; then a length; else the connection's end", () => {
		expect(framingOf("HEAD", head(200, { "content-length": "5" }))).toEqual({ kind: "none" });
		expect(framingOf("POST", head(204, {}))).toEqual({ kind: "none" });
		expect(framingOf("POST", head(200, { "transfer-encoding": "gzip, chunked" }))).toEqual({ kind: "chunked" });
		expect(framingOf("POST", head(200, { "transfer-encoding": "chunked, gzip" }))).toEqual({ kind: "close" });
		expect(framingOf("POST", head(200, { "content-length": ["7", "7"] }))).toEqual({ kind: "length", length: 7 });
		expect(framingOf("POST", head(200, {}))).toEqual({ kind: "close" });
	});

	it("refuses both a length and chunks, lengths that differ, and a length that is not a number", () => {
		expect(() => framingOf("POST", head(200, { "transfer-encoding": "chunked", "content-length": "3" }))).toThrow(
			FramingError,
		);
		expect(() => framingOf("POST", head(200, { "content-length": "3, 4" }))).toThrow(FramingError);
		expect(() => framingOf("POST", head(200, { "content-length": "-1" }))).toThrow(FramingError);
	});
});

describe("a chunked body", () => {
	const wire = bytes("5\r\nhello\r\n1;ext=1\r\n \r\nA\r\n0123456789\r\n0\r\nTrailer: x\r\n\r\n");

	it("gives the same data and ends at the same byte whatever the reads' sizes", () => {
		for (let size = 1; size <= wire.length; size++) {
			const read = readAll(new BodyReader({ kind: "chunked" }), wire, size);
			expect(read, `reads of ${size}`).toEqual({ data: "hello 0123456789", done: true, extra: 0 });
		}
	});

	it("hands one read's data on as one buffer, a view when it is one piece", () => {
		const reader = new BodyReader({ kind: "chunked" });
		const read = bytes("3\r\nabc\r\n3\r\ndef\r\n");
		expect(reader.take(read).toString()).toBe("abcdef");
		const one = bytes("3\r\nghi\r\n");
		const data = reader.take(one);
		expect(data.buffer).toBe(one.buffer);
	});

	it("counts bytes past its end (the connection is then not kept), and takes bare LFs", () => {
		const reader = new BodyReader({ kind: "chunked" });
		expect(reader.take(bytes("2\nab\n0\n\nHTTP/1.1")).toString()).toBe("ab");
		expect(reader).toMatchObject({ done: true, extra: 8 });
	});

	it("refuses a size that is not hex, too large, or data not followed by a line end", () => {
		expect(() => new BodyReader({ kind: "chunked" }).take(bytes("x\r\n"))).toThrow(FramingError);
		expect(() => new BodyReader({ kind: "chunked" }).take(bytes("fffffffffffffff\r\n"))).toThrow(FramingError);
		expect(() => new BodyReader({ kind: "chunked" }).take(bytes("2\r\nabc\r\n"))).toThrow(FramingError);
		expect(() => new BodyReader({ kind: "chunked" }).take(bytes("2\rx"))).toThrow(FramingError);
	});

	it("is cut short when the connection ends before its last chunk", () => {
		const reader = new BodyReader({ kind: "chunked" });
		reader.take(bytes("5\r\nhel"));
		expect(reader.closed()).toBe(false);
	});
});

describe("a body of a length, or to the connection's end", () => {
	it("ends at its length, with what follows counted as extra", () => {
		const reader = new BodyReader({ kind: "length", length: 5 });
		expect(readAll(reader, bytes("hello!"), 2)).toEqual({ data: "hello", done: true, extra: 1 });
		expect(new BodyReader({ kind: "length", length: 0 }).done).toBe(true);
	});

	it("ends with the connection, and a length body is cut short by it", () => {
		const close = new BodyReader({ kind: "close" });
		expect(close.take(bytes("abc")).toString()).toBe("abc");
		expect(close.closed()).toBe(true);
		const length = new BodyReader({ kind: "length", length: 5 });
		length.take(bytes("abc"));
		expect(length.closed()).toBe(false);
	});
});
