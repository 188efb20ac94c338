import pino from "pino";
import { describe, expect, it } from "vitest";
import type { Area } from "../../src/sessions/process/areas.ts";
import { WarmPools } from "../../src/sessions/registry/warm-pool.ts";

const admin: Area = { path: "/areas/admin", principal: "admin", admin: true };
const alice: Area = { path: "/areas/@alice", principal: "alice", admin: false };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("WarmPools after close", () => {
	it("starts no pi: a create answered during shutdown warms its principal's area, and that pi outlived the gateway", async () => {
		const started: string[] = [];
		const pools = new WarmPools(2, admin, {
			start: (area) => {
				started.push(area.path);
				return new Promise(() => {}); // never ready: only whether a start was asked counts
			},
			logger: pino({ level: "silent" }),
			room: () => true,
			ownFolders: true,
		});
		await pools.close();
		pools.warm(alice);
		pools.fill();
		await sleep(100); // warm() fills 25 ms later
		expect(started).toEqual([]);
		expect(pools.size).toBe(0);
	});

	it("before close, the same calls do start pi (what the test above would otherwise miss)", async () => {
		const started: string[] = [];
		const pools = new WarmPools(2, admin, {
			start: (area) => {
				started.push(area.path);
				return new Promise(() => {});
			},
			logger: pino({ level: "silent" }),
			room: () => true,
			ownFolders: true,
		});
		pools.warm(alice);
		pools.fill();
		await sleep(100);
		expect(started).toContain(alice.path);
		expect(started).toContain(admin.path);
	});
});
