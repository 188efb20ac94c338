import { describe, expect, it } from "vitest";
import { Destinations, embeddedIPv4 } from "../../src/webhooks/destinations.ts";

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
		"http://[::ffff:10.1.2.3]/",
		"http://[2606:4700::1111]/",
	])("allow %s by default (its IPv4 is allowed)", async (url) => {
		expect(await refused(new Destinations([]), url)).toBe(false);
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
