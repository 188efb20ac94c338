import { describe, expect, it } from "vitest";
import {
	addressListed,
	allowedBy,
	beyondOperator,
	parseAllowHosts,
	registryHosts,
} from "../../src/net/egress-allow.ts";

// --sandbox-allow-hosts: the forms an entry takes, the preset, and what each lets through.
describe("the egress allow list", () => {
	it("reads names, *.suffix, addresses and ports, and expands `registries`", () => {
		const entries = parseAllowHosts([
			"Pypi.org",
			"*.example.com:443",
			"127.0.0.1:8080",
			"[::1]:9",
			"::1",
			"registries",
			" ",
		]);
		expect(entries.slice(0, 5).map(({ host, wildcard, port }) => ({ host, wildcard, port }))).toEqual([
			{ host: "pypi.org", wildcard: false, port: undefined },
			{ host: "example.com", wildcard: true, port: 443 },
			{ host: "127.0.0.1", wildcard: false, port: 8080 },
			{ host: "::1", wildcard: false, port: 9 },
			{ host: "::1", wildcard: false, port: undefined },
		]);
		expect(entries.slice(5).map((e) => e.raw)).toEqual(registryHosts);
		expect(registryHosts).toEqual(
			expect.arrayContaining(["registry.npmjs.org:443", "pypi.org:443", "deb.debian.org:80"]),
		);
	});

	it("refuses what is none of the forms", () => {
		for (const bad of [
			"http://pypi.org",
			"a b",
			"pypi.org:0",
			"pypi.org:70000",
			"[nothost]:80",
			"*",
			"host:",
			"-x.org",
		])
			expect(() => parseAllowHosts([bad]), bad).toThrow(/--sandbox-allow-hosts/);
	});

	it("matches a host and port: exact names, a suffix below it only, an address in any written form", () => {
		const entries = parseAllowHosts(["pypi.org:443", "*.example.com", "127.0.0.1:8080", "[::1]"]);
		expect(allowedBy(entries, "pypi.org", 443)?.raw).toBe("pypi.org:443");
		expect(allowedBy(entries, "pypi.org", 80)).toBeUndefined();
		expect(allowedBy(entries, "evilpypi.org", 443)).toBeUndefined();
		expect(allowedBy(entries, "a.b.example.com", 22)?.raw).toBe("*.example.com");
		expect(allowedBy(entries, "example.com", 443)).toBeUndefined();
		expect(allowedBy(entries, "badexample.com", 443)).toBeUndefined();
		expect(allowedBy(entries, "127.0.0.1", 8080)?.raw).toBe("127.0.0.1:8080");
		expect(allowedBy(entries, "127.0.0.1", 8081)).toBeUndefined();
		expect(allowedBy(entries, "0:0:0:0:0:0:0:1", 5)?.raw).toBe("[::1]");
		// A name is never an address entry's, even one that resolves there.
		expect(allowedBy(entries, "localhost", 8080)).toBeUndefined();
		// What lifts the refusal of a private address: an entry naming that address, at that port.
		expect(addressListed(entries, "127.0.0.1", 8080)).toBe(true);
		expect(addressListed(entries, "127.0.0.1", 443)).toBe(false);
		expect(addressListed(entries, "127.0.0.2", 8080)).toBe(false);
	});

	it("lets a session's list only narrow the operator's", () => {
		const operator = ["pypi.org", "*.example.com:443", "127.0.0.1:8080", "registries"];
		const within = ["pypi.org:443", "a.example.com:443", "*.b.example.com:443", "127.0.0.1:8080", "deb.debian.org:80"];
		expect(beyondOperator(operator, within)).toEqual([]);
		expect(beyondOperator(operator, [])).toEqual([]);
		const beyond = ["*.pypi.org", "example.com:443", "a.example.com", "127.0.0.1", "localhost:8080", "npmjs.org"];
		expect(beyondOperator(operator, beyond)).toEqual(beyond);
		expect(() => beyondOperator(operator, ["a b"])).toThrow(/--sandbox-allow-hosts/);
	});
});
