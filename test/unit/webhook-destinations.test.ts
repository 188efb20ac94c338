import type { NetworkInterfaceInfo } from "node:os";
import { describe, expect, it } from "vitest";
import { type DestinationOptions, Destinations, embeddedIPv4 } from "../../src/webhooks/destinations.ts";

/**
 * IPv6 forms that carry an IPv4 address (RFC 4291 compatible/mapped, RFC 6052 NAT64, RFC 3056
 * 6to4, RFC 4380 Teredo) reach that IPv4 through a translator or tunnel, so they answer to the
 * IPv4's rules. None of these routes exist here: this is defence in depth, checked by table.
 */
const refused = (d: Destinations, url: string) =>
	d.resolve(new URL(url)).then(
		() => false,
		() => true,
	);

describe("embeddedIPv4", () => {
	it.each([
		["::127.0.0.1", "127.0.0.1"],
		["::7f00:1", "127.0.0.1"],
		["::ffff:7f00:1", "127.0.0.1"],
		["::ffff:169.254.169.254", "169.254.169.254"],
		["64:ff9b::a9fe:a9fe", "169.254.169.254"],
		["64:ff9b:1::7f00:1", "127.0.0.1"],
		// 64:ff9b:1::/48 with the /48 layout of RFC 6052: 16 bits, the zero u-octet, 16 bits.
		["64:ff9b:1:7f00:0:100::", "127.0.0.1"],
		["2002:7f00:1::", "127.0.0.1"],
		["2002:a9fe:a9fe:1::5", "169.254.169.254"],
		// Teredo: the client's address is the last 32 bits inverted (127.0.0.1 → 80ff:fffe).
		["2001:0:4136:e378:8000:63bf:80ff:fffe", "127.0.0.1"],
		["2001::5601:5601", "169.254.169.254"],
		["fe80::1%eth0", undefined],
		["2001:db8::1", undefined],
		["2606:4700::1111", undefined],
		["10.0.0.1", undefined],
	])("%s → %s", (address, expected) => {
		if (expected === undefined) expect(embeddedIPv4(address)).toEqual([]);
		else expect(embeddedIPv4(address)).toContain(expected);
	});
});

describe("webhook destinations that embed an IPv4", () => {
	it.each([
		"http://[::127.0.0.1]/",
		"http://[::7f00:1]/",
		"http://[::a9fe:a9fe]/",
		"http://[::ffff:7f00:1]/",
		"http://[::ffff:127.0.0.1]/",
		"http://[64:ff9b::127.0.0.1]/",
		"http://[64:ff9b::a9fe:a9fe]/",
		"http://[64:ff9b:1::7f00:1]/",
		"http://[64:ff9b:1:7f00:0:100::]/",
		"http://[2002:7f00:1::]/",
		"http://[2002:a9fe:a9fe::1]/",
		"http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/",
		"http://[2001::5601:5601]/",
		"http://[::ffff:100.100.100.200]/",
		"http://[64:ff9b::0.0.0.0]/",
	])("refuse %s by default (its IPv4 is refused)", async (url) => {
		expect(await refused(new Destinations([]), url)).toBe(true);
	});

	it.each([
		"http://[64:ff9b::808:808]/",
		"http://[2002:808:808::1]/",
		"http://[2001:0:4136:e378:8000:63bf:f7f7:f7f7]/",
		"http://[::ffff:93.184.216.34]/",
		"http://[2606:4700::1111]/",
	])("allow %s by default (its IPv4 is allowed)", async (url) => {
		expect(await refused(new Destinations([], { interfaces: () => ({}) }), url)).toBe(false);
	});

	it("with --webhook-allow, an embedded IPv4 must be listed like the IPv4 itself", async () => {
		const d = new Destinations(["10.0.0.0/8"]);
		expect(await refused(d, "http://[64:ff9b::10.9.9.9]/")).toBe(false);
		expect(await refused(d, "http://[2002:a09:909::1]/")).toBe(false);
		expect(await refused(d, "http://[64:ff9b::192.168.1.1]/")).toBe(true);
		expect(await refused(d, "http://[2002:c0a8:101::]/")).toBe(true);
		expect(await refused(d, "http://[::192.168.1.1]/")).toBe(true);
	});
});

type Interfaces = NonNullable<DestinationOptions["interfaces"]>;
const noInterfaces: Interfaces = () => ({});
/** What a refusal says, or "" when the destination is allowed. */
const why = (d: Destinations, url: string) =>
	d.resolve(new URL(url)).then(
		() => "",
		(error: Error) => error.message,
	);
/** A resolver the test answers for: `answers(host)` gives the addresses of this lookup. */
const resolver = (answers: (host: string) => string[]) => {
	const asked: string[] = [];
	const lookup = async (host: string) => {
		asked.push(host);
		return answers(host).map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
	};
	return { lookup, asked };
};

