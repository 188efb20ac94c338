import { createSocket, type RemoteInfo } from "node:dgram";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { EgressLookups, lookupLimits } from "../../src/sessions/relay/egress-lookup.ts";
import { until } from "../helpers/gateway.ts";

// The egress proxy resolves with c-ares, a few names of one session at once (an attacker's review:
// dns.lookup ran on libuv's 4-thread pool, and 60 lookups against a DNS server that never answered
// stalled every principal; test/e2e/egress-dns.test.ts). A DNS server on 127.0.0.1 that answers a
// name (NXDOMAIN) only when the test says so shows how many names are being looked up at once.

const dns = createSocket("udp4");
/** Names asked and not answered yet, in the order first asked; names the test has answered. */
const pending: string[] = [];
const answered = new Set<string>();
const asked = new Map<string, { packet: Buffer; from: RemoteInfo }[]>();

function nameOf(packet: Buffer): { name: string; end: number } {
	const labels: string[] = [];
	let i = 12;
	while (packet[i]) {
		const length = packet[i] as number;
		labels.push(packet.toString("latin1", i + 1, i + 1 + length));
		i += length + 1;
	}
	// The question: name, its end byte, type and class.
	return { name: labels.join("."), end: i + 5 };
}

function nxdomain(packet: Buffer, from: RemoteInfo): void {
	const { end } = nameOf(packet);
	const header = Buffer.from([packet[0] as number, packet[1] as number, 0x81, 0x83, 0, 1, 0, 0, 0, 0, 0, 0]);
	dns.send(Buffer.concat([header, packet.subarray(12, end)]), from.port, from.address);
}

beforeAll(async () => {
	dns.on("message", (packet, from) => {
		const { name } = nameOf(packet);
		if (answered.has(name)) return nxdomain(packet, from);
		if (!asked.has(name)) {
			asked.set(name, []);
			pending.push(name);
		}
		asked.get(name)?.push({ packet, from });
	});
	await new Promise<void>((resolve) => dns.bind(0, "127.0.0.1", resolve));
});
afterAll(() => dns.close());

it("looks up at most a few of a session's names at once, the rest in turn; localhost and addresses need no DNS", async () => {
	const lookups = new EgressLookups([`127.0.0.1:${(dns.address() as AddressInfo).port}`]);
	expect(await lookups.addresses("localhost")).toContain("127.0.0.1");
	expect(await lookups.addresses("203.0.113.7")).toEqual(["203.0.113.7"]);
	expect(asked.size).toBe(0);

	const names = Array.from({ length: 3 * lookupLimits.lookups }, (_, i) => `n${i}.stall.test`);
	const results = names.map((name) => lookups.addresses(name).then(String, (error: Error) => error.message));
	let most = 0;
	for (let done = 0; done < names.length; done++) {
		// As many names at once as the bound lets through (fewer once fewer are left).
		await until(() => pending.length >= Math.min(lookupLimits.lookups, names.length - done));
		most = Math.max(most, pending.length);
		// The oldest name asked gets its answer (every query of it, now and later).
		const name = pending.shift() as string;
		answered.add(name);
		for (const { packet, from } of asked.get(name) ?? []) nxdomain(packet, from);
	}
	expect(await Promise.all(results)).toEqual(names.map((name) => `${name} does not resolve (ENOTFOUND)`));
	expect(most).toBe(lookupLimits.lookups);

	// A lookup still waiting its turn when its client goes is dropped, never sent.
	const busy = Array.from({ length: lookupLimits.lookups }, (_, i) => `busy${i}.stall.test`);
	const held = busy.map((name) => lookups.addresses(name).catch(() => "done"));
	await until(() => pending.length === busy.length);
	const left = new AbortController();
	const dropped = lookups.addresses("dropped.stall.test", left.signal).catch((error: Error) => error.message);
	left.abort();
	expect(await dropped).toBe("the client left");
	for (const name of pending.splice(0)) {
		answered.add(name);
		for (const { packet, from } of asked.get(name) ?? []) nxdomain(packet, from);
	}
	expect(await Promise.all(held)).toEqual(busy.map(() => "done"));
	expect(asked.has("dropped.stall.test")).toBe(false);
	lookups.close();
}, 60_000);
