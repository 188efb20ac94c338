import { lookup } from "node:dns/promises";
import { BlockList, isIP } from "node:net";
import { embeddedIPv4 } from "./embedded-ipv4.ts";

export { embeddedIPv4 };

/**
 * Where webhooks may go. Refused unless allowed explicitly: link-local (cloud metadata lives
 * there: 169.254.169.254, fd00:ec2::254, Alibaba's 100.100.100.200), loopback, and the
 * unspecified/"this network" ranges. With --webhook-allow, only the listed CIDRs/addresses/host
 * names are reachable at all, and a listed CIDR also lifts the default refusal for its range.
 * An IPv6 address that embeds an IPv4 (mapped, compatible, NAT64, 6to4, Teredo: embedded-ipv4.ts)
 * must pass the IPv4's rules too, since a translator or tunnel delivers it there.
 */
const refusedByDefault: [string, number, "ipv4" | "ipv6"][] = [
	["169.254.0.0", 16, "ipv4"],
	["100.100.100.200", 32, "ipv4"],
	["127.0.0.0", 8, "ipv4"],
	["0.0.0.0", 8, "ipv4"],
	["fe80::", 10, "ipv6"],
	["fd00:ec2::254", 128, "ipv6"],
	["::1", 128, "ipv6"],
	["::", 128, "ipv6"],
];

export interface Destination {
	/** The checked address to connect to (pinned, so a second DNS answer cannot move the request). */
	address: string;
	family: 4 | 6;
}

export class DestinationError extends Error {}

export class Destinations {
	readonly #refused = new BlockList();
	readonly #cidrs = new BlockList();
	readonly #hosts: string[] = [];
	readonly #restricted: boolean;

	/** `allow`: CIDRs (`10.0.0.0/8`), addresses, host names (`hooks.example.com`, `*.example.com`), or `loopback`. */
	constructor(allow: string[]) {
		for (const [net, prefix, type] of refusedByDefault) this.#refused.addSubnet(net, prefix, type);
		for (const raw of allow) {
			const entry = raw.trim().toLowerCase();
			if (!entry) continue;
			if (entry === "loopback") {
				this.#cidrs.addSubnet("127.0.0.0", 8, "ipv4");
				this.#cidrs.addSubnet("::1", 128, "ipv6");
				continue;
			}
			const [net, prefix] = entry.split("/");
			if (net && isIP(net)) {
				const type = isIP(net) === 6 ? "ipv6" : "ipv4";
				const bits = prefix === undefined ? (type === "ipv6" ? 128 : 32) : Number(prefix);
				if (!Number.isInteger(bits) || bits < 0 || bits > (type === "ipv6" ? 128 : 32))
					throw new Error(`--webhook-allow: ${raw} is not a CIDR`);
				this.#cidrs.addSubnet(net, bits, type);
			} else if (/^(\*\.)?[a-z0-9.-]+$/.test(entry)) this.#hosts.push(entry);
			else throw new Error(`--webhook-allow: ${raw} is neither a CIDR, an address nor a host name`);
		}
		this.#restricted = allow.some((a) => a.trim() !== "");
	}

	#hostListed(host: string): boolean {
		return this.#hosts.some((h) => (h.startsWith("*.") ? host.endsWith(h.slice(1)) : host === h));
	}

	#check(host: string, raw: string): void {
		const bare = raw.replace(/%.*$/, ""); // a link-local answer may carry a zone (fe80::1%eth0)
		const own = { address: bare, type: isIP(bare) === 6 ? "ipv6" : "ipv4" } as const;
		const all = [own, ...embeddedIPv4(raw).map((address) => ({ address, type: "ipv4" as const }))];
		const listed = (a: { address: string; type: "ipv4" | "ipv6" }) => this.#cidrs.check(a.address, a.type);
		// Listing the IPv6 form itself (a NAT64 prefix, say) lifts the refusal for what it embeds.
		const refused = !listed(own) && all.some((a) => this.#refused.check(a.address, a.type) && !listed(a));
		if (refused) throw new DestinationError(`${host} resolves to ${raw}, a link-local, metadata or loopback address`);
		if (this.#restricted && !all.some(listed) && !this.#hostListed(host))
			throw new DestinationError(`${host} (${raw}) is not in --webhook-allow`);
	}

	/** Resolves the URL's host and checks every address it has; throws DestinationError when refused. */
	async resolve(url: URL): Promise<Destination> {
		const host = url.hostname.replace(/^\[|\]$/g, "").toLowerCase();
		const literal = isIP(host);
		const addresses = literal
			? [{ address: host, family: literal as 4 | 6 }]
			: ((await lookup(host, { all: true, verbatim: true })) as Destination[]);
		if (addresses.length === 0) throw new DestinationError(`${host} does not resolve`);
		for (const a of addresses) this.#check(host, a.address);
		return addresses[0] as Destination;
	}
}