describe("webhook destinations refused by default", () => {
	const d = new Destinations([], { interfaces: noInterfaces });
	it.each([
		["http://10.0.0.1/", "10.0.0.0/8"],
		["http://10.255.255.254/", "10.0.0.0/8"],
		["http://172.16.0.1/", "172.16.0.0/12"],
		["http://172.31.255.254/", "172.16.0.0/12"],
		["http://192.168.1.1/", "192.168.0.0/16"],
		["http://100.64.0.1/", "100.64.0.0/10"],
		["http://100.127.255.254/", "100.64.0.0/10"],
		["http://100.100.100.200/", "100.64.0.0/10"],
		["http://169.254.169.254/latest/meta-data", "169.254.0.0/16"],
		["http://127.0.0.1/", "127.0.0.0/8"],
		["http://127.255.255.254/", "127.0.0.0/8"],
		["http://0.0.0.0/", "0.0.0.0/8"],
		["http://0.1.2.3/", "0.0.0.0/8"],
		["http://192.0.0.170/", "192.0.0.0/24"],
		["http://198.18.0.1/", "198.18.0.0/15"],
		["http://192.0.2.1/", "192.0.2.0/24"],
		["http://224.0.0.1/", "224.0.0.0/4"],
		["http://239.255.255.250/", "224.0.0.0/4"],
		["http://255.255.255.255/", "255.255.255.255/32"],
		["http://240.0.0.1/", "240.0.0.0/4"],
		["http://[::1]/", "::1/128"],
		["http://[::]/", "::/128"],
		["http://[fe80::1]/", "fe80::/10"],
		["http://[febf::1]/", "fe80::/10"],
		["http://[fc00::1]/", "fc00::/7"],
		["http://[fd00:ec2::254]/", "fc00::/7"],
		["http://[fdff:ffff::1]/", "fc00::/7"],
		["http://[fec0::1]/", "fec0::/10"],
		["http://[ff02::1]/", "ff00::/8"],
		["http://[100::1]/", "100::/64"],
		["http://[2001:db8::1]/", "2001:db8::/32"],
		["http://[::ffff:10.0.0.1]/", "10.0.0.0/8"],
		["http://[::ffff:192.168.1.1]/", "192.168.0.0/16"],
		["http://[::ffff:0:10.0.0.1]/", "10.0.0.0/8"],
		["http://[::ffff:100.64.0.1]/", "100.64.0.0/10"],
		["http://[64:ff9b::172.16.0.1]/", "172.16.0.0/12"],
		["http://[2002:c0a8:101::1]/", "192.168.0.0/16"],
	])("%s is refused, naming %s and how to allow it", async (url, range) => {
		const message = await why(d, url);
		expect(message).toMatch(/^Refused by default: /);
		expect(message).toContain(` is in ${range}, `);
		const fix = message.split(". To allow it, add ")[1] ?? "";
		expect(fix).toMatch(/ to --webhook-allow \(config webhookAllow\)$/);
		if (!/\/(32|128)$/.test(range)) expect(fix).toContain(range);
	});

	it.each([
		"http://9.255.255.255/",
		"http://11.0.0.0/",
		"http://172.15.255.255/",
		"http://172.32.0.0/",
		"http://192.167.255.255/",
		"http://192.169.0.0/",
		"http://100.63.255.255/",
		"http://100.128.0.0/",
		"http://169.253.255.255/",
		"http://169.255.0.0/",
		"http://126.255.255.255/",
		"http://128.0.0.0/",
		"http://223.255.255.255/",
		"http://[2606:4700::1111]/",
		"http://[fbff:ffff::1]/",
		"http://[fe00::1]/",
		"http://[::ffff:93.184.216.34]/",
		"http://[64:ff9b::93.184.216.34]/",
	])("%s, just outside, is allowed", async (url) => {
		expect(await why(d, url)).toBe("");
	});

	it("a name is judged by every address it resolves to, and the refusal says which and how to allow it", async () => {
		const { lookup } = resolver((host) => (host === "hooks.internal" ? ["93.184.216.34", "10.0.0.1"] : ["10.0.0.1"]));
		const named = new Destinations([], { lookup, interfaces: noInterfaces });
		expect(await why(named, "https://hooks.internal/pi")).toBe(
			"Refused by default: hooks.internal resolves to 10.0.0.1, which is in 10.0.0.0/8, private network (RFC 1918). " +
				"To allow it, add 10.0.0.1, 10.0.0.0/8 or hooks.internal to --webhook-allow (config webhookAllow)",
		);
		expect(await why(d, "http://[::ffff:10.0.0.1]/")).toBe(
			"Refused by default: ::ffff:a00:1 embeds 10.0.0.1, which is in 10.0.0.0/8, private network (RFC 1918). " +
				"To allow it, add 10.0.0.1 or 10.0.0.0/8 to --webhook-allow (config webhookAllow)",
		);
	});
});

