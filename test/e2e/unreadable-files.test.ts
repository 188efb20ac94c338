import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agentRun, noPool, startTestGateway, type TestGateway } from "../helpers/gateway.ts";
import { collect } from "../helpers/sse.ts";

// README's layout. The sandboxed git that takes snapshots holds CAP_DAC_READ_SEARCH (confined.ts):
// a file the agent makes mode 000, or a folder it makes 111, 000 or 444, is read all the same (an
// attacker's review hid writes in such folders from "what changed", and a 444 folder stopped every
// snapshot). What git still cannot read as a file — a FIFO, a socket — is named in `unreadable`.
let gw: TestGateway;
beforeAll(async () => {
	gw = await startTestGateway(noPool);
});
afterAll(async () => {
	await gw?.stop();
});

async function sessionRuns() {
	const id = await gw.session();
	const prompt = (command: string) => agentRun(gw, id, command);
	const summary = async (runId: string) => {
		const frames = await collect(
			await gw.fetch(`/v1/sessions/${id}/events?after=0`),
			(f) => f.event === "run_changes" && f.json.runId === runId,
		);
		return frames.at(-1)?.json;
	};
	return { id, prompt, summary };
}

describe("files and folders the agent makes unreadable", () => {
	it("are read anyway: their edits are in run_changes and GET …/changes, with their diffs", async () => {
		if (gw.config.sandbox !== "on") return expect.fail("README's layout sandboxes pi and git on this machine");
		const { id, prompt, summary } = await sessionRuns();
		const first = await prompt("echo one > secret.txt");
		expect((await summary(first)).files).toEqual([{ path: "secret.txt", status: "added" }]);

		const hidden = await prompt(
			"echo two > secret.txt && chmod 000 secret.txt && mkdir dx d0 d4 && echo SECRET > dx/new && echo m > d0/t && echo n > d4/f && chmod 111 dx && chmod 000 d0 && chmod 444 d4",
		);
		const said = await summary(hidden);
		expect(said.error).toBeUndefined();
		expect(said.unreadable).toBeUndefined();
		expect(said.files).toEqual([
			{ path: "d0/t", status: "added" },
			{ path: "d4/f", status: "added" },
			{ path: "dx/new", status: "added" },
			{ path: "secret.txt", status: "modified" },
		]);
		const byRun = await gw.api(`/v1/sessions/${id}/changes?runId=${hidden}`);
		expect(byRun.status).toBe(200);
		const diffs = Object.fromEntries(byRun.body.files.map((f: { path: string; diff: string }) => [f.path, f.diff]));
		expect(diffs["secret.txt"]).toContain("+two");
		expect(diffs["dx/new"]).toContain("+SECRET");
		const sinceStart = await gw.api(`/v1/sessions/${id}/changes`);
		expect(sinceStart.status).toBe(200);
		expect(sinceStart.body.files.map((f: { path: string }) => f.path)).toEqual([
			"d0/t",
			"d4/f",
			"dx/new",
			"secret.txt",
		]);
		// The next run sees the folder as it is, without a word about modes.
		const after = await summary(await prompt("echo x > other.txt"));
		expect(after.files).toEqual([{ path: "other.txt", status: "added" }]);
	}, 120_000);

	it("a tracked file replaced by a FIFO is named in `unreadable`; new FIFOs, which git never takes, are not", async () => {
		if (gw.config.sandbox !== "on") return expect.fail("README's layout sandboxes pi and git on this machine");
		const { id, prompt } = await sessionRuns();
		await prompt("echo one > zz_config.sh");
		const hidden = await prompt(
			"mkdir -p aa && for i in $(seq 100 249); do mkfifo aa/c$i; done && rm zz_config.sh && mkfifo zz_config.sh",
		);
		const changes = await gw.api(`/v1/sessions/${id}/changes?runId=${hidden}`);
		expect(changes.status).toBe(200);
		expect(changes.body.unreadable).toEqual(["zz_config.sh"]);
	}, 120_000);
});
