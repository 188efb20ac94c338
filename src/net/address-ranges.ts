import { BlockList, isIP } from "node:net";
import type { networkInterfaces } from "node:os";

/**
 * Where the gateway never connects for someone else (a webhook, a sandboxed tool's egress proxy)
 * unless the operator's setting names it: every range the IANA special-purpose registries mark as
 * not globally reachable (what is there is on the gateway's own network, which neither must be a
 * way into), plus multicast and the reserved 240/4. What
 * embeds an IPv4 (mapped, NAT64, 6to4, Teredo: embedded-ipv4.ts) is judged by that IPv4, so those
 * prefixes are not listed here. Narrower entries come first: the first match names the refusal.
 */
const table: [cidr: string, what: string][] = [
	["0.0.0.0/8", '"this network" (RFC 1122; 0.0.0.0 reaches this host)'],
	["10.0.0.0/8", "private network (RFC 1918)"],
	["100.64.0.0/10", "shared address space / carrier-grade NAT (RFC 6598; Alibaba's metadata is 100.100.100.200)"],
	["127.0.0.0/8", "loopback"],
	["169.254.0.0/16", "link-local (RFC 3927; cloud metadata is 169.254.169.254)"],
	["172.16.0.0/12", "private network (RFC 1918)"],
	["192.0.0.0/24", "IETF protocol assignments (RFC 6890)"],
	["192.0.2.0/24", "documentation (RFC 5737)"],
	["192.168.0.0/16", "private network (RFC 1918)"],
	["198.18.0.0/15", "benchmarking (RFC 2544)"],
	["198.51.100.0/24", "documentation (RFC 5737)"],
	["203.0.113.0/24", "documentation (RFC 5737)"],
	["224.0.0.0/4", "multicast"],
	["255.255.255.255/32", "broadcast"],
	["240.0.0.0/4", "reserved (RFC 1112)"],
	["::/128", "unspecified"],
	["::1/128", "loopback"],
	["100::/64", "discard-only (RFC 6666)"],
	["2001:2::/48", "benchmarking (RFC 5180)"],
	["2001:db8::/32", "documentation (RFC 3849)"],
	["3fff::/20", "documentation (RFC 9637)"],
	["5f00::/16", "SRv6 segment identifiers (RFC 9602)"],
	["fc00::/7", "unique-local (RFC 4193; AWS's metadata is fd00:ec2::254)"],
	["fe80::/10", "link-local"],
	["fec0::/10", "site-local (deprecated, RFC 3879)"],
	["ff00::/8", "multicast"],
];

export interface Range {
	/** The range as written in the table (`10.0.0.0/8`). */
	cidr: string;
	/** What it is, for the refusal's message. */
	what: string;
}

const ranges = table.map(([cidr, what]) => {
	const [net, bits] = cidr.split("/") as [string, string];
	const type = isIP(net) === 6 ? ("ipv6" as const) : ("ipv4" as const);
	const list = new BlockList();
	list.addSubnet(net, Number(bits), type);
	return { cidr, what, type, list };
});

/**
 * The refused range `address` (a bare IPv4 or IPv6, no zone) is in, or undefined. An IPv6 address
 * is matched against the IPv6 ranges only (BlockList would match `::ffff:10.0.0.1` to 10.0.0.0/8):
 * the IPv4 it embeds is judged on its own, so the refusal names it.
 */
export function refusedRange(address: string): Range | undefined {
	const type = isIP(address) === 6 ? "ipv6" : "ipv4";
	const hit = ranges.find((r) => r.type === type && r.list.check(address, type));
	return hit && { cidr: hit.cidr, what: hit.what };
}

/** Every refused range, for the docs and the tests. */
export const refusedRanges: readonly Range[] = ranges.map(({ cidr, what }) => ({ cidr, what }));

/** This host's interfaces, as os.networkInterfaces() gives them. */
export type Interfaces = () => ReturnType<typeof networkInterfaces>;

/**
 * Why `address` (a bare IPv4 or IPv6) is refused by default: a range of the table or one of this
 * host's own addresses (read from `interfaces` now, so an address taken on later counts); undefined
 * if it is not. `cidr` names the range, when it is one. Interfaces that cannot be read fail closed.
 */
export function defaultRefusal(address: string, interfaces: Interfaces): { text: string; cidr?: string } | undefined {
	const range = refusedRange(address);
	if (range) return { text: `in ${range.cidr}, ${range.what}`, cidr: range.cidr };
	let found: ReturnType<Interfaces>;
	try {
		found = interfaces();
	} catch (error) {
		return { text: `perhaps this host's own (its addresses could not be read: ${(error as Error).message})` };
	}
	// Same family only, as in refusedRange: the IPv4 a mapped address embeds is judged on its own.
	const type = isIP(address) === 6 ? "ipv6" : "ipv4";
	const own = new BlockList();
	for (const info of Object.values(found).flat())
		if (info && isIP(info.address) && (isIP(info.address) === 6 ? "ipv6" : "ipv4") === type)
			own.addAddress(info.address, type);
	if (own.check(address, type)) return { text: "one of this host's own addresses" };
	return undefined;
}
