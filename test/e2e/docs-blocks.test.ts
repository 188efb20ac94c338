import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, normalize } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
	type DocBlock,
	docFiles,
	fits,
	normalise,
	outputMark,
	repo,
	scriptOf,
	shellBlocks,
} from "../helpers/doc-blocks.ts";
import { noPool, startTestGateway, type TestGateway } from "../helpers/gateway.ts";
import { hasCommand } from "../helpers/host.ts";
import { startReceiver } from "../helpers/receiver.ts";

// Every shell block of README.md and docs/*.md runs in the suite, or says why not (the convention
// is in test/helpers/doc-blocks.ts). The blocks without a runner of their own run here, with bash,
// against one live gateway (real pi, the demo model), with GW and AUTH set as the walkthrough sets
// them, ID a session made for the block (what its page's examples assume), and a fresh folder.

const blocks = shellBlocks();
const where = (b: DocBlock) => `${b.file}:${b.line}`;
const runHere = blocks.filter((b) => b.marker === undefined);

describe("docs: every shell block has a runner or says why not", () => {
	it.each(blocks.map((b) => [where(b), b] as const))("%s", (_, block) => {
		const marker = block.marker;
		if (marker === undefined) return; // runs below
		if (marker === "walkthrough:start") {
			expect(block.file).toBe("README.md");
			expect(readFileSync(join(repo, "test/e2e/clients.test.ts"), "utf8")).toContain("walkthrough:start");
			return;
		}
		const runner = /^run by (test\/\S+\.test\.ts)\b/.exec(marker)?.[1];
		if (runner) {
			expect(existsSync(join(repo, runner)), runner).toBe(true);
			expect(readFileSync(join(repo, runner), "utf8"), `${runner} names ${block.file}`).toContain(block.file);
			return;
		}
		expect(marker, "a comment before a shell block is `run by test/…` or `not run: why`").toMatch(
			/^not run: \S.{10,}/s,
		);
	});
});

describe("docs: every relative link of README.md and docs/ resolves", () => {
	const slug = (title: string) =>
		title
			.toLowerCase()
			.replace(/[^\p{L}\p{N} _-]/gu, "")
			.replace(/ /g, "-");
	const headings = (file: string) =>
		new Set(
			readFileSync(join(repo, file), "utf8")
				.split("\n")
				.filter((line) => /^#+ /.test(line))
				.map((line) => slug(line.replace(/^#+ /, ""))),
		);
	it.each(docFiles())("%s", (file) => {
		const text = readFileSync(join(repo, file), "utf8").replace(/```[\s\S]*?```/g, "");
		for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
			if (/^(https?:|mailto:)/.test(target as string)) continue;
			const [path, anchor] = (target as string).split("#");
			const into = path ? normalize(join(dirname(file), path)) : file;
			expect(existsSync(join(repo, into)), `${file}: ${target}`).toBe(true);
			if (anchor && into.endsWith(".md")) expect(headings(into).has(anchor), `${file}: ${target}`).toBe(true);
		}
	});
});

/** What a page's examples assume: the session they call $ID, files in the folder. */
const pages: Record<string, { session?: Record<string, unknown>; files?: Record<string, string> }> = {
	"docs/approvals.md": { session: { extensions: ["permission-gate"] } },
	"docs/workspace.md": { files: { "data.csv": "a,b\n1,2\n3,4\n" } },
};

/** Done while a block runs (a stream that shows events needs something to happen). */
const during: Array<{ when: RegExp; act: (gw: TestGateway, id: string, out: () => string) => Promise<void> }> = [
	{
		when: /\/events\?types=/,
		act: async (gw, id, out) => {
			for (let i = 0; i < 100 && !out().includes("stream_open"); i++) await new Promise((r) => setTimeout(r, 50));
			await gw.api(`/v1/sessions/${id}/prompt`, { method: "POST", json: { message: "echo: Hi from the docs" } });
		},
	},
];

describe.skipIf(!hasCommand("curl") || !hasCommand("jq"))("docs: the shell blocks run as written", () => {
	let gw: TestGateway;
	let receiver: Awaited<ReturnType<typeof startReceiver>>;
	const dirs: string[] = [];
	beforeAll(async () => {
		receiver = await startReceiver();
		gw = await startTestGateway({ webhookAllow: ["loopback"], ...noPool });
	});
	afterAll(async () => {
		await gw?.stop();
		await receiver?.close();
		for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
	});

	it.each(runHere.map((b) => [where(b), b] as const))(
		"%s",
		async (_, block) => {
			const page = pages[block.file] ?? {};
			const id = await gw.session(page.session ?? {});
			const dir = mkdtempSync(join(tmpdir(), "pi-gateway-docs-block-"));
			dirs.push(dir);
			for (const [name, text] of Object.entries(page.files ?? {})) writeFileSync(join(dir, name), text);
			const { script, groups } = scriptOf(block);
			const shown = block.output !== undefined ? [block.output] : groups;
			const env = {
				PATH: process.env.PATH,
				HOME: dir,
				GW: gw.url,
				AUTH: `Authorization: Bearer ${gw.config.token}`,
				ID: id,
				RECEIVER: receiver.url,
				KEY: randomUUID(),
			};
			const child = spawn("bash", ["-eo", "pipefail", "-c", script], { cwd: dir, env, detached: true });
			let stdout = "";
			let stderr = "";
			const segments = () => stdout.split(`${outputMark}\n`);
			// A stream shown with its output is stopped once it printed all of it.
			const matched = () => block.output !== undefined && fits(stdout, block.output);
			const done = new Promise<number | null>((resolve) => {
				child.stdout.on("data", (c: Buffer) => {
					stdout += c;
					if (matched()) process.kill(-(child.pid as number), "SIGTERM");
				});
				child.stderr.on("data", (c: Buffer) => {
					stderr += c;
				});
				child.on("close", (code) => resolve(code));
			});
			const timer = setTimeout(() => process.kill(-(child.pid as number), "SIGKILL"), 20_000);
			for (const hook of during) if (hook.when.test(block.code)) await hook.act(gw, id, () => stdout);
			const code = await done;
			clearTimeout(timer);
			const report = `${where(block)}\n--- stdout\n${normalise(stdout)}\n--- stderr\n${stderr}`;
			if (!matched()) expect(code, report).toBe(0);
			if (block.output !== undefined)
				expect(fits(stdout, block.output), `${report}\n--- shown\n${block.output}`).toBe(true);
			else {
				const out = segments();
				shown.forEach((group, i) => {
					expect(fits(out[i] ?? "", group), `${report}\n--- shown (output ${i + 1})\n${group}`).toBe(true);
				});
			}
		},
		40_000,
	);
});
