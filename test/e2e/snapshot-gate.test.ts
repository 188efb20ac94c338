import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { Snapshots } from "../../src/workspace/snapshots.ts";
import { runEnded, sleep, startTestGateway, type TestGateway, until } from "../helpers/gateway.ts";

// README's layout, real pi, demo model. The snapshot of a folder can be held by the test (an
// artificially slow git): the prompt must reach pi anyway, and the run's first tool call must not
// change the folder until the snapshot is taken, so "what changed" still names its file.
let gw: TestGateway;
let hold: Promise<void> | undefined;
let holding = 0;
const original = Snapshots.prototype.snapshotSeen;

beforeAll(async () => {
	vi.spyOn(Snapshots.prototype, "snapshotSeen").mockImplementation(async function (this: Snapshots) {
		const wait = hold;
		if (wait) {
			holding++;
			await wait;
			holding--;
		}
		return original.call(this);
	});
	gw = await startTestGateway();
});
afterAll(async () => {
	await gw?.stop();
	vi.restoreAllMocks();
});

/** The types of the events the session logged so far. */
const eventTypes = (id: string) =>
	gw.registry
		.get(id)
		.events.since(0)
		.events.map((e) => e.type);

describe("the pre-run snapshot is off the prompt's path", () => {
	it("sends the prompt to pi while git is held; the first tool call waits for the snapshot and its file is in the run's changes", async () => {
		const id = await gw.session();
		await runEnded(gw, id); // the session's first snapshot is taken
		const folder = await gw.folder(id);
		let release = () => {};
		hold = new Promise((resolve) => {
			release = resolve;
		});
		try {
			let answered = false;
			const prompt = gw
				.api(`/v1/sessions/${id}/prompt`, { method: "POST", json: { message: "bash: echo made > first.txt" } })
				.finally(() => {
					answered = true;
				});
			// pi got the prompt and the model asked for the tool while the snapshot still waits on "git".
			await until(() => eventTypes(id).includes("tool_execution_start"), 20_000);
			expect(holding).toBeGreaterThan(0);
			await until(() => answered, 10_000);
			// The tool is held: nothing is written while the snapshot is not taken.
			await sleep(300);
			expect(existsSync(join(folder, "first.txt"))).toBe(false);
			// The gate is not an approval: nobody is asked, the session is not waiting on anyone.
			expect((await gw.api(`/v1/sessions/${id}/approvals`)).body.approvals).toEqual([]);
			expect(eventTypes(id)).not.toContain("extension_ui_request");
			const runId = (await prompt).body.runId as string;
			release();
			hold = undefined;
			// The run's changes once it settled (while it runs, ?runId= answers what changed so far).
			await until(() => eventTypes(id).includes("agent_settled"), 20_000);
			const changes = await until(async () => {
				const res = await gw.api(`/v1/sessions/${id}/changes?runId=${runId}`);
				return res.status === 200 ? res.body : undefined;
			}, 20_000);
			expect(changes.files).toEqual([expect.objectContaining({ path: "first.txt", status: "added" })]);
			expect(existsSync(join(folder, "first.txt"))).toBe(true);
		} finally {
			release();
			hold = undefined;
		}
	});

	it("lets a run's later tool calls and a plain answer through without asking again", async () => {
		const id = await gw.session();
		const run = await gw.api(`/v1/sessions/${id}/prompt?wait=true`, {
			method: "POST",
			json: { message: "bash: echo two > second.txt" },
		});
		expect(run.status).toBe(200);
		const changes = await gw.api(`/v1/sessions/${id}/changes?runId=${run.body.runId}`);
		expect(changes.body.files.map((f: { path: string }) => f.path)).toEqual(["second.txt"]);
		const text = await gw.api(`/v1/sessions/${id}/prompt?wait=true`, { method: "POST", json: { message: "echo: hi" } });
		expect(text.body.text).toBe("hi");
	});
});
