import { mkdirSync, mkdtempSync, rmSync, unlinkSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { agentDirStamp } from "../../src/sessions/warm-pool.ts";

const dir = mkdtempSync(join(tmpdir(), "pi-gateway-stamp-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("a pooled pi's agent folder stamp", () => {
	writeFileSync(join(dir, "models.json"), "{}");
	mkdirSync(join(dir, "extensions"));

	it("holds when a file comes and goes (what every pi start does in the folder), the folder's own time moving", () => {
		const before = agentDirStamp(dir);
		writeFileSync(join(dir, "settings.json.lock"), "");
		unlinkSync(join(dir, "settings.json.lock"));
		utimesSync(dir, new Date(), new Date(Date.now() + 5000));
		expect(agentDirStamp(dir)).toBe(before);
	});

	it("changes when an extension is dropped in, a setting is rewritten or a file goes", () => {
		const before = agentDirStamp(dir);
		writeFileSync(join(dir, "extensions", "evil.ts"), "export default () => {}");
		const dropped = agentDirStamp(dir);
		expect(dropped).not.toBe(before);
		writeFileSync(join(dir, "models.json"), '{"providers":{}}');
		const rewritten = agentDirStamp(dir);
		expect(rewritten).not.toBe(dropped);
		unlinkSync(join(dir, "extensions", "evil.ts"));
		expect(agentDirStamp(dir)).not.toBe(rewritten);
	});

	it("leaves pi's session files out (each session writes them)", () => {
		const before = agentDirStamp(dir);
		mkdirSync(join(dir, "sessions", "--x--"), { recursive: true });
		writeFileSync(join(dir, "sessions", "--x--", "a.jsonl"), "{}\n");
		expect(agentDirStamp(dir)).toBe(before);
	});
});
