import { describe, expect, it } from "vitest";
import { FrameTooLarge, LineParser } from "../../src/client/sse.ts";

// The one SSE parser (client, ACP bridge, tests): its frame cap counts the whole unfinished frame —
// its data lines so far and the line still open — and only that frame.
const feedAll = (parser: LineParser, chunks: string[]) => chunks.flatMap((c) => [...parser.feed(c)]);

describe("the SSE parser's frame cap", () => {
	it("counts a frame's data lines, not only its open line", () => {
		const line = `data: ${"x".repeat(1024)}\n`;
		const parser = new LineParser({ maxFrameChars: 10 * 1024 });
		expect(() => feedAll(parser, Array(20).fill(line))).toThrow(FrameTooLarge);
	});

	it("starts counting again at each frame's end", () => {
		const frame = `data: ${"x".repeat(6 * 1024)}\n\n`;
		const parser = new LineParser({ maxFrameChars: 10 * 1024 });
		expect(feedAll(parser, Array(20).fill(frame))).toHaveLength(20);
	});

	it("joins a line that arrives in many pieces once, exactly", () => {
		const parser = new LineParser();
		const pieces = Array.from({ length: 1000 }, (_, i) => String(i % 10).repeat(97));
		const frames = feedAll(parser, ["id: 7\r", "\ndata: ", ...pieces, "\r", "\n", "\n"]);
		expect(frames).toEqual([{ id: "7", lastEventId: "7", event: "message", data: pieces.join("") }]);
	});
});
