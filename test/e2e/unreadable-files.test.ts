import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestGateway, type TestGateway } from "../helpers/gateway.ts";
import { collect } from "../helpers/sse.ts";

// README's layout: the sandboxed git that takes snapshots has no CAP_DAC_OVERRIDE, so a file the
// agent makes unreadable (mode 000) keeps, in a snapshot, what an earlier one saw. "What changed"
// says which files it could not read instead of leaving the edit out without a word.
let gw: TestGateway;
beforeAll(async () => {
	gw = await startTestGateway();
});
afterAll(async () => {
	await gw?.stop();
});

describe("a file the agent makes unreadable", () => {
	it("is named in run_changes and GET …/changes; its edit shows once it can be read again", async () => {
		if (gw.config.sandbox !== "on") return expect.fail("README's layout sandboxes pi and git on this machine");
		const id = await gw.session();
		const prompt = async (command: string) => {
			const run = await gw.api(`/v1/sessions/${id}/prompt?wait=true`, {
				method: "POST",
				json: { message: `bash: ${command}` },
			});
			expect(run.status).toBe(200);
			return run.body.runId as string;
		};
		const summary = async (runId: string) => {
			const frames = await collect(
				await gw.fetch(`/v1/sessions/${id}/events?after=0`),
				(f) => f.event === "run_changes" && f.json.runId === runId,
			);
			return frames.at(-1)?.json;
		};

		const first = await prompt("echo one > secret.txt");
		expect((await summary(first)).files).toEqual([{ path: "secret.txt", status: "added" }]);
		expect((await summary(first)).unreadable).toBeUndefined();

		const hidden = await prompt("echo two > secret.txt && echo x > other.txt && chmod 000 secret.txt");
		const said = await summary(hidden);
		expect(said.files).toEqual([{ path: "other.txt", status: "added" }]);
		expect(said.unreadable).toEqual(["secret.txt"]);
		const byRun = await gw.api(`/v1/sessions/${id}/changes?runId=${hidden}`);
		expect(byRun.status).toBe(200);
		expect(byRun.body.unreadable).toEqual(["secret.txt"]);
		const sinceStart = await gw.api(`/v1/sessions/${id}/changes`);
		expect(sinceStart.body.unreadable).toEqual(["secret.txt"]);

		const shown = await prompt("chmod 644 secret.txt");
		const after = await summary(shown);
		expect(after.files).toEqual([{ path: "secret.txt", status: "modified" }]);
		expect(after.unreadable).toBeUndefined();
		const diff = await gw.api(`/v1/sessions/${id}/changes?runId=${shown}`);
		expect(diff.body.files[0].diff).toContain("+two");
		expect(diff.body.unreadable).toBeUndefined();
	}, 120_000);

	it("names a hidden edit to a tracked file before any number of new unreadable files, at most 100 paths", async () => {
		if (gw.config.sandbox !== "on") return expect.fail("README's layout sandboxes pi and git on this machine");
		const id = await gw.session();
		const prompt = (command: string) =>
			gw.api(`/v1/sessions/${id}/prompt?wait=true`, { method: "POST", json: { message: `bash: ${command}` } });
		expect((await prompt("echo one > zz_config.sh")).status).toBe(200);
		// 150 decoys that sort first, then the edit to hide.
		const hidden = await prompt(
			"mkdir -p aa && for i in $(seq 100 249); do echo x > aa/c$i; chmod 000 aa/c$i; done && echo two > zz_config.sh && chmod 000 zz_config.sh",
		);
		const changes = await gw.api(`/v1/sessions/${id}/changes?runId=${hidden.body.runId}`);
		expect(changes.status).toBe(200);
		expect(changes.body.unreadable[0]).toBe("zz_config.sh");
		expect(changes.body.unreadable).toHaveLength(100);
	}, 120_000);
});