describe("this host's own addresses", () => {
	const info = (address: string): NetworkInterfaceInfo => {
		const common = { address, netmask: "", mac: "00:00:00:00:00:00", internal: false, cidr: null };
		return address.includes(":") ? { ...common, family: "IPv6", scopeid: 0 } : { ...common, family: "IPv4" };
	};

	it("are read at every check: an address the host takes on is refused from then on, in every form", async () => {
		let own: string[] = [];
		const { lookup } = resolver(() => ["11.0.0.1"]);
		const d = new Destinations([], { lookup, interfaces: () => ({ eth0: own.map(info) }) });
		expect(await why(d, "http://11.0.0.1/")).toBe("");
		own = ["11.0.0.1", "2a00:1450::5"];
		expect(await why(d, "http://11.0.0.1/")).toBe(
			"Refused by default: 11.0.0.1 is one of this host's own addresses. To allow it, add 11.0.0.1 to --webhook-allow (config webhookAllow)",
		);
		expect(await why(d, "http://hooks.example.com/")).toContain(
			"hooks.example.com resolves to 11.0.0.1, which is one of this host's own addresses",
		);
		expect(await why(d, "http://[::ffff:11.0.0.1]/")).toContain(
			"embeds 11.0.0.1, which is one of this host's own addresses",
		);
		expect(await why(d, "http://[2a00:1450:0::5]/")).toContain("2a00:1450::5 is one of this host's own addresses");
		own = [];
		expect(await why(d, "http://11.0.0.1/")).toBe("");
	});

	it("an interface list that cannot be read refuses what is not listed (fail closed)", async () => {
		const interfaces = () => {
			throw new Error("uv_interface_addresses failed");
		};
		expect(await why(new Destinations([], { interfaces }), "http://93.184.216.34/")).toContain(
			"perhaps this host's own (its addresses could not be read: uv_interface_addresses failed)",
		);
		expect(await why(new Destinations(["93.184.216.34"], { interfaces }), "http://93.184.216.34/")).toBe("");
	});
});

describe("--webhook-allow lifts the refusal for exactly what it lists", () => {
	const { lookup } = resolver((host) =>
		host.endsWith(".internal") || host.endsWith(".corp.example") ? ["10.0.0.1"] : [],
	);
	const allow = (...list: string[]) => new Destinations(list, { lookup, interfaces: () => ({ lo: [] }) });

	it("an address: that address and no other", async () => {
		const d = allow("10.0.0.1");
		expect(await why(d, "http://10.0.0.1:8080/")).toBe("");
		expect(await why(d, "http://10.0.0.2/")).toContain("10.0.0.2 is in 10.0.0.0/8");
		expect(await why(d, "http://93.184.216.34/")).toMatch(/^Not in --webhook-allow/);
	});

	it("loopback: 127.0.0.0/8 and ::1, nothing private", async () => {
		const d = allow("loopback");
		for (const url of ["http://127.0.0.1/", "http://127.0.0.2/", "http://[::1]/", "http://[::ffff:127.0.0.1]/"])
			expect(await why(d, url), url).toBe("");
		expect(await why(d, "http://10.0.0.1/")).toContain("10.0.0.0/8");
		expect(await why(d, "http://169.254.169.254/")).toContain("169.254.0.0/16");
		expect(await why(d, "http://[fc00::1]/")).toContain("fc00::/7");
	});

	it("a CIDR: its range only", async () => {
		const d = allow("192.168.0.0/16", "fc00::/7");
		expect(await why(d, "http://192.168.1.1/")).toBe("");
		expect(await why(d, "http://[fd00::1]/")).toBe("");
		expect(await why(d, "http://172.16.0.1/")).toContain("172.16.0.0/12");
		expect(await why(d, "http://[fe80::1]/")).toContain("fe80::/10");
	});

	it("a host name: that name's answers, not the same address by another name or written out", async () => {
		const d = allow("hooks.internal", "*.corp.example");
		expect(await why(d, "http://hooks.internal/")).toBe("");
		expect(await why(d, "http://a.corp.example/")).toBe("");
		expect(await why(d, "http://other.internal/")).toContain(
			"other.internal resolves to 10.0.0.1, which is in 10.0.0.0/8",
		);
		expect(await why(d, "http://10.0.0.1/")).toContain("10.0.0.1 is in 10.0.0.0/8");
	});
});

describe("a DNS answer that changes after registration", () => {
	it("is checked again at each resolve (each delivery), and the address returned is the one checked", async () => {
		const answers = [["93.184.216.34"], ["10.0.0.1"], ["93.184.216.34", "169.254.169.254"], ["93.184.216.34"]];
		let n = 0;
		const { lookup, asked } = resolver(() => answers[n++] ?? []);
		const d = new Destinations([], { lookup, interfaces: noInterfaces });
		const url = new URL("http://rebind.example:8080/hook");
		expect(await d.resolve(url)).toEqual({ address: "93.184.216.34", family: 4 });
		await expect(d.resolve(url)).rejects.toThrow("rebind.example resolves to 10.0.0.1, which is in 10.0.0.0/8");
		await expect(d.resolve(url)).rejects.toThrow("rebind.example resolves to 169.254.169.254");
		expect(await d.resolve(url)).toEqual({ address: "93.184.216.34", family: 4 });
		expect(asked).toEqual(["rebind.example", "rebind.example", "rebind.example", "rebind.example"]);
	});
});
