import { BlockList, isIP } from "node:net";

/**
 * Where a sandboxed pi's tools may connect through the gateway's egress proxy (--sandbox-allow-hosts,
 * docs/security.md). An entry is a host name (`pypi.org`), `*.suffix` (any name below it, not the
 * suffix itself), an IPv4 or an IPv6 in brackets, each with an optional `:port` (any port without
 * one), or the preset `registries`. Parsed once at start (config.ts), so a bad entry stops the
 * gateway there; the proxy (sessions/relay/egress-proxy.ts) asks `allows` per request.
 *
 * A name that is allowed still has to resolve to addresses the proxy connects to for others: a
 * loopback, private, link-local or metadata address, or this host's own (address-ranges.ts), is
 * reached only when an entry names that address itself (`127.0.0.1:8080`), so a listed name whose
 * DNS answer moves to 169.254.169.254 is refused.
 */
export interface AllowEntry {
	/** The entry as written, for messages. */
	raw: string;
	/** A lowercase host name without its `*.`, or an address. */
	host: string;
	wildcard: boolean;
	/** Set for an address entry: matches that address in any written form. */
	address?: BlockList;
	port?: number;
}

/** The package registries `registries` allows (HTTPS; apt's mirrors on HTTP too, as apt uses it). */
export const registryHosts = [
	"registry.npmjs.org:443",
	"registry.yarnpkg.com:443",
	"pypi.org:443",
	"files.pythonhosted.org:443",
	"deb.debian.org:80",
	"deb.debian.org:443",
	"security.debian.org:80",
	"security.debian.org:443",
	"archive.ubuntu.com:80",
	"archive.ubuntu.com:443",
	"security.ubuntu.com:80",
	"security.ubuntu.com:443",
	"ports.ubuntu.com:80",
	"ports.ubuntu.com:443",
];

const setting = "--sandbox-allow-hosts";
const hostName = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/;

/** A host as a request names it: lowercase, no brackets, no trailing dot. */
export function normalHost(host: string): string {
	return host
		.trim()
		.toLowerCase()
		.replace(/^\[|\]$/g, "")
		.replace(/\.$/, "");
}

function parsePort(text: string, raw: string): number {
	const port = Number(text);
	if (!/^\d{1,5}$/.test(text) || port < 1 || port > 65535) throw new Error(`${setting}: ${raw} has no valid port`);
	return port;
}

function parseEntry(raw: string): AllowEntry {
	const text = raw.trim().toLowerCase();
	let host = text;
	let port: number | undefined;
	const bracketed = /^\[([^\]]+)\](?::(.*))?$/.exec(text);
	if (bracketed) {
		host = bracketed[1] as string;
		if (isIP(host) !== 6) throw new Error(`${setting}: ${raw} is not an IPv6 address in brackets`);
		if (bracketed[2] !== undefined) port = parsePort(bracketed[2], raw);
	} else if (isIP(text) === 6) {
		host = text;
	} else {
		const at = text.lastIndexOf(":");
		if (at !== -1) {
			port = parsePort(text.slice(at + 1), raw);
			host = text.slice(0, at);
		}
	}
	host = host.replace(/\.$/, "");
	if (isIP(host)) {
		const address = new BlockList();
		address.addAddress(host, isIP(host) === 6 ? "ipv6" : "ipv4");
		return { raw, host, wildcard: false, address, port };
	}
	const wildcard = host.startsWith("*.");
	if (wildcard) host = host.slice(2);
	if (!hostName.test(host))
		throw new Error(
			`${setting}: ${raw} is neither a host name, *.suffix, nor an address (each with an optional :port)`,
		);
	return { raw, host, wildcard, port };
}

/** The setting's entries, `registries` expanded; throws on an entry that is none of the forms. */
export function parseAllowHosts(list: readonly string[]): AllowEntry[] {
	return list
		.filter((raw) => raw.trim() !== "")
		.flatMap((raw) => (raw.trim().toLowerCase() === "registries" ? registryHosts : [raw]))
		.map(parseEntry);
}

function addressMatches(entry: AllowEntry, address: string): boolean {
	const type = isIP(address) === 6 ? "ipv6" : "ipv4";
	return entry.address?.check(address, type) ?? false;
}

/** The entry that lets a request to `host` (normalHost) at `port` through, or undefined. */
export function allowedBy(entries: readonly AllowEntry[], host: string, port: number): AllowEntry | undefined {
	return entries.find((e) => {
		if (e.port !== undefined && e.port !== port) return false;
		if (e.address) return isIP(host) !== 0 && addressMatches(e, host);
		return e.wildcard ? host.endsWith(`.${e.host}`) : host === e.host;
	});
}

/** Whether an entry names `address` itself at `port`: what lifts the default refusal of a private address. */
export function addressListed(entries: readonly AllowEntry[], address: string, port: number): boolean {
	return entries.some((e) => (e.port === undefined || e.port === port) && addressMatches(e, address));
}

/** Whether `outer` lets through everything `inner` does (a session's entry within the operator's). */
function covers(outer: AllowEntry, inner: AllowEntry): boolean {
	if (outer.port !== undefined && outer.port !== inner.port) return false;
	if (outer.address) return inner.address !== undefined && addressMatches(outer, inner.host);
	if (inner.address) return false;
	if (outer.wildcard) return inner.host.endsWith(`.${outer.host}`);
	return !inner.wildcard && inner.host === outer.host;
}

/**
 * A session's own list (its create body's `sandboxAllowHosts`), which may only narrow the
 * operator's: the entries of `session` none of the operator's covers, as written (empty when all
 * are). Throws on an entry that is none of the forms.
 */
export function beyondOperator(operator: readonly string[], session: readonly string[]): string[] {
	const outer = parseAllowHosts(operator);
	return parseAllowHosts(session)
		.filter((entry) => !outer.some((o) => covers(o, entry)))
		.map((entry) => entry.raw);
}
