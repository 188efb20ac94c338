import { mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, unlinkSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { agentDirStamp } from "../../src/sessions/registry/warm-pool.ts";

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

	it("catches an edit that puts size and mtime back (touch -r), and one five folders down", () => {
		const flag = join(dir, "extensions", "flag.ts");
		writeFileSync(flag, "export const flag = 'AAA'");
		const before = agentDirStamp(dir);
		const { atime, mtime } = statSync(flag);
		writeFileSync(flag, "export const flag = 'BBB'");
		utimesSync(flag, atime, mtime);
		expect(agentDirStamp(dir)).not.toBe(before);
		const deep = join(dir, "extensions", "pkg", "lib", "impl");
		mkdirSync(deep, { recursive: true });
		writeFileSync(join(deep, "one.ts"), "ONE");
		const withDeep = agentDirStamp(dir);
		writeFileSync(join(deep, "two.ts"), "TWO");
		expect(agentDirStamp(dir)).not.toBe(withDeep);
	});

	it("stamps a link as a link: what changes behind it (a folder the agent cannot see) does not show", () => {
		const hidden = mkdtempSync(join(tmpdir(), "pi-gateway-stamp-hidden-"));
		try {
			symlinkSync(hidden, join(dir, "spy"));
			const before = agentDirStamp(dir);
			writeFileSync(join(hidden, "bob-wrote"), "x");
			expect(agentDirStamp(dir)).toBe(before);
			expect(before).not.toContain("bob-wrote");
			unlinkSync(join(dir, "spy"));
			symlinkSync("/", join(dir, "spy"));
			expect(agentDirStamp(dir)).not.toBe(before);
		} finally {
			unlinkSync(join(dir, "spy"));
			rmSync(hidden, { recursive: true, force: true });
		}
	});

	it("has no stamp past 2,000 entries (nothing pooled is handed out), reading no more than that", () => {
		const big = mkdtempSync(join(tmpdir(), "pi-gateway-stamp-big-"));
		try {
			mkdirSync(join(big, "junk"));
			for (let i = 0; i < 2100; i++) writeFileSync(join(big, "junk", `f${i}`), "");
			expect(agentDirStamp(big)).toBeUndefined();
			for (let i = 0; i < 200; i++) unlinkSync(join(big, "junk", `f${i}`));
			expect(agentDirStamp(big)).toBeTypeOf("string");
		} finally {
			rmSync(big, { recursive: true, force: true });
		}
	});
});
