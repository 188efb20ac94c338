import { isIP } from "node:net";

/**
 * IPv6 forms that carry an IPv4 address and, through a translator or tunnel, reach it: a webhook to
 * `[64:ff9b::127.0.0.1]` on a NAT64 network is a webhook to 127.0.0.1. Each form is a prefix and
 * where its IPv4 sits (byte offsets of the four octets); Teredo stores its client inverted.
 */
const forms: { prefix: number[]; octets: number[][]; invert?: true }[] = [
	// ::/96 IPv4-compatible (RFC 4291, deprecated) and ::ffff:0:0/96 IPv4-mapped.
	{ prefix: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], octets: [[12, 13, 14, 15]] },
	{ prefix: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff], octets: [[12, 13, 14, 15]] },
	// ::ffff:0:0:0/96 IPv4-translated (RFC 2765, SIIT).
	{ prefix: [0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0], octets: [[12, 13, 14, 15]] },
	// NAT64 well-known prefix 64:ff9b::/96 (RFC 6052).
	{ prefix: [0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0], octets: [[12, 13, 14, 15]] },
	// NAT64 local-use 64:ff9b:1::/48 (RFC 8215): operators pick the prefix length inside it, so every
	// RFC 6052 layout that fits (/48, /56, /64, /96; byte 8 is the zero "u" octet) is checked.
	{
		prefix: [0, 0x64, 0xff, 0x9b, 0, 1],
		octets: [
			[6, 7, 9, 10],
			[7, 9, 10, 11],
			[9, 10, 11, 12],
			[12, 13, 14, 15],
		],
	},
	// 6to4 2002::/16 (RFC 3056): the IPv4 follows the prefix.
	{ prefix: [0x20, 0x02], octets: [[2, 3, 4, 5]] },
	// Teredo 2001::/32 (RFC 4380): the client's IPv4 is the last 32 bits, inverted.
	{ prefix: [0x20, 0x01, 0, 0], octets: [[12, 13, 14, 15]], invert: true },
];

/** The 16 bytes of an IPv6 address in any written form (`::`, a dotted tail, a zone), or undefined. */
export function ipv6Bytes(text: string): number[] | undefined {
	const address = text.replace(/%.*$/, "");
	if (isIP(address) !== 6) return undefined;
	let groups = address.split(":");
	const tail = groups.at(-1) as string;
	if (tail.includes(".")) {
		const [a, b, c, d] = tail.split(".").map(Number) as [number, number, number, number];
		groups = [...groups.slice(0, -1), ((a << 8) | b).toString(16), ((c << 8) | d).toString(16)];
	}
	const gap = groups.indexOf("");
	if (gap !== -1) {
		const present = groups.filter((g) => g !== "");
		const zeros = Array.from({ length: 8 - present.length }, () => "0");
		groups = [...groups.slice(0, gap).filter((g) => g !== ""), ...zeros, ...groups.slice(gap).filter((g) => g !== "")];
	}
	return groups.flatMap((g) => {
		const n = Number.parseInt(g, 16);
		return [n >> 8, n & 0xff];
	});
}

/** The IPv4 addresses an IPv6 address embeds (none for ordinary IPv6, and for IPv4 itself). */
export function embeddedIPv4(address: string): string[] {
	const bytes = ipv6Bytes(address);
	if (!bytes) return [];
	const found: string[] = [];
	for (const form of forms) {
		if (!form.prefix.every((b, i) => bytes[i] === b)) continue;
		for (const at of form.octets) {
			const octets = at.map((i) => (form.invert ? ~(bytes[i] as number) & 0xff : (bytes[i] as number)));
			found.push(octets.join("."));
		}
	}
	return [...new Set(found)];
}
