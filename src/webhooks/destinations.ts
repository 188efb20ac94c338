import { lookup as dnsLookup } from "node:dns/promises";
import { BlockList, isIP } from "node:net";
import { networkInterfaces } from "node:os";
import { defaultRefusal, type Interfaces } from "../net/address-ranges.ts";
import { embeddedIPv4 } from "../net/embedded-ipv4.ts";

export { embeddedIPv4 };

/**
 * Where webhooks may go. Refused unless --webhook-allow lists them: the ranges of address-ranges.ts
 * (loopback, private, carrier-grade NAT, link-local and metadata, unique-local, multicast,
 * reserved, unspecified) and this host's own addresses, read from its interfaces at each check.
 * An IPv6 address that embeds an IPv4 (mapped, compatible, NAT64, 6to4, Teredo: embedded-ipv4.ts)
 * must pass the IPv4's rules too, since a translator or tunnel delivers it there.
 *
 * With --webhook-allow, only what it lists is reachable at all, and what it lists is reachable
 * even where refused by default: a CIDR or address for the addresses inside it (`loopback` is
 * 127.0.0.0/8 and ::1), a host name (`*.suffix` too) for whatever that name resolves to.
 *
 * A URL is checked when a webhook is registered and again before every delivery, on the answer
 * the name has then; the delivery connects to the address checked (sender.ts), never to a second
 * answer.
 */

/** A name's addresses, as dns.lookup(host, { all: true }) gives them. Tests pass their own resolver. */
export type Lookup = (host: string) => Promise<{ address: string; family: number }[]>;
export type { Interfaces };

export interface DestinationOptions {
	lookup?: Lookup;
	interfaces?: Interfaces;
}

export interface Destination {
	/** The checked address to connect to (pinned, so a second DNS answer cannot move the request). */
	address: string;
	family: 4 | 6;
}

export class DestinationError extends Error {}

const systemLookup: Lookup = (host) => dnsLookup(host, { all: true, verbatim: true });
const setting = "--webhook-allow (config webhookAllow)";
const typeOf = (address: string) => (isIP(address) === 6 ? "ipv6" : "ipv4");

export class Destinations {
	readonly #cidrs = new BlockList();
	readonly #hosts: string[] = [];
	readonly #restricted: boolean;
	readonly #lookup: Lookup;
	readonly #interfaces: Interfaces;

	/** `allow`: CIDRs (`10.0.0.0/8`), addresses, host names (`hooks.example.com`, `*.example.com`), or `loopback`. */
	constructor(allow: string[], options: DestinationOptions = {}) {
		this.#lookup = options.lookup ?? systemLookup;
		this.#interfaces = options.interfaces ?? networkInterfaces;
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
				const type = typeOf(net);
				const bits = prefix === undefined ? (type === "ipv6" ? 128 : 32) : Number(prefix);
				if (!Number.isInteger(bits) || bits < 0 || bits > (type === "ipv6" ? 128 : 32))
					throw new Error(`--webhook-allow: ${raw} is not a CIDR`);
				this.#cidrs.addSubnet(net, bits, type);
			} else if (/^(\*\.)?[a-z0-9.-]+$/.test(entry)) this.#hosts.push(entry);
			else throw new Error(`--webhook-allow: ${raw} is neither a CIDR, an address nor a host name`);
		}
		this.#restricted = allow.some((a) => a.trim() !== "");
	}

	/** Resolves the URL's host and checks every address it has; throws DestinationError when refused. */
	async resolve(url: URL): Promise<Destination> {
		const host = url.hostname.replace(/^\[|\]$/g, "").toLowerCase();
		const addresses = isIP(host) ? [{ address: host }] : await this.#lookup(host);
		if (addresses.length === 0) throw new Error(`${host} does not resolve`);
		for (const a of addresses) this.#check(host, a.address);
		const address = (addresses[0] as { address: string }).address;
		return { address, family: isIP(address.replace(/%.*$/, "")) === 6 ? 6 : 4 };
	}

	#hostListed(host: string): boolean {
		return this.#hosts.some((h) => (h.startsWith("*.") ? host.endsWith(h.slice(1)) : host === h));
	}

	#listed(address: string): boolean {
		return this.#cidrs.check(address, typeOf(address));
	}

	#check(host: string, raw: string): void {
		const address = raw.replace(/%.*$/, ""); // a link-local answer may carry a zone (fe80::1%eth0)
		const all = [address, ...embeddedIPv4(address)];
		const name = isIP(host) ? undefined : host;
		const named = name !== undefined && this.#hostListed(name);
		const what = name ? `${name} resolves to ${address}` : address;
		// Listing the IPv6 form itself (a NAT64 prefix, say) lifts the refusal for what it embeds.
		if (!named && !this.#listed(address))
			for (const inner of all.filter((a) => !this.#listed(a))) {
				const why = this.#refusal(inner);
				if (!why) continue;
				const embeds = inner === address ? "" : `${name ? ", which" : ""} embeds ${inner}`;
				throw new DestinationError(
					`Refused by default: ${what}${embeds}${name || embeds ? ", which" : ""} is ${why.text}. ` +
						`To allow it, add ${either([inner, ...wider(inner, why.cidr), name])} to ${setting}`,
				);
			}
		if (this.#restricted && !named && !all.some((a) => this.#listed(a)))
			throw new DestinationError(
				`Not in ${setting}, which lists the only destinations allowed: ${what}. ` +
					`To allow it, add ${either([address, name])} there`,
			);
	}

	/** Why `address` is refused by default: a range of address-ranges.ts or this host's own address. */
	#refusal(address: string): { text: string; cidr?: string } | undefined {
		return defaultRefusal(address, this.#interfaces);
	}
}

/** What else lifts a refusal by `cidr`: the range itself (unless it is the one address), and `loopback` for loopback. */
function wider(address: string, cidr: string | undefined): string[] {
	if (!cidr) return [];
	const loopback = cidr === "127.0.0.0/8" || cidr === "::1/128" ? ["loopback"] : [];
	return cidr === `${address}/${isIP(address) === 6 ? 128 : 32}` ? loopback : [cidr, ...loopback];
}

/** `a`, `a or b`, `a, b or c`; undefined entries left out. */
function either(items: (string | undefined)[]): string {
	const present = items.filter((i): i is string => Boolean(i));
	return present.length < 2 ? (present[0] ?? "") : `${present.slice(0, -1).join(", ")} or ${present.at(-1)}`;
}
